"""What ``up --processes`` waits for before it prints ``export KUBECONFIG=``: the cluster
that in-process ``up`` hands over after its settle. Every node registered by its
``kubelet`` process, Ready with its ``nodeInfo``, its CSINode listing our driver (the
node plugin registered); the ``default`` namespace's ServiceAccount and
``kube-root-ca.crt`` ConfigMap (the controller-manager's), which a pod's admission needs;
the control plane's leader Leases held and their loops running (each component says so
once its caches are synced).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from kubelet_sim.api.errors import ApiError, NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.client.kube_client import ApiUnreachable, KubeClient

SETTLE_SECONDS = 120.0
POLL_SECONDS = 0.2


def node_ready(node: Resource) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.status.get("conditions", [])) and bool(node.status.get("nodeInfo"))


def csinode_has(csinode: Resource, driver: str) -> bool:
    return any(d.get("name") == driver for d in csinode.spec.get("drivers") or [])


async def missing(client: KubeClient, nodes: list[str], driver: str,
                  leases: tuple[str, ...] = ()) -> list[str]:
    """What the cluster does not have yet, said for a person ([] when settled)."""
    out: list[str] = []
    listed = {n.name: n for n in (await client.list("Node")).items}
    out += [f"node {n} Ready" for n in nodes if n not in listed or not node_ready(listed[n])]
    csinodes = {c.name: c for c in (await client.list("CSINode")).items}
    out += [f"CSINode {n} with {driver}" for n in nodes
            if n not in csinodes or not csinode_has(csinodes[n], driver)]
    for kind, name in (("ServiceAccount", "default"), ("ConfigMap", "kube-root-ca.crt")):
        try:
            await client.get(kind, name, "default")
        except NotFound:
            out.append(f"{kind} default/{name}")
    for name in leases:
        try:
            held = (await client.get("Lease", name, "kube-system")).spec.get("holderIdentity")
        except NotFound:
            held = None
        if not held:
            out.append(f"leader of kube-system/{name}")
    return out


async def wait_settled(client: KubeClient, nodes: list[str], driver: str,
                       leases: tuple[str, ...] = (), timeout: float = SETTLE_SECONDS,
                       also: Callable[[], list[str]] | None = None) -> list[str]:
    """Poll until :func:`missing` (and ``also``) is empty or ``timeout`` passed: what is
    still missing."""
    deadline = time.monotonic() + timeout
    lacking = ["an answer from the API server"]
    while True:
        with contextlib.suppress(ApiError, ApiUnreachable):
            lacking = [*(also() if also is not None else []),
                       *await missing(client, nodes, driver, leases)]
        if not lacking or time.monotonic() >= deadline:
            return lacking
        await asyncio.sleep(POLL_SECONDS)
