"""The storage components over the wire: the scheduler, the PersistentVolume binder,
storage protection, the attach/detach controller, the snapshot controller and the CSI
sidecars (provisioner, storage capacity, attacher, snapshotter, resizer) each built on an
HttpKubeClient to a `kubelet-sim apiserver` process — no API server object in the test
process — with the real CSI driver process behind the sidecars. A claim of a
WaitForFirstConsumer class used by a pod, for a driver that publishes its storage
capacity: the capacity is published and the pod scheduled, the volume provisioned
through the driver, claim and volume bound, the volume attached; then a snapshot of it
is taken and it is expanded."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import pytest

from csi_driver.config import DEFAULT_DRIVER_NAME, TOPOLOGY_NODE_KEY
from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, condition, new
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.controllers import ControllerManager
from kubelet_sim.controllers.attach_detach import AttachDetachController
from kubelet_sim.controllers.binder import VolumeBinder
from kubelet_sim.controllers.protection import StorageProtection
from kubelet_sim.controllers.scheduler import Scheduler
from kubelet_sim.controllers.snapshot_controller import SnapshotController
from kubelet_sim.csi.client import GrpcCsiClient
from kubelet_sim.sidecars.attacher import ExternalAttacher
from kubelet_sim.sidecars.provisioner import ExternalProvisioner
from kubelet_sim.sidecars.resizer import ExternalResizer
from kubelet_sim.sidecars.snapshotter import CsiSnapshotter
from kubelet_sim.sidecars.storage_capacity import StorageCapacityController
from kubelet_sim.utils.trace import Trace
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.fixtures.driver_process import DriverProcess

DRIVER = DEFAULT_DRIVER_NAME
NODE = "node-1"
GUARD_SECONDS = 60.0  # only a guard against hangs: every wait ends on its condition


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id=NODE, args=["--mode", "all"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@dataclass
class Components:
    client: HttpKubeClient
    trace: Trace
    manager: ControllerManager
    recorder: EventRecorder

    async def eventually(self, read: Callable[[], Awaitable[Resource]],
                         check: Callable[[Resource], bool], what: str) -> Resource:
        """The object ``read`` returns once ``check`` holds (read again until then)."""
        deadline = time.monotonic() + GUARD_SECONDS
        while True:
            try:
                obj = await read()
                if check(obj):
                    return obj
            except NotFound:
                pass
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            await asyncio.sleep(0.05)

    def calls(self, component: str) -> list[str]:
        return [c.split("/")[-1] for c in self.trace.calls(component=component)]


@pytest.fixture
async def components(server: ApiServerProcess,
                     driver: DriverProcess) -> AsyncIterator[Components]:
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    csi = GrpcCsiClient(driver.endpoint, trace=Trace(), node="controller")
    recorder = EventRecorder(client)
    common: JSON = {"recorder": recorder}
    manager = ControllerManager([
        Scheduler(client, **common),
        VolumeBinder(client, **common),
        StorageProtection(client, **common),
        ExternalProvisioner(client, csi, DRIVER, **common),
        StorageCapacityController(client, csi, DRIVER, **common),
        AttachDetachController(client, **common),
        ExternalAttacher(client, csi, DRIVER, **common),
        SnapshotController(client, **common),
        CsiSnapshotter(client, csi, DRIVER, **common),
        ExternalResizer(client, csi, DRIVER, **common),
    ])
    feed = feed_source(client)
    assert isinstance(feed, ClientFeed)  # the components' cache fed over their client
    manager.start()
    try:
        await feed.wait_synced()  # the kinds the run loops asked for
        yield Components(client, csi.trace, manager, recorder)
    finally:
        await manager.stop()
        await recorder.flush()
        await feed.stop()
        await client.close()
        await csi.close()


async def test_a_pod_and_its_wait_for_first_consumer_claim_get_node_volume_and_attachment(
        components: Components) -> None:
    client = components.client
    await client.create(builders.node(NODE, labels={TOPOLOGY_NODE_KEY: NODE}))
    node = await client.get("Node", NODE)
    node.status["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]
    await client.update_status(node)
    await client.create(builders.csi_node(NODE, [{
        "name": DRIVER, "nodeID": NODE, "topologyKeys": [TOPOLOGY_NODE_KEY]}]))
    capacity_driver = builders.csi_driver(DRIVER)
    capacity_driver.spec["storageCapacity"] = True  # the scheduler checks published capacity
    await client.create(capacity_driver)
    await client.create(builders.storage_class("wffc", DRIVER, allow_volume_expansion=True,
                                               volume_binding_mode="WaitForFirstConsumer"))
    await client.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                         storage_class="wffc"))
    await client.create(builders.pod("app", volumes=[builders.pvc_volume("vol", "data")]))

    await components.eventually(
        lambda: client.get("Pod", "app", "default"),
        lambda p: p.spec.get("nodeName") == NODE
        and (condition(p, "PodScheduled") or {}).get("status") == "True",
        "the pod bound to the node and PodScheduled")
    (capacity,) = (await client.list("CSIStorageCapacity", "kube-system")).items
    assert capacity.body["storageClassName"] == "wffc"
    assert capacity.body["nodeTopology"] == {"matchLabels": {TOPOLOGY_NODE_KEY: NODE}}

    claim = await components.eventually(
        lambda: client.get("PersistentVolumeClaim", "data", "default"),
        lambda c: c.status.get("phase") == "Bound", "the claim bound")
    assert claim.metadata.annotations["volume.kubernetes.io/selected-node"] == NODE
    pv = await components.eventually(
        lambda: client.get("PersistentVolume", claim.spec["volumeName"]),
        lambda v: v.status.get("phase") == "Bound", "the volume bound")
    assert pv.name == f"pvc-{claim.metadata.uid}"
    assert pv.spec["claimRef"]["uid"] == claim.metadata.uid
    assert pv.spec["nodeAffinity"]["required"]["nodeSelectorTerms"] == [{"matchExpressions": [
        {"key": TOPOLOGY_NODE_KEY, "operator": "In", "values": [NODE]}]}]
    assert "CreateVolume" in components.calls("external-provisioner")

    handle = pv.spec["csi"]["volumeHandle"]
    unique = f"kubernetes.io/csi/{DRIVER}^{handle}"

    async def the_attachment() -> Resource:
        attachments = (await client.list("VolumeAttachment")).items
        if not attachments:
            raise NotFound("VolumeAttachment", "")
        (va,) = attachments
        return va

    va = await components.eventually(the_attachment,
                                     lambda a: a.status.get("attached") is True,
                                     "the volume attached")
    assert (va.spec["nodeName"], va.spec["source"]["persistentVolumeName"]) == (NODE, pv.name)
    assert va.status["attachmentMetadata"]  # the driver's publish context
    assert "ControllerPublishVolume" in components.calls("external-attacher")
    await components.eventually(
        lambda: client.get("Node", NODE),
        lambda n: [e["name"] for e in n.status.get("volumesAttached") or []] == [unique],
        "the node reporting the volume attached")

    # a snapshot of the claim, through the snapshot controller and csi-snapshotter
    await client.create(builders.volume_snapshot_class("snaps", DRIVER))
    await client.create(new("VolumeSnapshot", "snap", "default", spec={
        "source": {"persistentVolumeClaimName": "data"}, "volumeSnapshotClassName": "snaps"}))
    snapshot = await components.eventually(
        lambda: client.get("VolumeSnapshot", "snap", "default"),
        lambda s: s.status.get("readyToUse") is True, "the snapshot ready to use")
    assert snapshot.status["restoreSize"] == "1Gi"
    content = await client.get("VolumeSnapshotContent",
                               snapshot.status["boundVolumeSnapshotContentName"])
    assert content.status["snapshotHandle"]
    assert "CreateSnapshot" in components.calls("csi-snapshotter")

    # expanded: ControllerExpandVolume through csi-resizer, then the kubelet's turn
    await client.patch("PersistentVolumeClaim", "data", {
        "spec": {"resources": {"requests": {"storage": "2Gi"}}}}, "default")
    claim = await components.eventually(
        lambda: client.get("PersistentVolumeClaim", "data", "default"),
        lambda c: c.status.get("allocatedResourceStatuses") == {"storage": "NodeResizePending"},
        "the claim waiting for the node's part of the expansion")
    assert claim.status["allocatedResources"] == {"storage": "2Gi"}
    assert (await client.get("PersistentVolume", pv.name)).spec["capacity"] == {
        "storage": "2Gi"}
    assert "ControllerExpandVolume" in components.calls("csi-resizer")
