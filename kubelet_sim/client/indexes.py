"""The indexes the controllers and the kubelets read the shared cache by (client-go's
indexers): pods by the node they are bound to ("" while unscheduled) and by the claims
they use; PersistentVolumes by the claim their claimRef names ("" when none);
VolumeAttachments by the PersistentVolume they attach."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache

POD_NODE = "spec.nodeName"
POD_CLAIMS = "claims"
PV_CLAIM = "spec.claimRef"
VA_PV = "spec.source.persistentVolumeName"


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _pod_node(pod: Resource) -> tuple[str]:
    return (str(pod.spec.get("nodeName") or ""),)


def pod_claim_keys(pod: Resource) -> list[str]:
    """``namespace/name`` of every claim the pod's volumes name."""
    return [claim_key(pod.namespace, str(ref["claimName"]))
            for volume in pod.spec.get("volumes") or []
            if (ref := volume.get("persistentVolumeClaim")) and ref.get("claimName")]


def _pv_claim(pv: Resource) -> tuple[str]:
    ref = pv.spec.get("claimRef") or {}
    return (claim_key(str(ref.get("namespace", "")), str(ref.get("name", ""))) if ref else "",)


def _va_pv(va: Resource) -> tuple[str]:
    return (str((va.spec.get("source") or {}).get("persistentVolumeName") or ""),)


def add_indexes(cache: SharedCache) -> SharedCache:
    cache.add_index("Pod", POD_NODE, _pod_node)
    cache.add_index("Pod", POD_CLAIMS, pod_claim_keys)
    cache.add_index("PersistentVolume", PV_CLAIM, _pv_claim)
    cache.add_index("VolumeAttachment", VA_PV, _va_pv)
    return cache
