"""CsiVolume from PersistentVolume / inline pod volume / CSIDriver / VolumeAttachment dicts."""

from __future__ import annotations

import pytest

from kubelet_sim.volume_sources import csi_volume_from_inline, csi_volume_from_pv

DRIVER = "csi-mini.example.com"

PV = {
    "metadata": {"name": "pvc-0a1b"},
    "spec": {
        "accessModes": ["ReadWriteOncePod"],
        "mountOptions": ["noatime"],
        "volumeMode": "Filesystem",
        "csi": {
            "driver": DRIVER, "volumeHandle": "vol-77", "fsType": "xfs", "readOnly": True,
            "volumeAttributes": {"pool": "default"},
            "nodeStageSecretRef": {"name": "stage", "namespace": "kube-system"},
        },
    },
}
ATTACHMENT = {"status": {"attached": True, "attachmentMetadata": {"devicePath": "/dev/x"}}}


def secrets(namespace: str, name: str) -> dict[str, str]:
    return {"from": f"{namespace}/{name}"}


def test_a_pv_gives_handle_spec_name_fs_type_access_mode_and_options() -> None:
    volume = csi_volume_from_pv(PV, attachment=ATTACHMENT, secrets=secrets)

    assert (volume.driver, volume.spec_name, volume.volume_handle) == (DRIVER, "pvc-0a1b", "vol-77")
    assert volume.fs_type == "xfs" and volume.access_mode == "ReadWriteOncePod"
    assert volume.mount_options == ("noatime",) and volume.block is False
    assert dict(volume.volume_attributes) == {"pool": "default"}
    assert dict(volume.node_stage_secrets) == {"from": "kube-system/stage"}
    assert dict(volume.node_publish_secrets) == {}


def test_the_publish_context_is_the_attachment_metadata_when_attach_is_required() -> None:
    assert dict(csi_volume_from_pv(PV, attachment=ATTACHMENT, secrets=secrets)
                .publish_context) == {"devicePath": "/dev/x"}
    no_attach = {"spec": {"attachRequired": False}}
    assert dict(csi_volume_from_pv(PV, csi_driver=no_attach, attachment=ATTACHMENT,
                                   secrets=secrets).publish_context) == {}


def test_read_only_comes_from_the_pod_not_from_the_pv_csi_source() -> None:
    assert csi_volume_from_pv(PV, secrets=secrets).read_only is False
    assert csi_volume_from_pv(PV, read_only=True, secrets=secrets).read_only is True


def test_pod_info_on_mount_comes_from_the_csidriver_object() -> None:
    assert csi_volume_from_pv(PV, secrets=secrets).pod_info_on_mount is False
    driver = {"spec": {"podInfoOnMount": True}}
    assert csi_volume_from_pv(PV, csi_driver=driver, secrets=secrets).pod_info_on_mount is True


def test_a_block_pv_is_a_block_volume() -> None:
    block = {**PV, "spec": {**PV["spec"], "volumeMode": "Block"}}  # type: ignore[dict-item]
    assert csi_volume_from_pv(block, secrets=secrets).block is True


def test_a_referenced_secret_without_a_lookup_is_an_error() -> None:
    with pytest.raises(ValueError):
        csi_volume_from_pv(PV)


def test_a_pv_without_a_csi_source_is_refused() -> None:
    with pytest.raises(ValueError):
        csi_volume_from_pv({"metadata": {"name": "nfs"}, "spec": {"nfs": {}}})


def test_an_inline_volume_is_ephemeral_with_its_secret_in_the_pod_namespace() -> None:
    pod_volume = {"name": "scratch", "csi": {
        "driver": DRIVER, "readOnly": True, "fsType": "ext4",
        "volumeAttributes": {"size": "1Mi"}, "nodePublishSecretRef": {"name": "creds"}}}

    volume = csi_volume_from_inline(pod_volume, pod_namespace="team-a", secrets=secrets,
                                    csi_driver={"spec": {"podInfoOnMount": True}})

    assert volume.ephemeral and volume.spec_name == "scratch" and volume.read_only
    assert volume.handle_for("uid-1").startswith("csi-")
    assert dict(volume.node_publish_secrets) == {"from": "team-a/creds"}
    assert volume.pod_info_on_mount is True
