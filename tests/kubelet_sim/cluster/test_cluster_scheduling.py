"""Scheduling pods with volumes through real driver processes: each node's CSINode
``allocatable.count`` (the driver's ``--max-volumes-per-node``) bounds the volumes scheduled
there, and pods spread over the nodes, counting the pods still waiting for their
WaitForFirstConsumer volumes."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import condition
from kubelet_sim.cluster import DRIVER_NAME, Cluster
from tests.fixtures.cluster import running_cluster


def late_binding_class(cluster: Cluster) -> Cluster:
    cluster.api.create(builders.storage_class("late", DRIVER_NAME,
                                              volume_binding_mode="WaitForFirstConsumer"))
    return cluster


@pytest.fixture
async def five_nodes() -> AsyncIterator[Cluster]:
    async with running_cluster(5) as c:
        yield late_binding_class(c)


@pytest.fixture
async def two_nodes_two_volumes_each() -> AsyncIterator[Cluster]:
    async with running_cluster(2, ["--max-volumes-per-node", "2"]) as c:
        yield late_binding_class(c)


def claim_pod(cluster: Cluster, name: str) -> None:
    cluster.api.create(builders.persistent_volume_claim(name, storage="1Mi",
                                                        storage_class="late"))
    cluster.api.create(builders.pod(name, volumes=[builders.pvc_volume("data", name)]))


def running_per_node(cluster: Cluster) -> Counter[str]:
    return Counter(str(p.spec.get("nodeName")) for p in cluster.api.list("Pod").items
                   if p.status.get("phase") == "Running")


def volume_limit(cluster: Cluster, node: str) -> int:
    [driver] = cluster.api.get("CSINode", node).spec["drivers"]
    return int(driver["allocatable"]["count"])


async def test_a_hundred_pods_with_a_claim_each_all_run_spread_over_five_nodes(
    five_nodes: Cluster,
) -> None:
    cluster = five_nodes
    for i in range(100):
        claim_pod(cluster, f"app-{i:03}")

    await cluster.settle()

    pods = cluster.api.list("Pod").items
    assert Counter(p.status.get("phase") for p in pods) == {"Running": 100}
    per_node = running_per_node(cluster)
    assert sorted(per_node) == [f"node-{i}" for i in range(1, 6)]
    assert all(count <= volume_limit(cluster, node) for node, count in per_node.items())
    mean = statistics.mean(per_node.values())
    assert all(abs(count - mean) <= 2 for count in per_node.values()), per_node


async def test_the_volume_limit_binds_where_spreading_alone_would_overfill_a_node(
    two_nodes_two_volumes_each: Cluster,
) -> None:
    cluster = two_nodes_two_volumes_each
    for i in range(2):  # node-2 busy with pods that use no volume: spreading favours node-1
        cluster.api.create(builders.pod(f"plain-{i}", node_name="node-2"))
    for i in range(5):
        claim_pod(cluster, f"app-{i}")

    await cluster.settle()

    assert running_per_node(cluster) == {"node-1": 2, "node-2": 4}
    [pending] = [p for p in cluster.api.list("Pod").items if p.status["phase"] == "Pending"]
    assert "nodeName" not in pending.spec
    message = ("0/2 nodes are available: 2 node(s) exceed max volume count. preemption: "
               "0/2 nodes are available: 2 No preemption victims found for incoming pod.")
    assert (condition(pending, "PodScheduled") or {}).get("message") == message
    assert cluster.manager is not None
    events = cluster.manager.get("default-scheduler").recorder.for_object(
        "Pod", pending.name, "default")
    assert [(e.type, e.reason, e.message) for e in events] == [
        ("Warning", "FailedScheduling", message)]
    assert not [e for e in cluster.trace if e.result != "OK"]

