"""external-resizer: controller expansion, node expansion pending, the kubelet's final step,
and failures."""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.model import condition
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.node_expansion import finish_node_expansion
from tests.kubelet_sim.controller_cluster import Cluster

Rpc = csi_pb2.ControllerServiceCapability.RPC


@pytest.fixture
async def bound(cluster: Cluster) -> Cluster:
    cluster.storage_class(allow_volume_expansion=True)
    cluster.claim(storage="10Gi")
    await cluster.settle()
    return cluster


def request_size(cluster: Cluster, size: str, name: str = "data") -> None:
    pvc = cluster.get("PersistentVolumeClaim", name)
    pvc.spec["resources"]["requests"]["storage"] = size
    cluster.api.update(pvc)


async def test_expansion_needing_the_node_sets_file_system_resize_pending(
    bound: Cluster,
) -> None:
    request_size(bound, "20Gi")

    await bound.settle()

    (expand,) = bound.requests("ControllerExpandVolume")
    assert expand.capacity_range.required_bytes == 20 << 30
    pvc = bound.get("PersistentVolumeClaim", "data")
    pv = bound.get("PersistentVolume", pvc.spec["volumeName"])
    assert pv.spec["capacity"] == {"storage": "20Gi"}
    assert pvc.status["capacity"] == {"storage": "10Gi"}
    assert pvc.status["allocatedResources"] == {"storage": "20Gi"}
    assert pvc.status["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    pending = condition(pvc, "FileSystemResizePending")
    assert pending is not None and pending["status"] == "True"
    assert pending["message"] == ("Waiting for user to (re-)start a pod to finish file system "
                                  "resize of volume on node.")
    assert condition(pvc, "Resizing") is None
    assert bound.calls("csi-resizer") == ["Controller/ControllerGetCapabilities",
                                          "Controller/ControllerExpandVolume"]


async def test_finish_node_expansion_sets_capacity_and_clears_the_pending_state(
    bound: Cluster,
) -> None:
    request_size(bound, "20Gi")
    await bound.settle()

    claim = bound.get("PersistentVolumeClaim", "data")
    await finish_node_expansion(as_client(bound.api), claim, 20 << 30)
    await bound.settle()

    pvc = bound.get("PersistentVolumeClaim", "data")
    assert pvc.status["capacity"] == {"storage": "20Gi"}
    assert "conditions" not in pvc.status
    assert "allocatedResourceStatuses" not in pvc.status
    assert len(bound.requests("ControllerExpandVolume")) == 1


async def test_finish_node_expansion_retries_on_conflict(bound: Cluster) -> None:
    request_size(bound, "20Gi")
    await bound.settle()
    bound.api.inject_conflicts("PersistentVolumeClaim", 2)

    claim = bound.get("PersistentVolumeClaim", "data")
    await finish_node_expansion(as_client(bound.api), claim, 20 << 30)

    assert bound.get("PersistentVolumeClaim", "data").status["capacity"] == {"storage": "20Gi"}


async def test_expansion_without_node_expansion_sets_capacity_directly(bound: Cluster) -> None:
    bound.driver.node_expansion_required = False
    request_size(bound, "15Gi")

    await bound.settle()

    pvc = bound.get("PersistentVolumeClaim", "data")
    assert pvc.status["capacity"] == {"storage": "15Gi"}
    assert pvc.status["allocatedResources"] == {"storage": "15Gi"}
    assert "conditions" not in pvc.status
    assert pvc.metadata.annotations["volume.kubernetes.io/storage-resizer"] == \
        "fake.csi.example.com"


async def test_resizer_records_resizing_then_success_or_file_system_resize_required(
        bound: Cluster) -> None:
    pv_name = bound.get("PersistentVolumeClaim", "data").spec["volumeName"]
    request_size(bound, "15Gi")

    await bound.settle()

    assert bound.events("PersistentVolumeClaim", "data")[-2:] == [
        f"Resizing: External resizer is resizing volume {pv_name}",
        "FileSystemResizeRequired: Require file system resize of volume on node"]


async def test_claim_of_another_driver_is_not_expanded(cluster: Cluster) -> None:
    cluster.storage_class("manual", provisioner="other.example.com",
                          allow_volume_expansion=True)
    cluster.api.create(builders.csi_persistent_volume(
        "static", driver="other.example.com", volume_handle="h", storage="10Gi",
        storage_class="manual"))
    cluster.claim(storage="10Gi", storage_class="manual")
    await cluster.settle()
    request_size(cluster, "20Gi")

    await cluster.settle()

    assert "ControllerExpandVolume" not in cluster.driver.calls
    assert cluster.get("PersistentVolumeClaim", "data").status["capacity"] == {
        "storage": "10Gi"}


async def test_node_only_driver_skips_controller_expand_and_waits_for_the_node(
    bound: Cluster,
) -> None:
    bound.driver.controller_capabilities = (Rpc.CREATE_DELETE_VOLUME,
                                            Rpc.PUBLISH_UNPUBLISH_VOLUME)
    request_size(bound, "20Gi")

    await bound.settle()

    assert "ControllerExpandVolume" not in bound.driver.calls
    pvc = bound.get("PersistentVolumeClaim", "data")
    assert pvc.status["allocatedResourceStatuses"] == {"storage": "NodeResizePending"}
    assert bound.get("PersistentVolume", pvc.spec["volumeName"]).spec["capacity"] == {
        "storage": "20Gi"}


async def test_out_of_range_expansion_is_marked_infeasible_with_an_error_condition(
    bound: Cluster,
) -> None:
    bound.driver.fail_next("ControllerExpandVolume", grpc.StatusCode.OUT_OF_RANGE, "too big")
    request_size(bound, "20Gi")

    await bound.settle()
    await bound.retry_after_backoff()

    pvc = bound.get("PersistentVolumeClaim", "data")
    assert pvc.status["allocatedResourceStatuses"] == {"storage": "ControllerResizeInfeasible"}
    error = condition(pvc, "ControllerResizeError")
    assert error is not None
    assert error["message"] == ("failed to expand pvc with rpc error: code = OUT_OF_RANGE "
                                "desc = too big")
    assert len(bound.requests("ControllerExpandVolume")) == 1  # not retried as it stands


async def test_transient_expansion_error_is_retried_after_backoff(bound: Cluster) -> None:
    bound.driver.node_expansion_required = False
    bound.driver.fail_next("ControllerExpandVolume", grpc.StatusCode.UNAVAILABLE, "later")
    request_size(bound, "20Gi")

    await bound.settle()
    assert bound.get("PersistentVolumeClaim", "data").status["capacity"] == {
        "storage": "10Gi"}

    await bound.retry_after_backoff()

    assert bound.get("PersistentVolumeClaim", "data").status["capacity"] == {
        "storage": "20Gi"}


async def test_a_missing_controller_expand_secret_is_an_event_and_a_retry_until_it_exists(
    cluster: Cluster,
) -> None:
    cluster.storage_class(allow_volume_expansion=True, parameters={
        "csi.storage.k8s.io/controller-expand-secret-name": "expand-creds",
        "csi.storage.k8s.io/controller-expand-secret-namespace": "default"})
    cluster.claim(storage="10Gi")
    await cluster.settle()
    request_size(cluster, "20Gi")

    await cluster.settle()

    assert cluster.requests("ControllerExpandVolume") == []
    assert cluster.events("PersistentVolumeClaim", "data")[-1] == (
        "VolumeResizeFailed: error getting secret expand-creds in namespace default: "
        'secrets "expand-creds" not found')

    cluster.api.create(builders.secret("expand-creds", "default", {"key": "v"}))
    await cluster.retry_after_backoff()

    (expand,) = cluster.requests("ControllerExpandVolume")
    assert dict(expand.secrets) == {"key": "v"}
