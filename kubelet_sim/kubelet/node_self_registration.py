"""The kubelet registering its own Node (``registerWithAPIServer``): it creates the Node
it was started for; when one of that name exists already (a restart, or a Node made
beforehand) it keeps that one and brings the default labels it owns
(``kubernetes.io/hostname``, ``os``, ``arch`` and their beta twins) up to date, as
``updateDefaultLabels`` does, writing only when one differs."""

from __future__ import annotations

from kubelet_sim.api.errors import AlreadyExists
from kubelet_sim.api.model import Resource
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import write_object
from kubelet_sim.kubelet.node_info import default_labels


async def register_node(client: KubeClient, node: Resource) -> Resource:
    """Create ``node`` (its default labels added), or reconcile the existing one's."""
    wanted = default_labels(node.name)
    node = node.copy()
    node.metadata.labels = {**wanted, **node.metadata.labels}
    try:
        return await client.create(node)
    except AlreadyExists:
        pass

    def reconcile(existing: Resource) -> bool:
        stale = {k: v for k, v in wanted.items() if existing.metadata.labels.get(k) != v}
        existing.metadata.labels.update(stale)
        return bool(stale)

    written = await write_object(client, "Node", node.name, "", reconcile)
    return written if written is not None else await client.get("Node", node.name)
