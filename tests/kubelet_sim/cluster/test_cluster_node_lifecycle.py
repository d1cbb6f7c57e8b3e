"""A live cluster (its loops running, heartbeats in real time) whose kubelet on one node
dies: after the grace period the node is Unknown and tainted unreachable, its pods are
marked not ready and evicted once their toleration runs out, new pods go elsewhere; the
kubelet coming back makes the node Ready, clears the taints and finishes the evicted pod
(CNI DEL)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, condition
from kubelet_sim.api.taints import NO_EXECUTE, NO_SCHEDULE, UNREACHABLE
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from tests.kubelet_sim.live_cluster import eventually

GRACE = 3.0  # with 2 s Leases renewed every 0.5 s (50 s / 40 s / 10 s in a real cluster)


@pytest.fixture
async def live() -> AsyncIterator[tuple[Cluster, asyncio.Event]]:
    cluster = Cluster(ClusterConfig(nodes=default_nodes(2), node_monitor_grace_period=GRACE,
                                    node_lease_duration_seconds=2))
    stop = asyncio.Event()
    try:
        await cluster.start()
        loops = asyncio.create_task(cluster.run(stop))
        yield cluster, stop
        stop.set()
        await loops
    finally:
        stop.set()
        await cluster.stop()


def ready(obj: Resource) -> str:
    return str((condition(obj, "Ready") or {}).get("status", ""))


def pod_on(name: str, node: str, toleration_seconds: int | None = None) -> Resource:
    pod = builders.pod(name)
    pod.spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    if toleration_seconds is not None:
        pod.spec["tolerations"] = [{"key": UNREACHABLE, "operator": "Exists",
                                    "effect": NO_EXECUTE,
                                    "tolerationSeconds": toleration_seconds}]
    return pod


async def test_a_node_whose_kubelet_dies_goes_unknown_evicts_and_recovers(
    live: tuple[Cluster, asyncio.Event],
) -> None:
    cluster, stop = live
    api = cluster.api
    api.create(pod_on("short", "node-2", toleration_seconds=3))
    api.create(pod_on("patient", "node-2"))  # the default 300 s
    for name in ("short", "patient"):
        def running(pod: str = name) -> bool:
            return ready(api.get("Pod", pod, "default")) == "True"
        await eventually(running, f"{name} running")

    dead = [t for t in asyncio.all_tasks() if t.get_name() in ("kubelet-node-2", "lease-node-2")]
    assert len(dead) == 2
    for task in dead:
        task.cancel()

    node = await eventually(lambda: ready(api.get("Node", "node-2")) == "Unknown"
                            and api.get("Node", "node-2"), "node-2 Unknown")
    assert [(t["key"], t["effect"]) for t in node.spec["taints"]] == [
        (UNREACHABLE, NO_SCHEDULE), (UNREACHABLE, NO_EXECUTE)]
    assert ready(api.get("Node", "node-1")) == "True"
    await eventually(lambda: ready(api.get("Pod", "patient", "default")) == "False",
                     "patient marked not ready")
    # 3 s after the taint, "short" is evicted; with no kubelet it stays Terminating.
    await eventually(lambda: api.get("Pod", "short", "default").is_terminating, "eviction")
    assert not api.get("Pod", "patient", "default").is_terminating

    api.create(builders.pod("newcomer"))  # NoSchedule: never node-2
    placed = await eventually(lambda: api.get("Pod", "newcomer", "default").spec.get(
        "nodeName"), "newcomer scheduled")
    assert placed == "node-1"

    back = asyncio.create_task(cluster.kubelets["node-2"].run(stop), name="kubelet-node-2")
    await eventually(lambda: ready(api.get("Node", "node-2")) == "True", "node-2 Ready")
    await eventually(lambda: not api.get("Node", "node-2").spec.get("taints"), "taints gone")
    await eventually(lambda: ready(api.get("Pod", "patient", "default")) == "True",
                     "patient ready again")

    def short_gone() -> bool:
        try:
            api.get("Pod", "short", "default")
        except NotFound:
            return True
        return False
    await eventually(short_gone, "the evicted pod finished by the kubelet")
    dels = [e for e in cluster.trace if e.node == "node-2" and "DEL" in e.call]
    assert dels, "its sandbox was torn down with CNI DEL"
    stop.set()
    await back
