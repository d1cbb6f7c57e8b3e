"""A small cluster for controller tests: API server on a fake clock, two Ready nodes with
the driver registered (CSINode, topology labels), the in-memory controller driver, and
every controller settled deterministically."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.control_plane import cluster_controllers
from kubelet_sim.controllers import ControllerManager
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.testing.fake_controller import FakeControllerDriver
from kubelet_sim.testing.fake_csi import FakeCsiClient
from kubelet_sim.utils.trace import Trace

DRIVER = "fake.csi.example.com"
TOPOLOGY_KEY = "topology.fake.csi.example.com/zone"
ZONES = {"node-1": "zone-a", "node-2": "zone-b"}


@dataclass
class Cluster:
    api: APIServer
    clock: FakeClock
    driver: FakeControllerDriver
    trace: Trace
    recorder: EventRecorder
    manager: ControllerManager = field(init=False)

    def __post_init__(self) -> None:
        client = FakeCsiClient(self.driver, trace=self.trace, node="controller")
        self.manager = cluster_controllers(self.api, client, DRIVER, clock=self.clock,
                                           recorder=self.recorder)

    async def settle(self) -> None:
        await self.manager.settle()

    async def retry_after_backoff(self, seconds: float = 200.0) -> None:
        """Let every backoff expire, then settle again."""
        self.clock.advance(seconds)
        await self.settle()

    # -- objects ---------------------------------------------------------------------------

    def storage_class(self, name: str = "csi", **kwargs: Any) -> Resource:
        return self.api.create(builders.storage_class(name, kwargs.pop("provisioner", DRIVER),
                                                      **kwargs))

    def claim(self, name: str = "data", storage: str = "1Gi", storage_class: str = "csi",
              **kwargs: Any) -> Resource:
        return self.api.create(builders.persistent_volume_claim(
            name, storage=storage, storage_class=storage_class, **kwargs))

    def pod(self, name: str = "app", claim: str | None = "data",
            node_name: str | None = None) -> Resource:
        volumes = [builders.pvc_volume("vol", claim)] if claim else None
        return self.api.create(builders.pod(name, volumes=volumes, node_name=node_name))

    def get(self, kind: str, name: str, namespace: str = "") -> Resource:
        if kind in ("PersistentVolumeClaim", "Pod", "VolumeSnapshot") and not namespace:
            namespace = "default"
        return self.api.get(kind, name, namespace)

    def names(self, kind: str) -> list[str]:
        return [o.name for o in self.api.list(kind).items]

    def calls(self, component: str | None = None) -> list[str]:
        return [c.removeprefix("csi.") for c in self.trace.calls(component=component)]

    def requests(self, method: str) -> list[Any]:
        return self.driver.requests_of(method)

    def events(self, kind: str, name: str, namespace: str = "default") -> list[str]:
        return [f"{e.reason}: {e.message}" for e in self.recorder.for_object(kind, name,
                                                                               namespace)]

    def set_volumes_in_use(self, node: str, names: list[str]) -> None:
        obj = self.api.get("Node", node)
        obj.status["volumesInUse"] = names
        self.api.update_status(obj)

    def csi_node(self, node: str) -> JSON:
        return {"name": DRIVER, "nodeID": f"{node}-id", "topologyKeys": [TOPOLOGY_KEY]}


@pytest.fixture
def cluster() -> Cluster:
    clock = FakeClock()
    api = APIServer(clock=clock)
    driver = FakeControllerDriver(name=DRIVER, node_id="controller", topology_key=TOPOLOGY_KEY)
    c = Cluster(api, clock, driver, Trace(), EventRecorder())
    for node, zone in ZONES.items():
        api.create(builders.node(node, labels={TOPOLOGY_KEY: zone,
                                               "kubernetes.io/hostname": node}, ready=True))
        api.create(builders.csi_node(node, [c.csi_node(node)]))
    return c
