"""Turn a pod's volumes into the CSI volumes the kubelet mounts, from API objects.

The kubelet's desired-state populator does this: a ``persistentVolumeClaim`` volume
needs its claim Bound and its PV (a CSI PV) present; when the driver requires attach
(its CSIDriver object says so, or there is no CSIDriver object, as in Kubernetes) the
VolumeAttachment must report ``attached`` and its ``attachmentMetadata`` becomes the
publish context. Inline ``csi`` volumes are ephemeral: no claim, no attach.
Anything not ready yet comes back as a reason to wait, never as an error.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kubelet_sim.apiserver import APIServer
from kubelet_sim.errors import NotFound
from kubelet_sim.model import JSON, Resource
from kubelet_sim.paths import attachment_name
from kubelet_sim.volume_spec import CsiVolume, PodInfo

CSI_PLUGIN = "kubernetes.io/csi"


def unique_volume_name(driver: str, volume_handle: str) -> str:
    """The name the kubelet reports in node.status.volumesInUse/volumesAttached."""
    return f"{CSI_PLUGIN}/{driver}^{volume_handle}"


@dataclass
class ResolvedVolumes:
    volumes: list[CsiVolume] = field(default_factory=list)
    waiting: list[str] = field(default_factory=list)  # why the pod cannot mount yet


def pod_info(pod: Resource) -> PodInfo:
    return PodInfo(
        name=pod.name,
        namespace=pod.namespace,
        uid=pod.metadata.uid,
        service_account=pod.spec.get("serviceAccountName") or "default",
    )


def csi_driver_object(api: APIServer, driver: str) -> JSON:
    """The CSIDriver spec, or {} when none exists (Kubernetes' defaults then apply)."""
    try:
        return api.get("CSIDriver", driver).spec
    except NotFound:
        return {}


def _access_mode(pv: Resource) -> str:
    modes = pv.spec.get("accessModes") or ["ReadWriteOnce"]
    return str(modes[0])


def resolve(api: APIServer, pod: Resource, node_name: str) -> ResolvedVolumes:
    out = ResolvedVolumes()
    mounted_read_only = {
        m.get("name"): bool(m.get("readOnly"))
        for c in pod.spec.get("containers", [])
        for m in c.get("volumeMounts", [])
    }
    for vol in pod.spec.get("volumes", []):
        name = vol.get("name", "")
        if "csi" in vol:
            _inline(api, vol, out)
        elif "persistentVolumeClaim" in vol:
            claim = vol["persistentVolumeClaim"]
            read_only = bool(claim.get("readOnly")) or mounted_read_only.get(name, False)
            _claimed(api, pod.namespace, claim.get("claimName", ""), read_only, node_name, out)
    return out


def _inline(api: APIServer, vol: JSON, out: ResolvedVolumes) -> None:
    src = vol["csi"]
    driver = src.get("driver", "")
    driver_spec = csi_driver_object(api, driver)
    out.volumes.append(CsiVolume(
        driver=driver,
        spec_name=vol.get("name", ""),
        volume_attributes=dict(src.get("volumeAttributes") or {}),
        fs_type=src.get("fsType", ""),
        read_only=bool(src.get("readOnly")),
        ephemeral=True,
        pod_info_on_mount=bool(driver_spec.get("podInfoOnMount")),
    ))


def _claimed(
    api: APIServer, namespace: str, claim_name: str, read_only: bool, node_name: str,
    out: ResolvedVolumes,
) -> None:
    try:
        pvc = api.get("PersistentVolumeClaim", claim_name, namespace)
    except NotFound:
        out.waiting.append(f'persistentvolumeclaim "{claim_name}" not found')
        return
    pv_name = pvc.spec.get("volumeName")
    if pvc.status.get("phase") != "Bound" or not pv_name:
        out.waiting.append(f'persistentvolumeclaim "{claim_name}" is not bound')
        return
    try:
        pv = api.get("PersistentVolume", pv_name)
    except NotFound:
        out.waiting.append(f'persistentvolume "{pv_name}" not found')
        return
    csi = pv.spec.get("csi")
    if not csi:
        out.waiting.append(f'persistentvolume "{pv_name}" is not a CSI volume')
        return
    driver, handle = csi.get("driver", ""), csi.get("volumeHandle", "")
    driver_spec = csi_driver_object(api, driver)
    publish_context: dict[str, str] = {}
    if driver_spec.get("attachRequired", True):
        va_name = attachment_name(handle, driver, node_name)
        try:
            va = api.get("VolumeAttachment", va_name)
        except NotFound:
            out.waiting.append(f'volume "{pv_name}" waits for VolumeAttachment {va_name}')
            return
        if not va.status.get("attached"):
            out.waiting.append(f'volume "{pv_name}" is not attached to {node_name} yet')
            return
        publish_context = dict(va.status.get("attachmentMetadata") or {})
    out.volumes.append(CsiVolume(
        driver=driver,
        spec_name=pv_name,
        volume_handle=handle,
        volume_attributes=dict(csi.get("volumeAttributes") or {}),
        publish_context=publish_context,
        fs_type=csi.get("fsType", ""),
        access_mode=_access_mode(pv),
        read_only=read_only or bool(csi.get("readOnly")),
        block=pv.spec.get("volumeMode") == "Block",
        pod_info_on_mount=bool(driver_spec.get("podInfoOnMount")),
    ))
