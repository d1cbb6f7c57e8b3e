"""Attach/detach controller + external-attacher: VolumeAttachment name, publish, finalizers,
the volumesInUse handshake, and reclaim after detach."""

from __future__ import annotations

import hashlib
import json

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.sidecars.attacher import attacher_finalizer
from tests.kubelet_sim.controller_cluster import DRIVER, Cluster

FINALIZER = "external-attacher/fake-csi-example-com"


@pytest.fixture
def flat(cluster: Cluster) -> Cluster:
    """The cluster with a driver that has no topology, so the first pod lands on node-1."""
    cluster.driver.topology_key = ""
    cluster.storage_class()
    return cluster


async def running_pod(cluster: Cluster) -> tuple[Resource, str]:
    cluster.claim()
    cluster.pod()
    await cluster.settle()
    pv_name = cluster.get("PersistentVolumeClaim", "data").spec["volumeName"]
    return cluster.get("Pod", "app"), pv_name


def unique_name(pv_name: str) -> str:
    return f"kubernetes.io/csi/{DRIVER}^{pv_name}"


async def test_volume_attachment_is_named_csi_sha256_of_handle_driver_and_node(
    flat: Cluster,
) -> None:
    _, pv_name = await running_pod(flat)

    (va,) = flat.api.list("VolumeAttachment").items
    digest = hashlib.sha256(f"{pv_name}{DRIVER}node-1".encode()).hexdigest()
    assert va.name == f"csi-{digest}"
    assert va.spec == {"attacher": DRIVER, "nodeName": "node-1",
                       "source": {"persistentVolumeName": pv_name}}


async def test_attach_publishes_to_the_csinode_node_id_and_records_publish_context(
    flat: Cluster,
) -> None:
    _, pv_name = await running_pod(flat)

    (publish,) = flat.requests("ControllerPublishVolume")
    assert (publish.volume_id, publish.node_id) == (pv_name, "node-1-id")
    assert publish.volume_capability.access_mode.mode == \
        csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
    (va,) = flat.api.list("VolumeAttachment").items
    assert va.status == {"attached": True,
                         "attachmentMetadata": {"devicePath": f"/dev/fake/{pv_name}"}}
    assert va.metadata.finalizers == [FINALIZER]
    assert va.metadata.annotations["csi.alpha.kubernetes.io/node-id"] == "node-1-id"
    assert FINALIZER in flat.get("PersistentVolume", pv_name).metadata.finalizers
    node = flat.api.get("Node", "node-1")
    assert node.status["volumesAttached"] == [{"name": unique_name(pv_name), "devicePath": ""}]
    assert flat.calls("external-attacher")[-1] == "Controller/ControllerPublishVolume"


def test_attacher_finalizer_replaces_every_character_outside_letters_digits_dash() -> None:
    assert attacher_finalizer("csi.example.com/x_y") == "external-attacher/csi-example-com-x-y"
    assert attacher_finalizer("driver.") == "external-attacher/driver-X"


async def test_node_id_comes_from_the_node_annotation_without_csinode(flat: Cluster) -> None:
    flat.api.delete("CSINode", "node-1")
    node = flat.api.get("Node", "node-1")
    node.metadata.annotations["csi.volume.kubernetes.io/nodeid"] = json.dumps({DRIVER: "n1"})
    flat.api.update(node)

    await running_pod(flat)

    assert flat.requests("ControllerPublishVolume")[0].node_id == "n1"


async def test_driver_without_attach_required_gets_no_volume_attachment(flat: Cluster) -> None:
    flat.api.create(builders.csi_driver(DRIVER, attach_required=False))

    await running_pod(flat)

    assert flat.names("VolumeAttachment") == []
    assert "ControllerPublishVolume" not in flat.driver.calls


async def test_driver_without_publish_capability_is_attached_without_a_call(
    flat: Cluster,
) -> None:
    Rpc = csi_pb2.ControllerServiceCapability.RPC
    flat.driver.controller_capabilities = (Rpc.CREATE_DELETE_VOLUME,)

    await running_pod(flat)

    (va,) = flat.api.list("VolumeAttachment").items
    assert va.status == {"attached": True}
    assert "ControllerPublishVolume" not in flat.driver.calls


async def test_publish_error_is_saved_as_attach_error_and_retried(flat: Cluster) -> None:
    flat.driver.fail_next("ControllerPublishVolume", grpc.StatusCode.NOT_FOUND, "no node")

    await running_pod(flat)

    (va,) = flat.api.list("VolumeAttachment").items
    assert va.status["attachError"]["message"].endswith("NOT_FOUND: no node")
    assert va.status.get("attached") is not True

    await flat.retry_after_backoff()

    (va,) = flat.api.list("VolumeAttachment").items
    assert va.status["attached"] is True
    assert "attachError" not in va.status


async def test_an_attach_error_keeps_the_grpc_code_as_error_code(flat: Cluster) -> None:
    flat.driver.fail_next("ControllerPublishVolume", grpc.StatusCode.RESOURCE_EXHAUSTED,
                          "too many volumes on the node")

    await running_pod(flat)

    (va,) = flat.api.list("VolumeAttachment").items
    assert va.status["attachError"]["errorCode"] == 8


async def test_attach_error_is_a_failed_attach_volume_warning_on_the_waiting_pod(
    flat: Cluster,
) -> None:
    flat.driver.fail_next("ControllerPublishVolume", grpc.StatusCode.NOT_FOUND, "no node")

    _, pv_name = await running_pod(flat)

    (event,) = [e for e in flat.recorder.for_object("Pod", "app", "default")
                if e.reason == "FailedAttachVolume"]
    assert event.type == "Warning"
    assert event.component == "attachdetach-controller"
    assert event.message.startswith(f'AttachVolume.Attach failed for volume "{pv_name}" : ')
    assert event.message.endswith("NOT_FOUND: no node")


async def finish_pod(cluster: Cluster) -> None:
    pod = cluster.get("Pod", "app")
    pod.status["phase"] = "Succeeded"
    cluster.api.update_status(pod)


async def test_detach_waits_until_the_kubelet_no_longer_reports_the_volume_in_use(
    flat: Cluster,
) -> None:
    _, pv_name = await running_pod(flat)
    flat.set_volumes_in_use("node-1", [unique_name(pv_name)])

    await finish_pod(flat)
    await flat.settle()
    assert len(flat.names("VolumeAttachment")) == 1
    assert "ControllerUnpublishVolume" not in flat.driver.calls

    flat.set_volumes_in_use("node-1", [])
    await flat.settle()

    assert flat.names("VolumeAttachment") == []
    (unpublish,) = flat.requests("ControllerUnpublishVolume")
    assert (unpublish.volume_id, unpublish.node_id) == (pv_name, "node-1-id")
    assert flat.api.get("Node", "node-1").status["volumesAttached"] == []
    assert FINALIZER not in flat.get("PersistentVolume", pv_name).metadata.finalizers


async def test_a_second_pod_on_the_node_keeps_the_volume_attached(flat: Cluster) -> None:
    await running_pod(flat)
    flat.api.create(builders.pod("second", volumes=[builders.pvc_volume("v", "data")],
                                 node_name="node-1"))
    await finish_pod(flat)

    await flat.settle()

    assert len(flat.names("VolumeAttachment")) == 1
    assert "ControllerUnpublishVolume" not in flat.driver.calls


async def test_reclaim_delete_waits_for_detach_then_deletes_the_volume(flat: Cluster) -> None:
    _, pv_name = await running_pod(flat)
    flat.set_volumes_in_use("node-1", [unique_name(pv_name)])
    flat.api.delete("Pod", "app", "default", grace_period_seconds=0)
    flat.api.delete("PersistentVolumeClaim", "data", "default")

    await flat.settle()
    assert flat.get("PersistentVolume", pv_name).status["phase"] == "Released"
    assert "DeleteVolume" not in flat.driver.calls

    flat.set_volumes_in_use("node-1", [])
    await flat.settle()

    calls = flat.calls()
    assert calls.index("Controller/ControllerUnpublishVolume") < calls.index(
        "Controller/DeleteVolume")
    assert flat.names("PersistentVolume") == []


async def test_claim_deleted_under_a_running_pod_stays_terminating_until_the_pod_is_gone(
    flat: Cluster,
) -> None:
    _, pv_name = await running_pod(flat)
    flat.api.delete("PersistentVolumeClaim", "data", "default")

    await flat.settle()

    assert flat.get("PersistentVolumeClaim", "data").is_terminating
    assert flat.get("PersistentVolume", pv_name).status["phase"] == "Bound"

    flat.api.delete("Pod", "app", "default", grace_period_seconds=0)
    await flat.settle()

    assert flat.names("PersistentVolumeClaim") == []
    assert flat.names("PersistentVolume") == []
    assert flat.requests("DeleteVolume")[0].volume_id == pv_name


@pytest.mark.parametrize(("modes", "published"), [
    (["ReadWriteOnce", "ReadWriteMany"], "MULTI_NODE_MULTI_WRITER"),
    (["ReadOnlyMany"], "MULTI_NODE_READER_ONLY"),
    (["ReadWriteOncePod"], "SINGLE_NODE_WRITER"),
])
async def test_pv_access_modes_are_published_as_one_csi_mode(
    flat: Cluster, modes: list[str], published: str,
) -> None:
    flat.claim(access_modes=modes)
    flat.pod()

    await flat.settle()

    (publish,) = flat.requests("ControllerPublishVolume")
    assert csi_pb2.VolumeCapability.AccessMode.Mode.Name(
        publish.volume_capability.access_mode.mode) == published


async def test_read_only_many_with_read_write_once_cannot_be_attached(flat: Cluster) -> None:
    flat.claim(access_modes=["ReadOnlyMany", "ReadWriteOnce"])
    flat.pod()

    await flat.settle()

    (va,) = flat.api.list("VolumeAttachment").items
    assert "CSI does not support ReadOnlyMany and ReadWriteOnce" in va.status["attachError"][
        "message"]
    assert "ControllerPublishVolume" not in flat.driver.calls
