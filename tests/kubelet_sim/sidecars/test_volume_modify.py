"""VolumeAttributesClass end to end on the controller cluster: the provisioner creates a
claim's volume with the class's mutable parameters, the resizer's modify controller moves a
bound claim to another class with ControllerModifyVolume, and the failures on the way."""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.model import condition
from tests.kubelet_sim.controller_cluster import DRIVER, Cluster

MODIFY_VOLUME = csi_pb2.ControllerServiceCapability.RPC.MODIFY_VOLUME


def add_class(cluster: Cluster, name: str, iops: str, driver: str = DRIVER) -> None:
    cluster.api.create(builders.volume_attributes_class(name, driver, {"iops": iops}))


def move_claim(cluster: Cluster, vac: str | None, name: str = "data") -> None:
    pvc = cluster.get("PersistentVolumeClaim", name)
    pvc.spec["volumeAttributesClassName"] = vac
    if vac is None:
        del pvc.spec["volumeAttributesClassName"]
    cluster.api.update(pvc)


@pytest.fixture
async def gold(cluster: Cluster) -> Cluster:
    """A claim provisioned with class gold (iops 3000); class silver (iops 6000) exists."""
    cluster.storage_class()
    add_class(cluster, "gold", "3000")
    add_class(cluster, "silver", "6000")
    cluster.claim(volume_attributes_class="gold")
    await cluster.settle()
    return cluster


async def test_a_claim_with_a_class_is_created_with_its_mutable_parameters(
    gold: Cluster,
) -> None:
    (create,) = gold.requests("CreateVolume")
    assert dict(create.mutable_parameters) == {"iops": "3000"}
    pvc = gold.get("PersistentVolumeClaim", "data")
    pv = gold.get("PersistentVolume", pvc.spec["volumeName"])
    assert pv.spec["volumeAttributesClassName"] == "gold"
    assert pvc.status["phase"] == "Bound"
    assert pvc.status["currentVolumeAttributesClassName"] == "gold"
    assert "modifyVolumeStatus" not in pvc.status
    assert gold.requests("ControllerModifyVolume") == []


async def test_a_claim_moved_to_another_class_gets_controller_modify_volume(
    gold: Cluster,
) -> None:
    move_claim(gold, "silver")

    await gold.settle()

    (modify,) = gold.requests("ControllerModifyVolume")
    pvc = gold.get("PersistentVolumeClaim", "data")
    pv = gold.get("PersistentVolume", pvc.spec["volumeName"])
    assert modify.volume_id == pv.spec["csi"]["volumeHandle"]
    assert dict(modify.mutable_parameters) == {"iops": "6000"}
    assert gold.driver.volumes[modify.volume_id].mutable_parameters == {"iops": "6000"}
    assert pvc.status["currentVolumeAttributesClassName"] == "silver"
    assert "modifyVolumeStatus" not in pvc.status
    assert "conditions" not in pvc.status
    assert pv.spec["volumeAttributesClassName"] == "silver"
    assert gold.events("PersistentVolumeClaim", "data")[-2:] == [
        "VolumeModify: external resizer is modifying volume data with vac silver",
        "VolumeModifySuccessful: external resizer modified volume data with vac silver "
        "successfully"]


async def test_a_class_that_does_not_exist_leaves_the_modification_pending_until_it_does(
    gold: Cluster,
) -> None:
    move_claim(gold, "platinum")
    await gold.settle()

    pvc = gold.get("PersistentVolumeClaim", "data")
    assert pvc.status["modifyVolumeStatus"] == {"status": "Pending"}
    assert pvc.status["currentVolumeAttributesClassName"] == "gold"
    assert 'VolumeModifyFailed: VAC "platinum" does not exist.' in \
        gold.events("PersistentVolumeClaim", "data")
    assert gold.requests("ControllerModifyVolume") == []

    add_class(gold, "platinum", "9000")
    await gold.settle()

    (modify,) = gold.requests("ControllerModifyVolume")
    assert dict(modify.mutable_parameters) == {"iops": "9000"}
    assert gold.get("PersistentVolumeClaim", "data").status[
        "currentVolumeAttributesClassName"] == "platinum"


async def test_invalid_argument_marks_the_modification_infeasible(gold: Cluster) -> None:
    gold.driver.fail_next("ControllerModifyVolume", grpc.StatusCode.INVALID_ARGUMENT,
                          "unsupported iops")
    move_claim(gold, "silver")

    await gold.settle()

    pvc = gold.get("PersistentVolumeClaim", "data")
    assert pvc.status["modifyVolumeStatus"] == {"targetVolumeAttributesClassName": "silver",
                                                "status": "Infeasible"}
    assert pvc.status["currentVolumeAttributesClassName"] == "gold"
    error = condition(pvc, "ModifyVolumeError")
    assert error is not None
    assert (error["reason"], error["message"]) == ("InvalidArgument", "unsupported iops")
    modifying = condition(pvc, "ModifyingVolume")
    assert modifying is not None
    assert modifying["message"] == 'Modifying volume to "silver" failed. Waiting for retry.'
    assert ("VolumeModifyFailed: rpc error: code = InvalidArgument desc = unsupported iops"
            in gold.events("PersistentVolumeClaim", "data"))


async def test_a_transient_error_keeps_the_modification_in_progress_and_is_retried(
    gold: Cluster,
) -> None:
    gold.driver.fail_next("ControllerModifyVolume", grpc.StatusCode.UNAVAILABLE, "busy")
    move_claim(gold, "silver")
    await gold.settle()

    pvc = gold.get("PersistentVolumeClaim", "data")
    assert pvc.status["modifyVolumeStatus"]["status"] == "InProgress"
    assert ("VolumeModifyFailed: rpc error: code = Unavailable desc = busy. Still modifying "
            "to VAC silver") in gold.events("PersistentVolumeClaim", "data")

    await gold.retry_after_backoff()

    assert len(gold.requests("ControllerModifyVolume")) == 2
    pvc = gold.get("PersistentVolumeClaim", "data")
    assert pvc.status["currentVolumeAttributesClassName"] == "silver"
    assert "modifyVolumeStatus" not in pvc.status and "conditions" not in pvc.status


async def test_a_claim_naming_a_missing_class_waits_to_be_provisioned(
    cluster: Cluster,
) -> None:
    cluster.storage_class()
    cluster.claim(volume_attributes_class="gold")
    await cluster.settle()

    assert cluster.requests("CreateVolume") == []
    assert ('ProvisioningFailed: failed to provision volume with StorageClass "csi": '
            'volumeattributesclasses.storage.k8s.io "gold" not found') in \
        cluster.events("PersistentVolumeClaim", "data")

    add_class(cluster, "gold", "3000")
    await cluster.retry_after_backoff()

    (create,) = cluster.requests("CreateVolume")
    assert dict(create.mutable_parameters) == {"iops": "3000"}
    assert cluster.get("PersistentVolumeClaim", "data").status["phase"] == "Bound"


async def test_a_class_of_another_driver_fails_provisioning(cluster: Cluster) -> None:
    cluster.storage_class()
    add_class(cluster, "gold", "3000", driver="other.csi.example.com")
    cluster.claim(volume_attributes_class="gold")
    await cluster.settle()

    assert cluster.requests("CreateVolume") == []
    assert ('ProvisioningFailed: failed to provision volume with StorageClass "csi": VAC gold '
            'referenced in PVC is for driver other.csi.example.com which does not match '
            f'driver name {DRIVER}') in cluster.events("PersistentVolumeClaim", "data")


async def test_without_modify_volume_a_claim_with_a_class_is_not_provisioned(
    cluster: Cluster,
) -> None:
    cluster.driver.controller_capabilities = tuple(
        c for c in cluster.driver.controller_capabilities if c != MODIFY_VOLUME)
    cluster.storage_class()
    add_class(cluster, "gold", "3000")
    cluster.claim(volume_attributes_class="gold")
    await cluster.settle()

    assert cluster.requests("CreateVolume") == []
    assert any("controller MODIFY_VOLUME capability is not reported" in e
               for e in cluster.events("PersistentVolumeClaim", "data"))


async def test_a_claim_without_a_class_gets_its_first_one_by_modification(
    cluster: Cluster,
) -> None:
    cluster.storage_class()
    add_class(cluster, "silver", "6000")
    cluster.claim()
    await cluster.settle()
    assert "currentVolumeAttributesClassName" not in \
        cluster.get("PersistentVolumeClaim", "data").status

    move_claim(cluster, "silver")
    await cluster.settle()

    (modify,) = cluster.requests("ControllerModifyVolume")
    assert dict(modify.mutable_parameters) == {"iops": "6000"}
    assert cluster.get("PersistentVolumeClaim", "data").status[
        "currentVolumeAttributesClassName"] == "silver"


async def test_removing_an_infeasible_class_cancels_the_modification(cluster: Cluster) -> None:
    cluster.storage_class()
    add_class(cluster, "silver", "6000")
    cluster.claim()
    await cluster.settle()
    cluster.driver.fail_next("ControllerModifyVolume", grpc.StatusCode.INVALID_ARGUMENT)
    move_claim(cluster, "silver")
    await cluster.settle()

    move_claim(cluster, None)  # allowed: no class is in effect yet
    await cluster.retry_after_backoff()

    pvc = cluster.get("PersistentVolumeClaim", "data")
    assert condition(pvc, "ModifyingVolume") is None
    assert pvc.status["modifyVolumeStatus"]["status"] == "Infeasible"  # the last result
    assert "VolumeModifyCanceled: Cancelled modify." in \
        cluster.events("PersistentVolumeClaim", "data")
    assert len(cluster.requests("ControllerModifyVolume")) == 1


async def test_a_class_in_use_stays_until_no_claim_or_volume_names_it(gold: Cluster) -> None:
    assert gold.get("VolumeAttributesClass", "gold").metadata.finalizers == \
        ["kubernetes.io/vac-protection"]

    gold.api.delete("VolumeAttributesClass", "silver")
    gold.api.delete("VolumeAttributesClass", "gold")
    await gold.settle()

    assert gold.names("VolumeAttributesClass") == ["gold"]
    assert gold.get("VolumeAttributesClass", "gold").is_terminating

    gold.api.delete("PersistentVolumeClaim", "data", "default")
    await gold.settle()

    assert gold.names("PersistentVolume") == []
    assert gold.names("VolumeAttributesClass") == []
