"""A container's probes in the API, as kube-apiserver treats them: unset timing fields
defaulted (timeout 1 s, period 10 s, thresholds 1 and 3, an httpGet's path and scheme),
and refused: no handler or two, a negative field, a liveness or startup probe asking
for more than one success."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import JSON
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def refused(api: APIServer, **probes: JSON) -> Invalid:
    pod = b.pod("web")
    pod.spec["containers"][0].update(probes)
    with pytest.raises(Invalid) as err:
        api.create(pod)
    return err.value


def test_unset_probe_fields_are_defaulted(api: APIServer) -> None:
    pod = b.pod("web")
    pod.spec["containers"][0]["livenessProbe"] = {"httpGet": {"port": 80},
                                                  "periodSeconds": 0}
    created = api.create(pod)
    assert created.spec["containers"][0]["livenessProbe"] == {
        "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
        "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}


def test_a_probe_needs_exactly_one_handler(api: APIServer) -> None:
    err = refused(api, readinessProbe={"periodSeconds": 5})
    assert (err.field, err.detail) == ("spec.containers[0].readinessProbe",
                                       "Required value: must specify a handler type")
    err = refused(api, readinessProbe={"exec": {"command": ["true"]},
                                       "tcpSocket": {"port": 80}})
    assert (err.field, err.detail) == ("spec.containers[0].readinessProbe.tcpSocket",
                                       "Forbidden: may not specify more than 1 handler type")


def test_liveness_and_startup_probes_take_one_success(api: APIServer) -> None:
    err = refused(api, startupProbe={"tcpSocket": {"port": 80}, "successThreshold": 2})
    assert (err.field, err.detail) == ("spec.containers[0].startupProbe.successThreshold",
                                       "Invalid value: 2: must be 1")
    pod = b.pod("ready")
    pod.spec["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 80},
                                                   "successThreshold": 2}
    api.create(pod)


def test_a_negative_timing_field_is_refused(api: APIServer) -> None:
    err = refused(api, livenessProbe={"tcpSocket": {"port": 80}, "initialDelaySeconds": -1})
    assert (err.field, err.detail) == ("spec.containers[0].livenessProbe.initialDelaySeconds",
                                       "Invalid value: -1: must be greater than or equal to 0")
