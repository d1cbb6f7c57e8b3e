"""The namespace controller, the garbage collector, the endpoint controllers and the
network engines run over an HttpKubeClient to a `kubelet-sim apiserver` process: no
APIServer object in this process, every read and write over HTTPS (one apiserver process
for the module)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import pytest
import yaml

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, new
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.writes import get_or_none
from kubelet_sim.controllers.base import Controller, ControllerManager
from kubelet_sim.controllers.endpoints import EndpointsController
from kubelet_sim.controllers.endpointslice import EndpointSliceController
from kubelet_sim.controllers.garbage_collector import GarbageCollector
from kubelet_sim.controllers.namespace import NamespaceController
from kubelet_sim.network.host_gw import ClusterNetwork
from kubelet_sim.network.netpol import NetworkPolicyEngine
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.fixtures.up_process import PROJECT_ROOT


@pytest.fixture
async def client(server: ApiServerProcess) -> AsyncIterator[HttpKubeClient]:
    http = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    yield http
    feed = feed_source(http)
    assert isinstance(feed, ClientFeed)
    await feed.stop()
    await http.close()


@contextlib.asynccontextmanager
async def running(*controllers: Controller) -> AsyncIterator[ControllerManager]:
    manager = ControllerManager(list(controllers))
    manager.start()
    try:
        yield manager
    finally:
        await manager.stop()
        for controller in controllers:
            await controller.recorder.flush()


async def eventually(check: Callable[[], Awaitable[bool]], what: str,
                     timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def owned_by(owner: Resource) -> list[JSON]:
    return [{"apiVersion": owner.api_version, "kind": owner.kind, "name": owner.name,
             "uid": owner.metadata.uid, "blockOwnerDeletion": True}]


async def test_a_deleted_namespace_loses_its_contents_custom_ones_too_and_is_finalized(
        client: HttpKubeClient) -> None:
    crd = yaml.safe_load((PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml").read_text())
    await client.create(Resource.from_dict(crd))
    await client.served_kinds()  # the Widget kind known here, to build one
    await client.create(builders.namespace("doomed"))
    await client.create(new("ConfigMap", "settings", "doomed", data={"k": "v"}))
    await client.create(builders.secret("token", "doomed", {"t": "c2VjcmV0"}))
    await client.create(Resource.from_dict({
        "apiVersion": "stable.example.com/v1", "kind": "Widget",
        "metadata": {"name": "w", "namespace": "doomed"}, "spec": {"size": "1Gi"}}))
    await client.delete("Namespace", "doomed")
    async with running(NamespaceController(client)):
        async def gone() -> bool:
            return await get_or_none(client, "Namespace", "doomed") is None
        await eventually(gone, "the namespace finalized and gone")
    for kind in ("ConfigMap", "Secret", "Widget.stable.example.com"):
        assert (await client.list(kind, "doomed")).items == []


async def test_an_owner_deleted_in_the_background_or_foreground_takes_its_dependents(
        client: HttpKubeClient) -> None:
    await client.create(builders.namespace("owners"))
    back = await client.create(new("ConfigMap", "back", "owners"))
    fore = await client.create(new("ConfigMap", "fore", "owners"))
    for i in range(2):
        dep = new("ConfigMap", f"back-dep-{i}", "owners")
        dep.metadata.owner_references = owned_by(back)
        await client.create(dep)
    blocking = new("Secret", "fore-dep", "owners")
    blocking.metadata.owner_references = owned_by(fore)
    await client.create(blocking)
    async with running(GarbageCollector(client)):
        await client.delete("ConfigMap", "back", "owners", propagation_policy="Background")
        waiting = await client.delete("ConfigMap", "fore", "owners",
                                      propagation_policy="Foreground")
        assert waiting is not None and waiting.is_terminating  # held for its dependent

        async def collected() -> bool:
            left = [c.name for c in (await client.list("ConfigMap", "owners")).items]
            secrets = (await client.list("Secret", "owners")).items
            return not [n for n in left if n != "kube-root-ca.crt"] and not secrets
        await eventually(collected, "the dependents, then the foreground owner, gone")


async def test_a_service_gets_its_endpoint_slice_and_endpoints_and_routes_are_read_over_https(
        client: HttpKubeClient) -> None:
    await client.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1"))
    await client.create(builders.node("node-2", "10.244.2.0/24", "192.168.0.2"))
    await client.create(new("Service", "web", "default", spec={
        "selector": {"app": "web"}, "ports": [{"name": "http", "port": 80,
                                               "targetPort": 8080, "protocol": "TCP"}]}))
    await client.create(builders.pod("web-1", labels={"app": "web"}, containers=[
        builders.container("main", ports=[builders.container_port(8080, "http")])]))
    await client.bind("web-1", "default", "node-1")
    pod = await client.get("Pod", "web-1", "default")
    now = format_time(datetime.now(UTC))
    pod.status.update(phase="Running", podIP="10.244.1.5", podIPs=[{"ip": "10.244.1.5"}],
                      conditions=[{"type": "Ready", "status": "True",
                                   "lastTransitionTime": now}])
    await client.update_status(pod)
    async with running(EndpointSliceController(client), EndpointsController(client)):
        async def sliced() -> bool:
            slices = (await client.list("EndpointSlice", "default",
                                        label_selector="kubernetes.io/service-name=web")).items
            return [a for s in slices for e in s.body.get("endpoints") or []
                    for a in e.get("addresses") or []] == ["10.244.1.5"]
        await eventually(sliced, "the Service's EndpointSlice with the pod's address")

        async def endpoints() -> bool:
            ep = await get_or_none(client, "Endpoints", "web", "default")
            return ep is not None and [a["ip"] for s in ep.body.get("subsets") or []
                                       for a in s.get("addresses") or []] == ["10.244.1.5"]
        await eventually(endpoints, "the Service's Endpoints")
    network = ClusterNetwork(client)

    async def routed() -> bool:
        try:
            return [str(r) for r in network.route_table("node-2")] == [
                "10.244.2.0/24 local", "10.244.1.0/24 via 192.168.0.1"]
        except NotFound:
            return False
    await eventually(routed, "node-2's host-gw routes from the cached Nodes")
    assert network.reach("10.244.2.9", "10.244.1.5", 8080).route.next_hop == "192.168.0.1"
    assert NetworkPolicyEngine(client).may_connect("10.244.2.9", "10.244.1.5", 8080).allowed
