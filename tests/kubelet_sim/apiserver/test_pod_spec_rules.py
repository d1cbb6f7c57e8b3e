"""What the API refuses in a pod's spec and its updates, as kube-apiserver's pod
validation: a restartPolicy on a regular container, an activeDeadlineSeconds raised or
removed, a change outside the fields a pod update may touch."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import Invalid
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def test_a_regular_container_may_not_set_a_restart_policy(api: APIServer) -> None:
    pod = b.pod("web")
    pod.spec["containers"][0]["restartPolicy"] = "Always"
    with pytest.raises(Invalid) as err:
        api.create(pod)
    assert err.value.field == "spec.containers[0].restartPolicy"
    assert err.value.detail == "Forbidden: may not be set for non-init containers"


def test_an_init_container_may_only_set_restart_policy_always(api: APIServer) -> None:
    pod = b.pod("web")
    pod.spec["initContainers"] = [{"name": "proxy", "image": "envoy", "restartPolicy": "Always"}]
    api.create(pod)
    pod = b.pod("web2")
    pod.spec["initContainers"] = [{"name": "proxy", "image": "envoy",
                                   "restartPolicy": "OnFailure"}]
    with pytest.raises(Invalid) as err:
        api.create(pod)
    assert err.value.field == "spec.initContainers[0].restartPolicy"
    assert err.value.detail == 'Unsupported value: "OnFailure": supported values: "Always"'


def test_active_deadline_may_be_set_and_lowered_but_not_raised_or_removed(
        api: APIServer) -> None:
    pod = api.create(b.pod("web"))
    pod.spec["activeDeadlineSeconds"] = 30
    pod = api.update(pod)
    pod.spec["activeDeadlineSeconds"] = 10
    pod = api.update(pod)
    pod.spec["activeDeadlineSeconds"] = 20
    with pytest.raises(Invalid) as err:
        api.update(pod)
    assert err.value.detail == "Invalid value: 20: must be less than or equal to previous value"
    del pod.spec["activeDeadlineSeconds"]
    with pytest.raises(Invalid) as err:
        api.update(pod)
    assert "must not update from a positive integer to nil value" in err.value.detail


def test_init_container_images_may_change_but_their_commands_may_not(api: APIServer) -> None:
    pod = b.pod("web")
    pod.spec["initContainers"] = [{"name": "init", "image": "busybox:1"}]
    pod = api.create(pod)
    pod.spec["initContainers"][0]["image"] = "busybox:2"
    pod = api.update(pod)
    pod.spec["initContainers"][0]["command"] = ["true"]
    with pytest.raises(Invalid) as err:
        api.update(pod)
    assert err.value.detail.startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`, "
        "`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations`")
