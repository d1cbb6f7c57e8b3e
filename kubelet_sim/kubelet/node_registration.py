"""What the kubelet writes when a CSI driver registers on its node, and removes when it
goes: the node's CSINode entry (nodeID, topologyKeys, allocatable count), the node
annotation ``csi.volume.kubernetes.io/nodeid`` and the driver's topology labels."""

from __future__ import annotations

import contextlib

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.plugin_watcher import (
    NODE_ID_ANNOTATION,
    CsiNodeRegistration,
    csinode_drivers_with,
    csinode_drivers_without,
    node_id_annotation,
    topology_labels,
)


async def _csinode(client: KubeClient, node_name: str) -> Resource:
    """The node's CSINode, created (owned by the Node) when it does not exist yet."""
    try:
        return await client.get("CSINode", node_name)
    except NotFound:
        node = await client.get("Node", node_name)
        with contextlib.suppress(AlreadyExists):  # made meanwhile: read it below
            await client.create(Resource.from_dict({
                "kind": "CSINode",
                "metadata": {
                    "name": node_name,
                    "ownerReferences": [{
                        "apiVersion": "v1", "kind": "Node", "name": node_name,
                        "uid": node.metadata.uid,
                    }],
                },
                "spec": {"drivers": []},
            }))
        return await client.get("CSINode", node_name)


def _set_node_id(node: Resource, driver: str, node_id: str | None) -> None:
    value = node_id_annotation(node.metadata.annotations.get(NODE_ID_ANNOTATION), driver, node_id)
    if value is None:
        node.metadata.annotations.pop(NODE_ID_ANNOTATION, None)
    else:
        node.metadata.annotations[NODE_ID_ANNOTATION] = value


async def record_registration(client: KubeClient, node_name: str,
                              reg: CsiNodeRegistration) -> None:
    async def write_csinode() -> None:
        csinode = await _csinode(client, node_name)
        csinode.spec["drivers"] = csinode_drivers_with(csinode.spec.get("drivers", []), reg)
        await client.update(csinode)

    async def annotate() -> None:
        node = await client.get("Node", node_name)
        _set_node_id(node, reg.driver, reg.node_id)
        node.metadata.labels.update(topology_labels(reg))
        await client.update(node)

    await retry_on_conflict_async(write_csinode)
    await retry_on_conflict_async(annotate)


async def forget_registration(client: KubeClient, node_name: str, driver: str) -> None:
    async def write() -> None:
        with contextlib.suppress(NotFound):
            csinode = await client.get("CSINode", node_name)
            csinode.spec["drivers"] = csinode_drivers_without(
                csinode.spec.get("drivers", []), driver)
            await client.update(csinode)
        node = await client.get("Node", node_name)
        _set_node_id(node, driver, None)
        await client.update(node)

    await retry_on_conflict_async(write)
