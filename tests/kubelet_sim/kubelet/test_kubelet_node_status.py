"""What each kubelet of a fresh two-node cluster writes once its node plugin registered
through ``plugins_registry``: CSINode from the driver's own NodeGetInfo answer, the node
annotation and topology labels, and a Ready node. One shared cluster; read-only tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from csi_protos import csi_pb2
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig, default_nodes
from kubelet_sim.csi.client import GrpcCsiClient
from kubelet_sim.utils.trace import Trace

pytestmark = pytest.mark.asyncio(loop_scope="module")
NODES = ["node-1", "node-2"]


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig(nodes=default_nodes(len(NODES))))
    try:
        await c.start()
        yield c
    finally:
        await c.stop()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def node_info(cluster: Cluster) -> dict[str, csi_pb2.NodeGetInfoResponse]:
    """Each node plugin's NodeGetInfo, asked directly over its socket."""
    answers = {}
    for name in NODES:
        client = GrpcCsiClient(cluster.node_plugins[name].endpoint, trace=Trace(), node=name)
        try:
            answers[name] = await client.call(
                csi_pb2.NodeGetInfoRequest(),
                csi_pb2.NodeGetInfoResponse)
        finally:
            await client.close()
    return answers


@pytest.mark.parametrize("name", NODES)
async def test_csinode_carries_the_drivers_node_id_topology_keys_and_allocatable_count(
    cluster: Cluster, node_info: dict[str, csi_pb2.NodeGetInfoResponse], name: str,
) -> None:
    info = node_info[name]
    csinode = cluster.api.get("CSINode", name)
    assert csinode.spec["drivers"] == [{
        "name": DRIVER_NAME,
        "nodeID": info.node_id,
        "topologyKeys": sorted(info.accessible_topology.segments),
        "allocatable": {"count": info.max_volumes_per_node},
    }]
    node = cluster.api.get("Node", name)
    assert [(o["kind"], o["name"], o["uid"]) for o in csinode.metadata.owner_references] == \
        [("Node", name, node.metadata.uid)]


@pytest.mark.parametrize("name", NODES)
async def test_node_is_annotated_with_the_node_id_and_labelled_with_the_topology(
    cluster: Cluster, node_info: dict[str, csi_pb2.NodeGetInfoResponse], name: str,
) -> None:
    info = node_info[name]
    node = cluster.api.get("Node", name)
    annotation = node.metadata.annotations["csi.volume.kubernetes.io/nodeid"]
    assert json.loads(annotation) == {DRIVER_NAME: info.node_id}
    for key, value in info.accessible_topology.segments.items():
        assert node.metadata.labels[key] == value


async def test_each_node_plugin_has_its_own_identity(
    node_info: dict[str, csi_pb2.NodeGetInfoResponse],
) -> None:
    assert [node_info[n].node_id for n in NODES] == NODES
    assert dict(node_info["node-1"].accessible_topology.segments) != \
        dict(node_info["node-2"].accessible_topology.segments)


async def test_registration_asks_get_info_then_node_get_info_then_notifies(
    cluster: Cluster,
) -> None:
    for name in NODES:
        calls = [e.call for e in cluster.trace if e.node == name and e.component == "kubelet"]
        assert calls[:3] == [
            "pluginregistration.Registration/GetInfo",
            "csi.Node/NodeGetInfo",
            "pluginregistration.Registration/NotifyRegistrationStatus",
        ]
        notify = next(e for e in cluster.trace if e.node == name
                      and e.call.endswith("NotifyRegistrationStatus"))
        assert notify.request["plugin_registered"] is True


@pytest.mark.parametrize("name", NODES)
async def test_node_with_a_network_config_is_ready(cluster: Cluster, name: str) -> None:
    node = cluster.api.get("Node", name)
    ready = next(c for c in node.status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
    assert node.status["volumesInUse"] == []
