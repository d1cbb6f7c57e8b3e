"""The endpointslice and endpoints controllers on an in-process API server: which pods a
Service's endpoints list, their conditions from the pods' Ready condition, the ports
resolved per pod (named target ports), the labels, owner and placeholder of the slices,
and the updates as pods change."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.endpoints import EndpointsController
from kubelet_sim.controllers.endpointslice import EndpointSliceController
from kubelet_sim.testing.fake_clock import FakeClock

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture
def api() -> APIServer:
    api = APIServer(clock=FakeClock())
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", labels={ZONE: "a"}))
    return api


def running_pod(api: APIServer, name: str, ip: str, *, ready: bool = True,
                port_name: str = "http", port: int = 8080, app: str = "web") -> Resource:
    api.create(builders.pod(name, labels={"app": app}, node_name="node-1", containers=[
        builders.container("main", "nginx", [builders.container_port(port, port_name)])]))
    pod = api.get("Pod", name, "default")
    pod.status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                  "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}
    return api.update_status(pod)


def web_service(api: APIServer, **spec: Any) -> Resource:
    spec.setdefault("selector", {"app": "web"})
    spec.setdefault("ports", [{"name": "web", "port": 80, "targetPort": "http"}])
    return api.create({"apiVersion": "v1", "kind": "Service",
                       "metadata": {"name": "web", "labels": {"team": "blue"}}, "spec": spec})


def slices(api: APIServer, service: str = "web") -> list[Resource]:
    return api.list("EndpointSlice", "default",
                    label_selector=f"kubernetes.io/service-name={service}").items


async def settle(api: APIServer) -> None:
    for controller in (EndpointSliceController(api), EndpointsController(api)):
        while await controller.sync_once():
            pass


async def test_a_slice_lists_the_selected_pods_with_their_ready_condition(
        api: APIServer) -> None:
    svc = web_service(api)
    ready = running_pod(api, "web-1", "10.244.1.5")
    running_pod(api, "web-2", "10.244.1.6", ready=False)
    running_pod(api, "other", "10.244.1.7", app="db")
    await settle(api)
    [eps] = slices(api)
    assert eps.name.startswith("web-") and eps.body["addressType"] == "IPv4"
    assert eps.labels == {"team": "blue", "kubernetes.io/service-name": "web",
                          "endpointslice.kubernetes.io/managed-by":
                          "endpointslice-controller.k8s.io"}
    assert eps.metadata.owner_references == [{
        "apiVersion": "v1", "kind": "Service", "name": "web", "uid": svc.metadata.uid,
        "controller": True, "blockOwnerDeletion": True}]
    assert eps.body["ports"] == [{"name": "web", "protocol": "TCP", "port": 8080}]
    assert eps.body["endpoints"] == [
        {"addresses": ["10.244.1.5"], "nodeName": "node-1", "zone": "a",
         "conditions": {"ready": True, "serving": True, "terminating": False},
         "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-1",
                       "uid": ready.metadata.uid}},
        {"addresses": ["10.244.1.6"], "nodeName": "node-1", "zone": "a",
         "conditions": {"ready": False, "serving": False, "terminating": False},
         "targetRef": {"kind": "Pod", "namespace": "default", "name": "web-2",
                       "uid": api.get("Pod", "web-2", "default").metadata.uid}}]


async def test_endpoints_split_ready_and_not_ready_addresses(api: APIServer) -> None:
    web_service(api)
    running_pod(api, "web-1", "10.244.1.5")
    running_pod(api, "web-2", "10.244.1.6", ready=False)
    await settle(api)
    ep = api.get("Endpoints", "web", "default")
    assert ep.labels == {"team": "blue", "endpoints.kubernetes.io/managed-by":
                         "endpoint-controller"}
    [subset] = ep.body["subsets"]
    assert [a["ip"] for a in subset["addresses"]] == ["10.244.1.5"]
    assert [a["ip"] for a in subset["notReadyAddresses"]] == ["10.244.1.6"]
    assert subset["ports"] == [{"name": "web", "port": 8080, "protocol": "TCP"}]


async def test_pods_resolving_a_named_port_differently_get_slices_of_their_own(
        api: APIServer) -> None:
    web_service(api)
    running_pod(api, "web-1", "10.244.1.5", port=8080)
    running_pod(api, "web-2", "10.244.1.6", port=9090)
    running_pod(api, "web-3", "10.244.1.7", port_name="other")  # no port named http
    await settle(api)
    by_port = {s.body["ports"][0]["port"] if s.body["ports"] else None:
               [e["addresses"][0] for e in s.body["endpoints"]] for s in slices(api)}
    assert by_port == {8080: ["10.244.1.5"], 9090: ["10.244.1.6"], None: ["10.244.1.7"]}
    subsets = api.get("Endpoints", "web", "default").body["subsets"]
    assert sorted((s["ports"][0]["port"], s["addresses"][0]["ip"]) for s in subsets) == [
        (8080, "10.244.1.5"), (9090, "10.244.1.6")]


async def test_a_service_selecting_nothing_keeps_an_empty_placeholder_slice(
        api: APIServer) -> None:
    web_service(api)
    await settle(api)
    [eps] = slices(api)
    assert eps.to_dict()["endpoints"] is None and eps.to_dict()["ports"] is None
    assert "subsets" not in api.get("Endpoints", "web", "default").to_dict()


async def test_a_terminating_pod_stays_in_the_slice_as_terminating_and_leaves_endpoints(
        api: APIServer) -> None:
    web_service(api)
    running_pod(api, "web-1", "10.244.1.5")
    await settle(api)
    api.delete("Pod", "web-1", "default")  # scheduled: graceful, it stays a while
    await settle(api)
    [eps] = slices(api)
    assert eps.body["endpoints"][0]["conditions"] == {"ready": False, "serving": True,
                                                      "terminating": True}
    assert "subsets" not in api.get("Endpoints", "web", "default").to_dict()
    api.delete("Pod", "web-1", "default", grace_period_seconds=0)
    await settle(api)
    assert slices(api)[0].body["endpoints"] is None


async def test_services_without_selector_are_left_alone_and_endpoints_go_with_the_service(
        api: APIServer) -> None:
    api.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "manual"},
                "spec": {"ports": [{"port": 80}]}})
    web_service(api)
    running_pod(api, "web-1", "10.244.1.5")
    await settle(api)
    assert slices(api, "manual") == []
    with pytest.raises(NotFound):
        api.get("Endpoints", "manual", "default")
    api.delete("Service", "web", "default")
    await settle(api)
    with pytest.raises(NotFound):
        api.get("Endpoints", "web", "default")
