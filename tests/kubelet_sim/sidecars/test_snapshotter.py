"""snapshot-controller + csi-snapshotter: names, status, parameters, deletion, pre-provisioned
contents, and restoring a claim from a snapshot."""

from __future__ import annotations

import grpc
import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.controllers.snapshot_controller import FIN_CONTENT, FIN_PVC_SOURCE
from tests.kubelet_sim.controller_cluster import DRIVER, Cluster


@pytest.fixture
async def bound(cluster: Cluster) -> Cluster:
    cluster.storage_class()
    cluster.claim(storage="10Gi")
    await cluster.settle()
    return cluster


def snapshot(name: str, claim: str, snapshot_class: str | None = None) -> Resource:
    spec: JSON = {"source": {"persistentVolumeClaimName": claim}}
    if snapshot_class:
        spec["volumeSnapshotClassName"] = snapshot_class
    return new("VolumeSnapshot", name, "default", spec=spec)


def snapshot_class(cluster: Cluster, policy: str = "Delete",
                   parameters: dict[str, str] | None = None, default: bool = False) -> None:
    obj = builders.volume_snapshot_class("snaps", DRIVER, policy, parameters)
    if default:
        obj.metadata.annotations["snapshot.storage.kubernetes.io/is-default-class"] = "true"
    cluster.api.create(obj)


async def test_snapshot_gets_content_snapcontent_uid_and_csi_snapshot_snapshot_uid(
    bound: Cluster,
) -> None:
    snapshot_class(bound)
    vs = bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()

    uid = vs.metadata.uid
    content = bound.get("VolumeSnapshotContent", f"snapcontent-{uid}")
    pv_name = bound.get("PersistentVolumeClaim", "data").spec["volumeName"]
    assert content.spec["source"] == {"volumeHandle": pv_name}
    assert content.spec["volumeSnapshotRef"]["uid"] == uid
    assert content.spec["deletionPolicy"] == "Delete"
    (create,) = bound.requests("CreateSnapshot")
    assert (create.name, create.source_volume_id) == (f"snapshot-{uid}", pv_name)
    assert bound.calls("csi-snapshotter") == ["Controller/CreateSnapshot"]


async def test_snapshot_status_reports_content_handle_ready_and_restore_size(
    bound: Cluster,
) -> None:
    snapshot_class(bound)
    vs = bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()

    content = bound.get("VolumeSnapshotContent", f"snapcontent-{vs.metadata.uid}")
    assert content.status == {"snapshotHandle": f"snapshot-{vs.metadata.uid}",
                              "readyToUse": True, "restoreSize": 10 << 30,
                              "creationTime": 1_700_000_000 * 10**9}
    status = bound.get("VolumeSnapshot", "snap").status
    assert status == {"boundVolumeSnapshotContentName": content.name, "readyToUse": True,
                      "restoreSize": "10Gi", "creationTime": "2023-11-14T22:13:20Z"}
    assert FIN_PVC_SOURCE not in bound.get("PersistentVolumeClaim", "data").metadata.finalizers


async def test_snapshot_controller_records_creating_created_and_ready(bound: Cluster) -> None:
    snapshot_class(bound)
    bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()

    assert bound.events("VolumeSnapshot", "snap") == [
        "CreatingSnapshot: Waiting for a snapshot default/snap to be created by the CSI driver.",
        "SnapshotCreated: Snapshot default/snap was successfully created by the CSI driver.",
        "SnapshotReady: Snapshot default/snap is ready to use."]
    assert {e.component for e in bound.recorder.for_object("VolumeSnapshot", "snap",
                                                           "default")} == {"snapshot-controller"}


async def test_snapshotter_secret_keys_are_stripped_and_the_secret_sent(bound: Cluster) -> None:
    bound.api.create(builders.secret("snap-creds", "default", {"key": "v"}))
    snapshot_class(bound, parameters={"tier": "gold",
                                      "csi.storage.k8s.io/snapshotter-secret-name": "snap-creds",
                                      "csi.storage.k8s.io/snapshotter-secret-namespace":
                                          "default"})
    bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()

    (create,) = bound.requests("CreateSnapshot")
    assert dict(create.parameters) == {"tier": "gold"}
    assert dict(create.secrets) == {"key": "v"}


async def test_unknown_prefixed_snapshot_class_parameter_is_refused(bound: Cluster) -> None:
    snapshot_class(bound, parameters={"csi.storage.k8s.io/bogus": "x"})
    vs = bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()

    assert "CreateSnapshot" not in bound.driver.calls
    content = bound.get("VolumeSnapshotContent", f"snapcontent-{vs.metadata.uid}")
    assert "csi.storage.k8s.io/bogus" in content.status["error"]["message"]
    assert bound.get("VolumeSnapshot", "snap").status["readyToUse"] is False


async def test_default_snapshot_class_of_the_driver_is_used(bound: Cluster) -> None:
    snapshot_class(bound, default=True)
    bound.api.create(snapshot("snap", "data"))

    await bound.settle()

    assert bound.get("VolumeSnapshot", "snap").spec["volumeSnapshotClassName"] == "snaps"
    assert bound.get("VolumeSnapshot", "snap").status["readyToUse"] is True


async def test_deleting_a_snapshot_with_policy_delete_deletes_the_csi_snapshot_and_content(
    bound: Cluster,
) -> None:
    snapshot_class(bound)
    vs = bound.api.create(snapshot("snap", "data", "snaps"))
    await bound.settle()

    bound.api.delete("VolumeSnapshot", "snap", "default")
    await bound.settle()

    (delete,) = bound.requests("DeleteSnapshot")
    assert delete.snapshot_id == f"snapshot-{vs.metadata.uid}"
    assert bound.names("VolumeSnapshotContent") == []
    assert bound.names("VolumeSnapshot") == []
    assert bound.driver.snapshots == {}


async def test_deleting_a_snapshot_with_policy_retain_keeps_content_and_csi_snapshot(
    bound: Cluster,
) -> None:
    snapshot_class(bound, policy="Retain")
    bound.api.create(snapshot("snap", "data", "snaps"))
    await bound.settle()

    bound.api.delete("VolumeSnapshot", "snap", "default")
    await bound.settle()

    assert bound.names("VolumeSnapshot") == []
    assert len(bound.names("VolumeSnapshotContent")) == 1
    assert "DeleteSnapshot" not in bound.driver.calls
    assert len(bound.driver.snapshots) == 1


async def test_pre_provisioned_content_is_checked_with_list_snapshots(bound: Cluster) -> None:
    bound.driver.add_snapshot("existing-snap", "vol-x", size_bytes=3 << 30)
    bound.api.create(new("VolumeSnapshotContent", "imported", spec={
        "driver": DRIVER, "deletionPolicy": "Retain",
        "source": {"snapshotHandle": "existing-snap"},
        "volumeSnapshotRef": {"name": "snap", "namespace": "default"}}))
    vs = bound.api.create(new("VolumeSnapshot", "snap", "default", spec={
        "source": {"volumeSnapshotContentName": "imported"}}))

    await bound.settle()

    (listed,) = bound.requests("ListSnapshots")
    assert listed.snapshot_id == "existing-snap"
    assert "CreateSnapshot" not in bound.driver.calls
    content = bound.get("VolumeSnapshotContent", "imported")
    assert content.spec["volumeSnapshotRef"]["uid"] == vs.metadata.uid
    status = bound.get("VolumeSnapshot", "snap").status
    assert (status["readyToUse"], status["restoreSize"]) == (True, "3Gi")


async def test_pre_provisioned_content_with_unknown_handle_reports_an_error(
    bound: Cluster,
) -> None:
    bound.api.create(new("VolumeSnapshotContent", "imported", spec={
        "driver": DRIVER, "deletionPolicy": "Retain", "source": {"snapshotHandle": "ghost"},
        "volumeSnapshotRef": {"name": "snap", "namespace": "default"}}))
    bound.api.create(new("VolumeSnapshot", "snap", "default", spec={
        "source": {"volumeSnapshotContentName": "imported"}}))

    await bound.settle()

    assert "could not find snapshot ghost" in bound.get(
        "VolumeSnapshot", "snap").status["error"]["message"]


async def test_claim_restored_from_a_snapshot_gets_its_handle_as_content_source(
    bound: Cluster,
) -> None:
    snapshot_class(bound)
    bound.api.create(snapshot("snap", "data", "snaps"))
    await bound.settle()

    bound.claim("restored", storage="10Gi", data_source={
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"})
    await bound.settle()

    (create,) = bound.requests("CreateSnapshot")
    restore = bound.requests("CreateVolume")[-1]
    assert restore.volume_content_source.snapshot.snapshot_id == create.name
    restored = bound.get("PersistentVolumeClaim", "restored")
    assert restored.status["phase"] == "Bound"
    assert restored.status["capacity"] == {"storage": "10Gi"}


async def test_restore_smaller_than_the_snapshot_is_refused(bound: Cluster) -> None:
    snapshot_class(bound)
    bound.api.create(snapshot("snap", "data", "snaps"))
    await bound.settle()

    bound.claim("restored", storage="1Gi", data_source={
        "apiGroup": "snapshot.storage.k8s.io", "kind": "VolumeSnapshot", "name": "snap"})
    await bound.settle()

    assert len(bound.requests("CreateVolume")) == 1
    assert "less than the size" in bound.events("PersistentVolumeClaim", "restored")[-1]


async def test_create_snapshot_error_is_retried_after_backoff(bound: Cluster) -> None:
    snapshot_class(bound)
    bound.driver.fail_next("CreateSnapshot", grpc.StatusCode.UNAVAILABLE, "busy")
    bound.api.create(snapshot("snap", "data", "snaps"))

    await bound.settle()
    assert bound.get("VolumeSnapshot", "snap").status["readyToUse"] is False

    await bound.retry_after_backoff()

    assert bound.get("VolumeSnapshot", "snap").status["readyToUse"] is True
    content = bound.api.list("VolumeSnapshotContent").items[0]
    assert FIN_CONTENT in content.metadata.finalizers
    assert "error" not in content.status


async def test_deleting_a_snapshot_of_pre_provisioned_delete_content_deletes_the_handle(
    bound: Cluster,
) -> None:
    bound.driver.add_snapshot("existing-snap", "vol-x")
    bound.api.create(new("VolumeSnapshotContent", "imported", spec={
        "driver": DRIVER, "deletionPolicy": "Delete",
        "source": {"snapshotHandle": "existing-snap"},
        "volumeSnapshotRef": {"name": "snap", "namespace": "default"}}))
    bound.api.create(new("VolumeSnapshot", "snap", "default", spec={
        "source": {"volumeSnapshotContentName": "imported"}}))
    await bound.settle()
    assert FIN_CONTENT in bound.get("VolumeSnapshotContent", "imported").metadata.finalizers

    bound.api.delete("VolumeSnapshot", "snap", "default")
    await bound.settle()

    assert [r.snapshot_id for r in bound.requests("DeleteSnapshot")] == ["existing-snap"]
    assert bound.names("VolumeSnapshotContent") == []
