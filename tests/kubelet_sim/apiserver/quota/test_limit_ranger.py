"""The LimitRanger admission plugin on the in-process API server: defaults filled into
new pods' containers, min/max/ratio refusals in its words, claims held to their range."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

from .support import claim, pod


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def limit_range(*items: dict) -> dict:
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
            "spec": {"limits": list(items)}}


def refusal(api: APIServer, body: dict) -> str:
    with pytest.raises(ObjectForbidden) as caught:
        api.create(body)
    return caught.value.why


def test_defaults_fill_what_containers_and_init_containers_leave_out(api: APIServer) -> None:
    api.create(limit_range({"type": "Container", "default": {"cpu": "500m", "memory": "128Mi"},
                            "defaultRequest": {"cpu": "200m"}}))
    body = pod("web", {"memory": "64Mi"})
    body["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    created = api.create(body)
    main, = created.spec["containers"]
    assert main["resources"] == {"requests": {"memory": "64Mi", "cpu": "200m"},
                                 "limits": {"cpu": "500m", "memory": "128Mi"}}
    assert created.spec["initContainers"][0]["resources"] == {
        "requests": {"cpu": "200m", "memory": "128Mi"},
        "limits": {"cpu": "500m", "memory": "128Mi"}}
    assert created.metadata.annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container main; cpu, memory limit for "
        "container main; cpu, memory request for init container setup; cpu, memory limit "
        "for init container setup")
    assert created.status["qosClass"] == "Burstable"  # decided on the defaulted pod


def test_a_range_item_defaults_its_limit_to_max_and_its_request_to_the_limit_then_min(
        api: APIServer) -> None:
    created = api.create(limit_range({"type": "Container", "max": {"cpu": "2"},
                                      "min": {"memory": "1.5Gi"}}))
    item, = created.spec["limits"]
    assert item["default"] == {"cpu": "2"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "1536Mi"}
    assert item["min"] == {"memory": "1536Mi"}  # stored in the canonical spelling


def test_min_max_and_ratio_refusals_are_listed_together(api: APIServer) -> None:
    api.create(limit_range({"type": "Container", "min": {"cpu": "100m"}, "max": {"cpu": "1"},
                            "maxLimitRequestRatio": {"cpu": "4"}}))
    assert refusal(api, pod("x", {"cpu": "50m"}, {"cpu": "2"})) == (
        "[minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per "
        "Container is 1, but limit is 2, cpu max limit to request ratio per Container is 4, "
        "but provided ratio is 40.000000]")
    assert refusal(api, pod("y", {"cpu": "200m"}, {"cpu": "1"})) == (
        "cpu max limit to request ratio per Container is 4, but provided ratio is 5.000000")
    api.create(pod("z", {"cpu": "300m"}, {"cpu": "1"}))


def test_a_pod_item_holds_the_sum_of_the_containers(api: APIServer) -> None:
    api.create(limit_range({"type": "Pod", "max": {"memory": "1Gi"}}))
    body = pod("x", {"memory": "600Mi"}, {"memory": "600Mi"})
    body["spec"]["containers"].append({"name": "side", "image": "nginx", "resources": {
        "limits": {"memory": "600Mi"}, "requests": {"memory": "600Mi"}}})
    assert refusal(api, body) == "maximum memory usage per Pod is 1Gi, but limit is 1200Mi"
    assert refusal(api, pod("y")) == ("maximum memory usage per Pod is 1Gi.  No limit is "
                                      "specified")


def test_claims_are_held_to_the_storage_range_on_create_and_resize(api: APIServer) -> None:
    api.create(limit_range({"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"},
                            "max": {"storage": "5Gi"}}))
    assert refusal(api, claim("small", "500Mi")) == (
        "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi")
    assert refusal(api, claim("big", "10Gi")) == (
        "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi")
    api.create(claim("fits", "2Gi"))


def test_the_refusal_reaches_the_client_as_a_403_naming_the_object(api: APIServer) -> None:
    api.create(limit_range({"type": "Container", "min": {"cpu": "100m"}}))
    with pytest.raises(ObjectForbidden) as caught:
        api.create(pod("x", {"cpu": "10m"}))
    assert caught.value.code == 403
    assert caught.value.worded("pods") == ('pods "x" is forbidden: minimum cpu usage per '
                                           "Container is 100m, but request is 10m")
