"""The PersistentVolumeClaims a pod's volumes name, as the components that act on them
(the kubelet's volume steps, ``describe``) look them up: :func:`read_pod_claims` over any
:class:`~kubelet_sim.client.kube_client.KubeClient` (awaited), :func:`pod_claims` over the
in-process API server (for the callers not moved to a client yet)."""

from __future__ import annotations

from collections.abc import Iterator

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient


def claim_names(pod: Resource) -> Iterator[str]:
    """The claim name of each ``persistentVolumeClaim`` volume of ``pod``, in volume order."""
    for volume in pod.spec.get("volumes") or []:
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if name:
            yield str(name)


async def read_pod_claims(client: KubeClient, pod: Resource) -> list[Resource]:
    """Each existing claim named by a ``persistentVolumeClaim`` volume of ``pod``, in the
    pod's volume order; a claim that does not exist (yet) is passed over."""
    claims = []
    for name in claim_names(pod):
        try:
            claims.append(await client.get("PersistentVolumeClaim", name, pod.namespace))
        except NotFound:
            continue
    return claims


def pod_claims(api: APIServer, pod: Resource) -> Iterator[Resource]:
    """:func:`read_pod_claims` from the in-process API server, one claim at a time."""
    for name in claim_names(pod):
        try:
            yield api.get("PersistentVolumeClaim", name, pod.namespace)
        except NotFound:
            continue
