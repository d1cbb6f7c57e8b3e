"""How the `kubelet` command registers its nodes through a KubeClient (here over an
in-process API server; the same calls go over HTTPS in the command): the Node created or
taken over, the CSINode owned by it, and the podCIDR found or written."""

from __future__ import annotations

import asyncio
from pathlib import Path

from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.kubelet_process import (
    SIM_NODE_LABEL,
    KubeletOptions,
    ensure_csinode,
    node_object,
    register_node,
    settle_pod_cidrs,
)


def opts() -> KubeletOptions:
    return KubeletOptions(kubeconfig=Path("k"), node_names=["n1"])


async def test_a_new_node_is_created_as_registered():
    client = InProcessClient(APIServer())
    node = await register_node(client, node_object("n1", "192.168.0.1", opts(), None))
    assert (await client.get("Node", "n1")).metadata.uid == node.metadata.uid
    assert node.metadata.labels[SIM_NODE_LABEL] == "true"


async def test_an_existing_node_is_taken_over_keeping_its_spec_and_gaining_our_labels():
    api = APIServer()
    api.create(builders.node("n1", "10.9.9.0/24", labels={"team": "a"}))
    client = InProcessClient(api)
    node = await register_node(client, node_object("n1", "192.168.0.1", opts(), None))
    assert node.spec["podCIDR"] == "10.9.9.0/24"
    assert node.metadata.labels["team"] == "a"
    assert node.metadata.labels[SIM_NODE_LABEL] == "true"


async def test_the_pod_cidr_a_node_has_is_kept_and_one_without_gets_its_fallback():
    client = InProcessClient(APIServer())
    kept = await client.create(builders.node("n1", "10.9.9.0/24"))
    bare = await client.create(builders.node("n2"))
    cidrs = await settle_pod_cidrs(client, [kept, bare], {"n1": "10.244.0.0/24",
                                                          "n2": "10.244.1.0/24"}, wait=0)
    assert cidrs == {"n1": "10.9.9.0/24", "n2": "10.244.1.0/24"}
    assert (await client.get("Node", "n1")).spec["podCIDRs"] == ["10.9.9.0/24"]
    written = await client.get("Node", "n2")
    assert (written.spec["podCIDR"], written.spec["podCIDRs"]) == (
        "10.244.1.0/24", ["10.244.1.0/24"])


async def test_a_pod_cidr_the_control_plane_allocates_while_it_waits_is_taken():
    api = APIServer()
    client = InProcessClient(api)
    opts_ = opts()
    node = await register_node(client, node_object("n1", "192.168.0.1", opts_, None))

    async def allocate() -> None:  # node-ipam's role, a moment after the Node appears
        await asyncio.sleep(0.1)
        await client.patch("Node", "n1", {"spec": {"podCIDR": "10.7.0.0/24"}})

    allocating = asyncio.create_task(allocate())
    cidrs = await settle_pod_cidrs(client, [node], {"n1": "10.244.0.0/24"}, wait=10)
    await allocating
    assert cidrs == {"n1": "10.7.0.0/24"}


async def test_the_csinode_is_owned_by_its_node_and_made_once():
    client = InProcessClient(APIServer())
    node = await client.create(builders.node("n1"))
    await ensure_csinode(client, node)
    await ensure_csinode(client, node)  # a restart: it exists already
    csinode = await client.get("CSINode", "n1")
    assert csinode.metadata.owner_references[0]["uid"] == node.metadata.uid
    assert csinode.spec["drivers"] == []
