"""The `kubernetes` Service the API server keeps for itself: the first IP of the range,
port 443 to the API server's port, its Endpoints and EndpointSlice, and put back when
deleted."""

from __future__ import annotations

import asyncio

from kubelet_sim.api.errors import NotFound
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.services.kubernetes_service import (
    ensure_kubernetes_service,
    keep_kubernetes_service,
)
from kubelet_sim.testing.fake_clock import FakeClock


def test_the_kubernetes_service_points_at_the_api_server() -> None:
    api = APIServer(clock=FakeClock(), service_cluster_ip_range="10.100.0.0/16")
    ensure_kubernetes_service(api, "127.0.0.1", 6443)
    svc = api.get("Service", "kubernetes", "default")
    assert svc.spec["clusterIP"] == "10.100.0.1"
    assert svc.spec["ports"] == [{"name": "https", "port": 443, "protocol": "TCP",
                                  "targetPort": 6443}]
    assert svc.labels == {"component": "apiserver", "provider": "kubernetes"}
    assert api.get("Endpoints", "kubernetes", "default").body["subsets"] == [
        {"addresses": [{"ip": "127.0.0.1"}],
         "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}]
    eps = api.get("EndpointSlice", "kubernetes", "default")
    assert eps.labels == {"kubernetes.io/service-name": "kubernetes"}
    assert eps.body["endpoints"] == [{"addresses": ["127.0.0.1"],
                                      "conditions": {"ready": True}}]


def test_a_new_port_moves_the_target_port_and_the_endpoints() -> None:
    api = APIServer(clock=FakeClock())
    ensure_kubernetes_service(api, "127.0.0.1", 6443)
    ensure_kubernetes_service(api, "127.0.0.1", 7443)
    assert api.get("Service", "kubernetes", "default").spec["ports"][0]["targetPort"] == 7443
    assert api.get("EndpointSlice", "kubernetes", "default").body["ports"][0]["port"] == 7443


async def test_a_deleted_kubernetes_service_comes_back() -> None:
    api = APIServer(clock=FakeClock())
    ensure_kubernetes_service(api, "127.0.0.1", 6443)
    api.delete("Service", "kubernetes", "default")
    stop = asyncio.Event()
    keeper = asyncio.create_task(keep_kubernetes_service(api, "127.0.0.1", 6443, stop,
                                                         period=0.01))
    for _ in range(500):
        try:
            back = api.get("Service", "kubernetes", "default")
            break
        except NotFound:
            await asyncio.sleep(0.01)
    stop.set()
    await keeper
    assert back.spec["clusterIP"] == "10.96.0.1"
