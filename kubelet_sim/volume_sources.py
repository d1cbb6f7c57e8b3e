"""Build a `CsiVolume` from Kubernetes objects in their wire shape (plain dicts), the way the
kubelet builds its volume spec: from a PersistentVolume's ``spec.csi`` (with the pod's
``persistentVolumeClaim.readOnly``), or from a pod's inline ``csi`` volume; the CSIDriver
object decides ``podInfoOnMount`` and whether the VolumeAttachment's
``status.attachmentMetadata`` is the publish context (``attachRequired``, default true).

Secret references are resolved by the caller's `SecretLookup` (namespace, name) → data.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubelet_sim.volume_spec import CsiVolume

JSON = dict[str, Any]
SecretLookup = Callable[[str, str], Mapping[str, str]]


def _driver_flags(csi_driver: JSON | None) -> tuple[bool, bool]:
    """(podInfoOnMount, attachRequired) from a CSIDriver object; the defaults without one."""
    spec = (csi_driver or {}).get("spec") or {}
    return bool(spec.get("podInfoOnMount", False)), bool(spec.get("attachRequired", True))


def _secret(ref: JSON | None, lookup: SecretLookup | None, default_namespace: str = "",
            ) -> dict[str, str]:
    if not ref:
        return {}
    if lookup is None:
        raise ValueError(f"secret {ref.get('name')!r} is referenced but no lookup was given")
    return dict(lookup(ref.get("namespace") or default_namespace, ref["name"]))


def csi_volume_from_pv(
    pv: JSON,
    *,
    read_only: bool = False,
    csi_driver: JSON | None = None,
    attachment: JSON | None = None,
    secrets: SecretLookup | None = None,
) -> CsiVolume:
    """A PV-backed CSI volume; `read_only` is the pod's ``persistentVolumeClaim.readOnly``
    (``spec.csi.readOnly`` belongs to ControllerPublish, not to the kubelet)."""
    spec = pv.get("spec") or {}
    source = spec.get("csi")
    if not source:
        raise ValueError(f"PersistentVolume {pv.get('metadata', {}).get('name')!r} is not CSI")
    pod_info, attach_required = _driver_flags(csi_driver)
    publish_context: dict[str, str] = {}
    if attach_required and attachment is not None:
        status = attachment.get("status") or {}
        publish_context = dict(status.get("attachmentMetadata") or {})
    access_modes = spec.get("accessModes") or ["ReadWriteOnce"]
    return CsiVolume(
        driver=source["driver"],
        spec_name=pv["metadata"]["name"],
        volume_handle=source["volumeHandle"],
        volume_attributes=dict(source.get("volumeAttributes") or {}),
        publish_context=publish_context,
        fs_type=source.get("fsType", ""),
        access_mode=access_modes[0],
        read_only=read_only,
        mount_options=tuple(spec.get("mountOptions") or ()),
        block=spec.get("volumeMode") == "Block",
        pod_info_on_mount=pod_info,
        node_stage_secrets=_secret(source.get("nodeStageSecretRef"), secrets),
        node_publish_secrets=_secret(source.get("nodePublishSecretRef"), secrets),
        node_expand_secrets=_secret(source.get("nodeExpandSecretRef"), secrets),
    )


def csi_volume_from_inline(
    pod_volume: JSON,
    *,
    pod_namespace: str,
    csi_driver: JSON | None = None,
    secrets: SecretLookup | None = None,
) -> CsiVolume:
    """A pod's inline ``csi`` volume (ephemeral lifecycle); its secret lives in the pod's
    namespace."""
    source = pod_volume.get("csi")
    if not source:
        raise ValueError(f"pod volume {pod_volume.get('name')!r} is not an inline CSI volume")
    pod_info, _ = _driver_flags(csi_driver)
    return CsiVolume(
        driver=source["driver"],
        spec_name=pod_volume["name"],
        ephemeral=True,
        volume_attributes=dict(source.get("volumeAttributes") or {}),
        fs_type=source.get("fsType", ""),
        read_only=bool(source.get("readOnly", False)),
        pod_info_on_mount=pod_info,
        node_publish_secrets=_secret(source.get("nodePublishSecretRef"), secrets, pod_namespace),
    )
