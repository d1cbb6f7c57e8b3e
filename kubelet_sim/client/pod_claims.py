"""The PersistentVolumeClaims a pod's volumes name, as the components that act on them
(the kubelet's volume steps, ``describe``) look them up."""

from __future__ import annotations

from collections.abc import Iterator

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer


def pod_claims(api: APIServer, pod: Resource) -> Iterator[Resource]:
    """Each existing claim named by a ``persistentVolumeClaim`` volume of ``pod``, in the
    pod's volume order; a claim that does not exist (yet) is passed over."""
    for volume in pod.spec.get("volumes") or []:
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if not name:
            continue
        try:
            yield api.get("PersistentVolumeClaim", str(name), pod.namespace)
        except NotFound:
            continue
