"""Every controller against the real driver process over gRPC (GrpcCsiClient): provision,
attach, snapshot, restore, expand, then detach and reclaim."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from csi_driver.config import DEFAULT_DRIVER_NAME, TOPOLOGY_NODE_KEY
from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, condition, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.control_plane import cluster_controllers
from kubelet_sim.controllers import ControllerManager
from kubelet_sim.csi.client import GrpcCsiClient
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.utils.trace import Trace
from tests.fixtures.driver_process import DriverProcess

DRIVER = DEFAULT_DRIVER_NAME


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="node-1", args=["--mode", "all"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


class RealCluster:
    def __init__(self, client: GrpcCsiClient) -> None:
        self.clock = FakeClock()
        self.api = APIServer(clock=self.clock)
        self.trace = client.trace
        self.recorder = EventRecorder()
        self.manager: ControllerManager = cluster_controllers(
            self.api, client, DRIVER, clock=self.clock, recorder=self.recorder)
        self.api.create(builders.node("node-1", labels={TOPOLOGY_NODE_KEY: "node-1"},
                                      ready=True))
        self.api.create(builders.csi_node("node-1", [{
            "name": DRIVER, "nodeID": "node-1", "topologyKeys": [TOPOLOGY_NODE_KEY]}]))
        self.api.create(builders.storage_class("csi-mini", DRIVER, allow_volume_expansion=True))
        self.api.create(builders.volume_snapshot_class("snaps", DRIVER))

    async def settle(self) -> None:
        await self.manager.settle()

    def claim(self, name: str) -> Resource:
        return self.api.get("PersistentVolumeClaim", name, "default")

    def calls(self, component: str) -> list[str]:
        return [c.split("/")[-1] for c in self.trace.calls(component=component)]

    def results(self) -> list[str]:
        return [e.result for e in self.trace]

    def set_volumes_in_use(self, names: list[str]) -> None:
        node = self.api.get("Node", "node-1")
        node.status["volumesInUse"] = names
        self.api.update_status(node)


@pytest.fixture
async def cluster(driver: DriverProcess) -> AsyncIterator[RealCluster]:
    client = GrpcCsiClient(driver.endpoint, trace=Trace(), node="controller")
    try:
        yield RealCluster(client)
    finally:
        await client.close()


def snapshot(name: str, claim: str) -> Resource:
    spec: JSON = {"source": {"persistentVolumeClaimName": claim},
                  "volumeSnapshotClassName": "snaps"}
    return new("VolumeSnapshot", name, "default", spec=spec)


async def test_claim_lifecycle_against_the_real_driver(cluster: RealCluster) -> None:
    api = cluster.api
    api.create(builders.persistent_volume_claim("data", storage="10Gi",
                                                storage_class="csi-mini"))
    await cluster.settle()

    claim = cluster.claim("data")
    pv = api.get("PersistentVolume", claim.spec["volumeName"])
    assert claim.status["phase"] == "Bound" and pv.status["phase"] == "Bound"
    assert pv.name == f"pvc-{claim.metadata.uid}"
    assert claim.status["capacity"] == {"storage": "10Gi"}
    assert pv.spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": TOPOLOGY_NODE_KEY, "operator": "In", "values": ["node-1"]}]}]
    handle = pv.spec["csi"]["volumeHandle"]

    # attach
    api.create(builders.pod("app", volumes=[builders.pvc_volume("vol", "data")]))
    await cluster.settle()
    assert api.get("Pod", "app", "default").spec["nodeName"] == "node-1"
    (va,) = api.list("VolumeAttachment").items
    assert va.status["attached"] is True
    assert va.status["attachmentMetadata"]  # the driver's publish context
    assert cluster.calls("external-attacher")[-1] == "ControllerPublishVolume"
    unique = f"kubernetes.io/csi/{DRIVER}^{handle}"
    cluster.set_volumes_in_use([unique])

    # snapshot, and a claim restored from it
    vs = api.create(snapshot("snap", "data"))
    await cluster.settle()
    status = api.get("VolumeSnapshot", "snap", "default").status
    assert status["readyToUse"] is True and status["restoreSize"] == "10Gi"
    content = api.get("VolumeSnapshotContent", f"snapcontent-{vs.metadata.uid}")
    assert content.status["snapshotHandle"]
    api.create(builders.persistent_volume_claim(
        "restored", storage="10Gi", storage_class="csi-mini", data_source={
            "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"}))
    await cluster.settle()
    assert cluster.claim("restored").status["phase"] == "Bound"

    # expand: the controller part, then the node part is pending for the kubelet
    claim = cluster.claim("data")
    claim.spec["resources"]["requests"]["storage"] = "20Gi"
    api.update(claim)
    await cluster.settle()
    claim = cluster.claim("data")
    assert api.get("PersistentVolume", claim.spec["volumeName"]).spec["capacity"] == {
        "storage": "20Gi"}
    pending = condition(claim, "FileSystemResizePending")  # a mount volume needs the node
    assert pending is not None and pending["status"] == "True"
    assert claim.status["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert cluster.calls("csi-resizer")[-1] == "ControllerExpandVolume"

    # delete: detach only after the kubelet unmounted, DeleteVolume only after detach
    api.delete("VolumeSnapshot", "snap", "default")
    api.delete("Pod", "app", "default", grace_period_seconds=0)
    api.delete("PersistentVolumeClaim", "data", "default")
    await cluster.settle()
    assert len(api.list("VolumeAttachment").items) == 1
    assert "DeleteVolume" not in cluster.calls("external-provisioner")

    cluster.set_volumes_in_use([])
    await cluster.settle()

    assert api.list("VolumeAttachment").items == []
    assert handle not in [p.spec["csi"]["volumeHandle"]
                          for p in api.list("PersistentVolume").items]
    order = [e.call.split("/")[-1] for e in cluster.trace
             if e.call.endswith(("ControllerUnpublishVolume", "DeleteVolume",
                                 "DeleteSnapshot"))]
    assert order == ["DeleteSnapshot", "ControllerUnpublishVolume", "DeleteVolume"]
    assert all(r == "OK" for r in cluster.results()), cluster.results()
    callers = {(e.call.split("/")[-1], e.component) for e in cluster.trace}
    assert {("CreateVolume", "external-provisioner"), ("DeleteVolume", "external-provisioner"),
            ("ControllerPublishVolume", "external-attacher"),
            ("ControllerUnpublishVolume", "external-attacher"),
            ("CreateSnapshot", "csi-snapshotter"), ("DeleteSnapshot", "csi-snapshotter"),
            ("ControllerExpandVolume", "csi-resizer")} <= callers
    assert {component for _, component in callers} == {
        "external-provisioner", "external-attacher", "csi-snapshotter", "csi-resizer"}


@pytest.fixture(scope="module")
def no_attach_driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="node-1", args=["--mode", "all", "--no-attach-required"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


async def test_driver_without_attach_takes_the_trivial_path(
    no_attach_driver: DriverProcess,
) -> None:
    client = GrpcCsiClient(no_attach_driver.endpoint, trace=Trace(), node="controller")
    try:
        cluster = RealCluster(client)
        cluster.api.create(builders.csi_driver(DRIVER, attach_required=False))
        cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                            storage_class="csi-mini"))
        cluster.api.create(builders.pod("app", volumes=[builders.pvc_volume("vol", "data")]))

        await cluster.settle()

        assert cluster.claim("data").status["phase"] == "Bound"
        assert cluster.api.get("Pod", "app", "default").spec["nodeName"] == "node-1"
        assert cluster.api.list("VolumeAttachment").items == []
        assert cluster.calls("external-attacher") == []
    finally:
        await client.close()
