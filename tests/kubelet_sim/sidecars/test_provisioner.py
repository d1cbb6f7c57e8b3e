"""external-provisioner and the PV binder against the in-memory driver."""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.controllers.common import ANN_PROVISIONED_BY, PROVISIONER_FINALIZER
from tests.kubelet_sim.controller_cluster import DRIVER, TOPOLOGY_KEY, Cluster

Mode = csi_pb2.VolumeCapability.AccessMode


async def test_claim_gets_volume_named_pvc_uid_and_both_sides_are_bound(
    cluster: Cluster,
) -> None:
    cluster.storage_class(reclaim_policy="Retain")
    pvc = cluster.claim(storage="5Gi")

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    pv_name = f"pvc-{pvc.metadata.uid}"
    assert create.name == pv_name
    assert create.capacity_range.required_bytes == 5 << 30
    pv, bound = cluster.get("PersistentVolume", pv_name), cluster.get(
        "PersistentVolumeClaim", "data")
    assert pv.spec["claimRef"]["uid"] == pvc.metadata.uid
    assert pv.spec["csi"] | {"volumeAttributes": {}} == {
        "driver": DRIVER, "volumeHandle": pv_name, "volumeAttributes": {}}
    assert pv.spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv.spec["storageClassName"] == "csi"
    assert pv.spec["capacity"] == {"storage": "5Gi"}
    assert pv.metadata.annotations[ANN_PROVISIONED_BY] == DRIVER
    assert PROVISIONER_FINALIZER in pv.metadata.finalizers
    assert pv.status["phase"] == "Bound"
    assert bound.spec["volumeName"] == pv_name
    assert bound.status == {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                            "capacity": {"storage": "5Gi"}}
    assert bound.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"


async def test_known_prefixed_parameters_are_stripped_and_fstype_becomes_mount_fs_type(
    cluster: Cluster,
) -> None:
    cluster.storage_class(parameters={
        "csi.storage.k8s.io/fstype": "xfs", "pool": "fast",
        "csi.storage.k8s.io/node-stage-secret-name": "stage",
        "csi.storage.k8s.io/node-stage-secret-namespace": "default"})
    cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert dict(create.parameters) == {"pool": "fast"}
    assert create.volume_capabilities[0].mount.fs_type == "xfs"
    pv = cluster.get("PersistentVolume", create.name)
    assert pv.spec["csi"]["fsType"] == "xfs"
    assert pv.spec["csi"]["nodeStageSecretRef"] == {"name": "stage", "namespace": "default"}


async def test_unknown_csi_storage_prefixed_parameter_fails_claim_without_create_volume(
    cluster: Cluster,
) -> None:
    cluster.storage_class(parameters={"csi.storage.k8s.io/bogus": "1"})
    cluster.claim()

    await cluster.settle()

    assert "CreateVolume" not in cluster.driver.calls
    assert cluster.get("PersistentVolumeClaim", "data").status["phase"] == "Pending"
    (event,) = cluster.events("PersistentVolumeClaim", "data")
    assert event.startswith("ProvisioningFailed: ")
    assert 'unknown parameter key "csi.storage.k8s.io/bogus"' in event


@pytest.mark.parametrize(("k8s_mode", "csi_mode"), [
    ("ReadWriteOnce", Mode.SINGLE_NODE_WRITER),
    ("ReadOnlyMany", Mode.MULTI_NODE_READER_ONLY),
    ("ReadWriteMany", Mode.MULTI_NODE_MULTI_WRITER),
    ("ReadWriteOncePod", Mode.SINGLE_NODE_WRITER),
])
async def test_access_modes_map_to_csi_access_modes_without_multi_writer_capability(
    cluster: Cluster, k8s_mode: str, csi_mode: int,
) -> None:
    cluster.storage_class()
    cluster.claim(access_modes=[k8s_mode])

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert [c.access_mode.mode for c in create.volume_capabilities] == [csi_mode]


async def test_read_write_once_pod_is_single_node_single_writer_with_multi_writer_capability(
    cluster: Cluster,
) -> None:
    Rpc = csi_pb2.ControllerServiceCapability.RPC
    cluster.driver.controller_capabilities += (Rpc.SINGLE_NODE_MULTI_WRITER,)
    cluster.storage_class()
    cluster.claim(access_modes=["ReadWriteOncePod", "ReadWriteOnce"])

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert [c.access_mode.mode for c in create.volume_capabilities] == [
        Mode.SINGLE_NODE_SINGLE_WRITER, Mode.SINGLE_NODE_MULTI_WRITER]


async def test_block_claim_requests_block_capability_and_gets_block_pv(cluster: Cluster) -> None:
    cluster.storage_class(parameters={"csi.storage.k8s.io/fstype": "ext4"})
    cluster.claim(volume_mode="Block")

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert create.volume_capabilities[0].HasField("block")
    pv = cluster.get("PersistentVolume", create.name)
    assert pv.spec["volumeMode"] == "Block"
    assert "fsType" not in pv.spec["csi"]


async def test_provisioner_secret_template_is_resolved_and_sent_to_create_volume(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.secret("data-creds", "default", {"token": "s3cret"}))
    cluster.storage_class(parameters={
        "csi.storage.k8s.io/provisioner-secret-name": "${pvc.name}-creds",
        "csi.storage.k8s.io/provisioner-secret-namespace": "${pvc.namespace}"})
    cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert dict(create.secrets) == {"token": "s3cret"}
    pv = cluster.get("PersistentVolume", create.name)
    assert pv.metadata.annotations[
        "volume.kubernetes.io/provisioner-deletion-secret-name"] == "data-creds"
    assert "s3cret" not in str(list(cluster.trace))


async def test_a_missing_provisioner_secret_is_an_event_and_a_retry_until_it_exists(
    cluster: Cluster,
) -> None:
    cluster.storage_class(parameters={
        "csi.storage.k8s.io/provisioner-secret-name": "${pvc.name}-creds",
        "csi.storage.k8s.io/provisioner-secret-namespace": "${pvc.namespace}"})
    cluster.claim()

    await cluster.settle()

    assert "CreateVolume" not in cluster.driver.calls
    assert cluster.events("PersistentVolumeClaim", "data")[-1] == (
        'ProvisioningFailed: failed to provision volume with StorageClass "csi": error '
        'getting secret data-creds in namespace default: secrets "data-creds" not found')

    cluster.api.create(builders.secret("data-creds", "default", {"token": "late"}))
    await cluster.retry_after_backoff()

    (create,) = cluster.requests("CreateVolume")
    assert dict(create.secrets) == {"token": "late"}
    assert cluster.get("PersistentVolumeClaim", "data").spec.get("volumeName")


async def test_secret_name_without_namespace_fails_provisioning(cluster: Cluster) -> None:
    cluster.storage_class(parameters={"csi.storage.k8s.io/provisioner-secret-name": "x"})
    cluster.claim()

    await cluster.settle()

    assert "CreateVolume" not in cluster.driver.calls
    assert "Both must be specified" in cluster.events("PersistentVolumeClaim", "data")[0]


async def test_create_volume_error_is_reported_and_retried_after_backoff(
    cluster: Cluster,
) -> None:
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.RESOURCE_EXHAUSTED, "pool full")
    cluster.storage_class()
    cluster.claim()

    await cluster.settle()
    assert cluster.names("PersistentVolume") == []
    events = cluster.events("PersistentVolumeClaim", "data")
    assert events[-1] == ('ProvisioningFailed: failed to provision volume with StorageClass '
                          '"csi": rpc error: code = RESOURCE_EXHAUSTED desc = pool full')

    await cluster.retry_after_backoff()

    assert cluster.driver.calls.count("CreateVolume") == 2
    assert cluster.get("PersistentVolumeClaim", "data").status["phase"] == "Bound"


async def test_immediate_class_requisite_topology_lists_every_node_of_the_driver(
    cluster: Cluster,
) -> None:
    cluster.storage_class()
    cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    requisite = [dict(t.segments) for t in create.accessibility_requirements.requisite]
    assert requisite == [{TOPOLOGY_KEY: "zone-a"}, {TOPOLOGY_KEY: "zone-b"}]
    preferred = [dict(t.segments) for t in create.accessibility_requirements.preferred]
    assert sorted(map(str, preferred)) == sorted(map(str, requisite))


async def test_pv_node_affinity_is_the_accessible_topology(cluster: Cluster) -> None:
    cluster.storage_class()
    cluster.claim()

    await cluster.settle()

    (pv,) = cluster.api.list("PersistentVolume").items
    (segment,) = cluster.driver.volume_topology.values()
    assert pv.spec["nodeAffinity"] == {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": TOPOLOGY_KEY, "operator": "In", "values": [segment[TOPOLOGY_KEY]]}]}]}}


async def test_allowed_topologies_become_the_requisite_topology(cluster: Cluster) -> None:
    cluster.storage_class(allowed_topologies=[{"matchLabelExpressions": [
        {"key": TOPOLOGY_KEY, "values": ["zone-b"]}]}])
    cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert [dict(t.segments) for t in create.accessibility_requirements.requisite] == [
        {TOPOLOGY_KEY: "zone-b"}]


async def test_driver_without_accessibility_constraints_gets_no_topology(
    cluster: Cluster,
) -> None:
    cluster.driver.topology_key = ""
    cluster.storage_class()
    cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert not create.HasField("accessibility_requirements")
    assert "nodeAffinity" not in cluster.get("PersistentVolume", create.name).spec


async def test_claim_of_another_provisioner_is_left_alone(cluster: Cluster) -> None:
    cluster.storage_class(provisioner="other.example.com")
    cluster.claim()

    await cluster.settle()

    assert cluster.driver.calls == []
    claim = cluster.get("PersistentVolumeClaim", "data")
    assert claim.metadata.annotations["volume.kubernetes.io/storage-provisioner"] == \
        "other.example.com"


async def test_clone_sends_the_source_volume_as_content_source(cluster: Cluster) -> None:
    cluster.storage_class()
    cluster.claim("source")
    await cluster.settle()
    cluster.claim("copy", data_source={"kind": "PersistentVolumeClaim", "name": "source"})

    await cluster.settle()

    first, second = cluster.requests("CreateVolume")
    assert second.volume_content_source.volume.volume_id == first.name
    assert cluster.get("PersistentVolumeClaim", "copy").status["phase"] == "Bound"


async def test_clone_of_a_larger_claim_is_refused(cluster: Cluster) -> None:
    cluster.storage_class()
    cluster.claim("source", storage="2Gi")
    await cluster.settle()
    cluster.claim("copy", data_source={"kind": "PersistentVolumeClaim", "name": "source"})

    await cluster.settle()

    assert len(cluster.requests("CreateVolume")) == 1
    assert "greater than or equal" in cluster.events("PersistentVolumeClaim", "copy")[-1]


async def test_deleting_claim_releases_pv_then_delete_volume_removes_the_pv(
    cluster: Cluster,
) -> None:
    cluster.storage_class()
    cluster.claim()
    await cluster.settle()
    (pv_name,) = cluster.names("PersistentVolume")

    cluster.api.delete("PersistentVolumeClaim", "data", "default")
    await cluster.settle()

    (delete,) = cluster.requests("DeleteVolume")
    assert delete.volume_id == pv_name
    assert cluster.names("PersistentVolume") == []
    assert pv_name not in cluster.driver.volumes


async def test_reclaim_retain_keeps_the_released_pv_and_its_volume(cluster: Cluster) -> None:
    cluster.storage_class(reclaim_policy="Retain")
    cluster.claim()
    await cluster.settle()

    cluster.api.delete("PersistentVolumeClaim", "data", "default")
    await cluster.settle()

    (pv,) = cluster.api.list("PersistentVolume").items
    assert pv.status["phase"] == "Released"
    assert "DeleteVolume" not in cluster.driver.calls


async def test_existing_matching_pv_is_bound_without_provisioning(cluster: Cluster) -> None:
    cluster.driver.add_volume("static-1")
    cluster.api.create(builders.csi_persistent_volume(
        "static", driver=DRIVER, volume_handle="static-1", storage="10Gi",
        storage_class="csi", reclaim_policy="Retain"))
    cluster.storage_class()
    cluster.claim(storage="2Gi")

    await cluster.settle()

    claim = cluster.get("PersistentVolumeClaim", "data")
    assert claim.spec["volumeName"] == "static"
    assert claim.status["capacity"] == {"storage": "10Gi"}
    assert "CreateVolume" not in cluster.driver.calls


async def test_status_writes_retry_on_conflict_and_succeed(cluster: Cluster) -> None:
    cluster.storage_class()
    cluster.claim()
    cluster.api.inject_conflicts("PersistentVolumeClaim", 3)
    cluster.api.inject_conflicts("PersistentVolume", 2)

    await cluster.settle()

    assert cluster.get("PersistentVolumeClaim", "data").status["phase"] == "Bound"
    (pv,) = cluster.api.list("PersistentVolume").items
    assert pv.status["phase"] == "Bound"
    assert cluster.driver.calls.count("CreateVolume") == 1


async def test_extra_create_metadata_adds_claim_and_volume_names_to_parameters(
    cluster: Cluster,
) -> None:
    provisioner = cluster.manager.get("external-provisioner")
    provisioner.extra_create_metadata = True  # type: ignore[attr-defined]
    cluster.storage_class(parameters={"pool": "a"})
    pvc = cluster.claim()

    await cluster.settle()

    (create,) = cluster.requests("CreateVolume")
    assert dict(create.parameters) == {
        "pool": "a", "csi.storage.k8s.io/pvc/name": "data",
        "csi.storage.k8s.io/pvc/namespace": "default",
        "csi.storage.k8s.io/pv/name": f"pvc-{pvc.metadata.uid}"}


async def test_clone_source_is_protected_only_while_the_clone_is_created(
    cluster: Cluster,
) -> None:
    cluster.storage_class()
    cluster.claim("source")
    await cluster.settle()
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.UNAVAILABLE, "later")
    cluster.claim("copy", data_source={"kind": "PersistentVolumeClaim", "name": "source"})

    await cluster.settle()
    finalizer = "provisioner.storage.kubernetes.io/cloning-protection"
    assert finalizer in cluster.get("PersistentVolumeClaim", "source").metadata.finalizers

    await cluster.retry_after_backoff()

    assert finalizer not in cluster.get("PersistentVolumeClaim", "source").metadata.finalizers
    assert cluster.get("PersistentVolumeClaim", "copy").status["phase"] == "Bound"


async def test_pv_pre_bound_to_a_future_claim_is_available_then_bound_to_it(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.csi_persistent_volume(
        "reserved", driver=DRIVER, volume_handle="h", storage="5Gi", storage_class="csi",
        claim_ref={"namespace": "default", "name": "later"}))
    cluster.storage_class()
    await cluster.settle()
    assert cluster.get("PersistentVolume", "reserved").status["phase"] == "Available"

    cluster.claim("later", storage="1Gi")
    cluster.claim("other", storage="1Gi")
    await cluster.settle()

    assert cluster.get("PersistentVolumeClaim", "later").spec["volumeName"] == "reserved"
    assert cluster.get("PersistentVolumeClaim", "other").spec["volumeName"] != "reserved"


async def test_claim_of_a_missing_storage_class_gets_a_provisioning_failed_warning(
    cluster: Cluster,
) -> None:
    cluster.claim("orphan", storage_class="missing-class")

    await cluster.settle()

    assert cluster.get("PersistentVolumeClaim", "orphan").status["phase"] == "Pending"
    assert cluster.events("PersistentVolumeClaim", "orphan") == [
        'ProvisioningFailed: storageclass.storage.k8s.io "missing-class" not found']
    assert "CreateVolume" not in cluster.driver.calls


async def test_claim_of_a_wait_for_first_consumer_class_says_it_waits_for_a_consumer(
    cluster: Cluster,
) -> None:
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer")
    cluster.claim()

    await cluster.settle()

    assert cluster.events("PersistentVolumeClaim", "data") == [
        "WaitForFirstConsumer: waiting for first consumer to be created before binding"]
