"""CSI conformance cases about one volume's life (see :mod:`kubelet_sim.conformance.csi`):
expansion while unused, a snapshot outliving its source, a volume used in the wrong mode,
and the capacity the driver reports."""

from __future__ import annotations

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.pvc_resize import FS_RESIZE_PENDING
from kubelet_sim.conformance.csi_run import (
    CsiRun,
    CtrlRpc,
    NodeRpc,
    read_token,
    write_token,
)

SNAPSHOT_GROUP = "snapshot.storage.k8s.io"


async def expansion_offline(run: CsiRun, ns: str) -> None:
    """A claim grown while no pod uses it: ControllerExpandVolume at once; a node that
    expands too finishes when the next pod starts (e2e volume_expand, offline)."""
    run.needs_controller(CtrlRpc.EXPAND_VOLUME, "volume expansion")
    sc = run.storage_class(f"{ns}-sc", allow_volume_expansion=True)
    node = run.nodes[0]
    run.claim(ns, "grow", sc, size="1Gi")
    first = await run.running_pod(ns, "before", ["grow"], node)
    token = write_token(run.published(first, "grow"))
    await run.delete("Pod", "before", ns)
    mark = len(run.cluster.trace.events)
    claim = run.api.get("PersistentVolumeClaim", "grow", ns)
    claim.spec["resources"]["requests"]["storage"] = "2Gi"
    run.api.update(claim)
    await run.cluster.settle()
    expands = [e.result for e in run.calls("csi.Controller/ControllerExpandVolume", mark)]
    assert expands and expands[-1] == "OK", f"ControllerExpandVolume: {expands or 'not called'}"
    pv = run.claim_pv(ns, "grow")
    assert pv.spec["capacity"]["storage"] == "2Gi", f"PV capacity {pv.spec['capacity']}"
    status = run.api.get("PersistentVolumeClaim", "grow", ns).status
    conditions = [c.get("type") for c in status.get("conditions", [])]
    if NodeRpc.EXPAND_VOLUME in run.node_rpcs:
        assert not run.calls("csi.Node/NodeExpandVolume", mark), "node expansion with no pod"
        assert FS_RESIZE_PENDING in conditions, \
            f"no {FS_RESIZE_PENDING} while the node still has to expand ({status})"
    else:
        assert status.get("capacity", {}).get("storage") == "2Gi", f"claim status {status}"
    second = await run.running_pod(ns, "after", ["grow"], node)
    status = run.api.get("PersistentVolumeClaim", "grow", ns).status
    assert status.get("capacity", {}).get("storage") == "2Gi", \
        f"claim capacity {status.get('capacity')} (conditions {status.get('conditions')})"
    assert FS_RESIZE_PENDING not in [c.get("type") for c in status.get("conditions", [])]
    assert read_token(run.published(second, "grow")) == token, "the expansion lost the data"
    await run.delete("Pod", "after", ns)
    await run.delete("PersistentVolumeClaim", "grow", ns)
    await run.delete("StorageClass", sc)


async def snapshot_outlives_source(run: CsiRun, ns: str) -> None:
    """The source claim deleted while a snapshot of it exists: the snapshot still
    restores; deleting the snapshot (deletionPolicy Delete) removes its content and
    calls DeleteSnapshot with its handle (e2e snapshottable)."""
    run.needs_controller(CtrlRpc.CREATE_DELETE_SNAPSHOT, "snapshots")
    sc = run.storage_class(f"{ns}-sc")
    snap_class = f"{ns}-snap"
    run.api.create(builders.volume_snapshot_class(snap_class, run.driver,
                                                  deletion_policy="Delete"))
    run.claim(ns, "source", sc)
    writer = await run.running_pod(ns, "writer", ["source"], run.nodes[0])
    token = write_token(run.published(writer, "source"))
    await run.delete("Pod", "writer", ns)
    run.api.create(builders.volume_snapshot("snap", ns, source_pvc="source",
                                            snapshot_class=snap_class))
    await run.cluster.settle()
    snap = run.api.get("VolumeSnapshot", "snap", ns)
    assert snap.status.get("readyToUse") is True, f"snapshot status {snap.status}"
    content_name = str(snap.status.get("boundVolumeSnapshotContentName"))
    handle = run.api.get("VolumeSnapshotContent", content_name).status.get("snapshotHandle")
    await run.delete("PersistentVolumeClaim", "source", ns)
    run.claim(ns, "restored", sc, data_source={
        "apiGroup": SNAPSHOT_GROUP, "kind": "VolumeSnapshot", "name": "snap"})
    reader = await run.running_pod(ns, "reader", ["restored"], run.nodes[0])
    assert read_token(run.published(reader, "restored")) == token, \
        "the restore after the source claim went lost the data"
    mark = len(run.cluster.trace.events)
    await run.delete("VolumeSnapshot", "snap", ns)
    try:
        run.api.get("VolumeSnapshotContent", content_name)
        raise AssertionError(f"VolumeSnapshotContent {content_name} outlived its snapshot")
    except NotFound:
        pass
    deletes = [(e.request.get("snapshot_id"), e.result)
               for e in run.calls("csi.Controller/DeleteSnapshot", mark)]
    assert (handle, "OK") in deletes, f"DeleteSnapshot of {handle}: {deletes or 'not called'}"
    await run.delete("Pod", "reader", ns)
    await run.delete("PersistentVolumeClaim", "restored", ns)
    await run.delete("VolumeSnapshotClass", snap_class)
    await run.delete("StorageClass", sc)


async def volume_mode_mismatch(run: CsiRun, ns: str) -> None:
    """A Filesystem claim named in a container's volumeDevices: the pod does not start and
    a FailedMount event says why (the kubelet refuses it as Kubernetes does, e2e
    volumemode); the same claim mounted as a file system then runs."""
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    sc = run.storage_class(f"{ns}-sc")
    node = run.nodes[0]
    run.claim(ns, "fs", sc, volume_mode="Filesystem")
    misuse = run.pod(ns, "misuse", ["fs"], node, containers=[
        {"name": "main", "image": "registry.k8s.io/pause:3.9",
         "volumeDevices": [{"name": "fs", "devicePath": "/dev/xvda"}]}])
    await run.cluster.settle()
    phase = run.api.get("Pod", "misuse", ns).status.get("phase")
    assert phase == "Pending", f"a pod using a Filesystem claim as a device is {phase}"
    events = run.events("Pod", "misuse", ns)
    want = "has volumeMode Filesystem, but is specified in volumeDevices"
    assert any(e.startswith("FailedMount:") and want in e for e in events), \
        f"no FailedMount event saying {want!r}: {events}"
    assert not [e for e in run.calls("csi.Node/NodePublishVolume")
                if misuse.metadata.uid in str(e.request.get("target_path", ""))], \
        "the kubelet asked the driver to publish a volume used in the wrong mode"
    await run.delete("Pod", "misuse", ns)
    await run.running_pod(ns, "proper", ["fs"], node)
    await run.delete("Pod", "proper", ns)
    await run.delete("PersistentVolumeClaim", "fs", ns)
    await run.delete("StorageClass", sc)


async def capacity(run: CsiRun, ns: str) -> None:
    """GetCapacity before and after a volume is provisioned: well formed, and a finite
    capacity does not grow. (The CSIStorageCapacity objects are ``capacity/scheduling``'s,
    in :mod:`kubelet_sim.conformance.csi_cases_capacity`.)"""
    run.needs_controller(CtrlRpc.GET_CAPACITY, "capacity reporting")
    run.needs_controller(CtrlRpc.CREATE_DELETE_VOLUME, "dynamic provisioning")
    node = run.nodes[0]
    request = csi_pb2.GetCapacityRequest(
        volume_capabilities=[csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(),
            access_mode=csi_pb2.VolumeCapability.AccessMode(
                mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))],
        parameters=run.target.parameters)
    if run.topology:
        request.accessible_topology.segments.update(run.node_topology(node))
    before = await run.controller_call(request, csi_pb2.GetCapacityResponse)
    assert before.available_capacity >= 0, f"available_capacity {before.available_capacity}"
    sc = run.storage_class(f"{ns}-sc")
    run.claim(ns, "taken", sc, size="1Gi")
    await run.running_pod(ns, "user", ["taken"], node)
    after = await run.controller_call(request, csi_pb2.GetCapacityResponse)
    assert 0 <= after.available_capacity <= before.available_capacity, \
        f"available_capacity went from {before.available_capacity} to " \
        f"{after.available_capacity} after a volume was provisioned"
    for answer in (before, after):
        if answer.HasField("maximum_volume_size"):
            assert answer.maximum_volume_size.value >= 0, str(answer)
    await run.delete("Pod", "user", ns)
    await run.delete("PersistentVolumeClaim", "taken", ns)
    await run.delete("StorageClass", sc)
