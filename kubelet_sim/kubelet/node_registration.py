"""What the kubelet writes when a CSI driver registers on its node, and removes when it
goes: the node's CSINode entry (nodeID, topologyKeys, allocatable count), the node
annotation ``csi.volume.kubernetes.io/nodeid`` and the driver's topology labels."""

from __future__ import annotations

import contextlib

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.retry import retry_on_conflict
from kubelet_sim.kubelet.plugin_watcher import (
    NODE_ID_ANNOTATION,
    CsiNodeRegistration,
    csinode_drivers_with,
    csinode_drivers_without,
    node_id_annotation,
    topology_labels,
)


def _csinode(api: APIServer, node_name: str) -> Resource:
    """The node's CSINode, created (owned by the Node) when it does not exist yet."""
    try:
        return api.get("CSINode", node_name)
    except NotFound:
        node = api.get("Node", node_name)
        api.create({
            "kind": "CSINode",
            "metadata": {
                "name": node_name,
                "ownerReferences": [{
                    "apiVersion": "v1", "kind": "Node", "name": node_name,
                    "uid": node.metadata.uid,
                }],
            },
            "spec": {"drivers": []},
        })
        return api.get("CSINode", node_name)


def _set_node_id(node: Resource, driver: str, node_id: str | None) -> None:
    value = node_id_annotation(node.metadata.annotations.get(NODE_ID_ANNOTATION), driver, node_id)
    if value is None:
        node.metadata.annotations.pop(NODE_ID_ANNOTATION, None)
    else:
        node.metadata.annotations[NODE_ID_ANNOTATION] = value


def record_registration(api: APIServer, node_name: str, reg: CsiNodeRegistration) -> None:
    def write_csinode() -> None:
        csinode = _csinode(api, node_name)
        csinode.spec["drivers"] = csinode_drivers_with(csinode.spec.get("drivers", []), reg)
        api.update(csinode)

    def annotate() -> None:
        node = api.get("Node", node_name)
        _set_node_id(node, reg.driver, reg.node_id)
        node.metadata.labels.update(topology_labels(reg))
        api.update(node)

    retry_on_conflict(write_csinode)
    retry_on_conflict(annotate)


def forget_registration(api: APIServer, node_name: str, driver: str) -> None:
    def write() -> None:
        with contextlib.suppress(NotFound):
            csinode = api.get("CSINode", node_name)
            csinode.spec["drivers"] = csinode_drivers_without(
                csinode.spec.get("drivers", []), driver)
            api.update(csinode)
        node = api.get("Node", node_name)
        _set_node_id(node, driver, None)
        api.update(node)

    retry_on_conflict(write)
