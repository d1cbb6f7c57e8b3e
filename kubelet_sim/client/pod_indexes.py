"""The pod indexes the controllers and the kubelets read the shared cache by (client-go's
indexers): pods by the node they are bound to ("" while unscheduled) and by the claims
they use."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache

POD_NODE = "spec.nodeName"
POD_CLAIMS = "claims"


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def _pod_node(pod: Resource) -> tuple[str]:
    return (str(pod.spec.get("nodeName") or ""),)


def _pod_claims(pod: Resource) -> list[str]:
    return [claim_key(pod.namespace, str(ref["claimName"]))
            for volume in pod.spec.get("volumes") or []
            if (ref := volume.get("persistentVolumeClaim")) and ref.get("claimName")]


def add_pod_indexes(cache: SharedCache) -> SharedCache:
    cache.add_index("Pod", POD_NODE, _pod_node)
    cache.add_index("Pod", POD_CLAIMS, _pod_claims)
    return cache
