"""Optimistic concurrency in the simulated cluster: writes that meet a Conflict are retried
(client-go's RetryOnConflict, then the next pass or the controller's backoff), so pods still
reach Running and every status still gets written. Real driver and plugin processes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig
from kubelet_sim.kubelet.pod_volumes import unique_volume_name

STORAGE_CLASS = "mini"
# client-go's DefaultRetry makes 5 attempts: 3 conflicts are absorbed by one write,
# 7 make a write give up once and succeed when it is tried again.
WITHIN_ONE_RETRY = 3
BEYOND_ONE_RETRY = 7
OBJECTS = {"Pod": ("web", "default"), "Node": ("node-1", ""),
           "PersistentVolumeClaim": ("data", "default")}


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig())
    try:
        await c.start()
        c.api.create(builders.storage_class(STORAGE_CLASS, DRIVER_NAME))
        yield c
    finally:
        await c.stop()


async def run_pod_with_claim(cluster: Cluster, *, bound_to_node: bool = False) -> None:
    cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                        storage_class=STORAGE_CLASS))
    cluster.api.create(builders.pod("web", node_name="node-1" if bound_to_node else None,
                                    volumes=[builders.pvc_volume("data", "data")]))
    await cluster.settle()


def assert_everything_written(cluster: Cluster) -> None:
    api = cluster.api
    pvc = api.get("PersistentVolumeClaim", "data", "default")
    assert pvc.status["phase"] == "Bound"
    assert pvc.status["capacity"] == {"storage": "1Gi"}
    pv = api.get("PersistentVolume", pvc.spec["volumeName"])
    assert pv.status["phase"] == "Bound"
    pod = api.get("Pod", "web", "default")
    assert pod.spec["nodeName"] == "node-1"
    assert pod.status["phase"] == "Running"
    assert pod.status["podIP"].startswith("10.244.1.")
    assert pod.status["hostIP"] == "192.168.0.1"
    ready = {c["type"]: c["status"] for c in pod.status["conditions"]}
    assert ready["Ready"] == "True"
    node = api.get("Node", "node-1")
    assert {c["type"]: c["status"] for c in node.status["conditions"]}["Ready"] == "True"
    assert node.status["volumesInUse"] == [
        unique_volume_name(DRIVER_NAME, pv.spec["csi"]["volumeHandle"])]


def assert_conflicts_used_up(cluster: Cluster, kind: str, name: str, namespace: str = "") -> None:
    """A fresh write goes through: nobody left injected conflicts unconsumed."""
    cluster.api.update_status(cluster.api.get(kind, name, namespace))


async def test_conflicts_on_pod_node_and_claim_within_one_retry_are_absorbed(
    cluster: Cluster,
) -> None:
    for kind in ("Pod", "Node", "PersistentVolumeClaim"):
        cluster.api.inject_conflicts(kind, WITHIN_ONE_RETRY)
    await run_pod_with_claim(cluster)
    assert_everything_written(cluster)
    assert_conflicts_used_up(cluster, "Pod", "web", "default")
    assert_conflicts_used_up(cluster, "Node", "node-1")
    assert_conflicts_used_up(cluster, "PersistentVolumeClaim", "data", "default")


@pytest.mark.parametrize("kind", ["Pod", "Node", "PersistentVolumeClaim"])
async def test_conflicts_beyond_one_retry_are_retried_later_and_the_pod_runs(
    cluster: Cluster, kind: str,
) -> None:
    cluster.api.inject_conflicts(kind, BEYOND_ONE_RETRY)
    await run_pod_with_claim(cluster)
    assert_everything_written(cluster)
    name, namespace = OBJECTS[kind]
    assert_conflicts_used_up(cluster, kind, name, namespace)


async def test_kubelet_pod_status_conflicts_beyond_one_retry_are_written_on_the_next_pass(
    cluster: Cluster,
) -> None:
    # Bound to the node already: the kubelet's status writes are the first Pod writes.
    cluster.api.inject_conflicts("Pod", BEYOND_ONE_RETRY, verbs=("update_status",))
    await run_pod_with_claim(cluster, bound_to_node=True)
    assert_everything_written(cluster)
    assert_conflicts_used_up(cluster, "Pod", "web", "default")
