"""Ordering and idempotency with the loops running as in ``up``: the kubelets' pod workers
sync several pods of a node at once, so these are the cases where concurrency could break
the Kubernetes sequence — a burst (one ADD and one DEL per plugin and pod, distinct
addresses), two pods sharing a ReadWriteOnce volume on one node (one NodeStage, one
NodeUnstage after both unpublishes), a pod deleted while its volume is still attaching,
and the node plugin restarted in the middle of a burst."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator

import pytest

from csi_driver.fault_client import request
from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig, default_nodes
from kubelet_sim.utils.trace import TraceEvent
from tests.kubelet_sim.live_cluster import eventually, running_cluster


@pytest.fixture
async def live() -> AsyncIterator[Cluster]:
    async with running_cluster(ClusterConfig(nodes=default_nodes(2))) as cluster:
        cluster.api.create(builders.storage_class(
            "mini", DRIVER_NAME, volume_binding_mode="WaitForFirstConsumer"))
        yield cluster


def pods(cluster: Cluster, ns: str = "default") -> list[Resource]:
    return cluster.api.list("Pod", namespace=ns).items


def phase(cluster: Cluster, name: str) -> str:
    found = [p for p in pods(cluster) if p.name == name]
    return str(found[0].status.get("phase")) if found else "gone"


def calls(cluster: Cluster, prefix: str, since: int = 0) -> list[TraceEvent]:
    return [e for e in cluster.trace.events[since:] if e.call.startswith(prefix)]


def on(name: str, node: str, claims: tuple[str, ...] = ()) -> Resource:
    pod = builders.pod(name, volumes=[builders.pvc_volume(f"v{i}", c)
                                      for i, c in enumerate(claims)])
    pod.spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return pod


def most_at_once(events: list[TraceEvent]) -> int:
    """The largest number of these calls that were running at the same moment."""
    edges = sorted([(e.ts - e.duration_ms / 1000, 1) for e in events]
                   + [(e.ts, -1) for e in events])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


async def test_a_burst_runs_pods_of_a_node_at_once_with_exactly_the_kubernetes_calls(
    live: Cluster,
) -> None:
    count = 24
    mark = len(live.trace.events)
    for i in range(count):
        live.api.create(builders.pod(f"p{i}"))
    await eventually(lambda: sum(p.status.get("phase") == "Running" for p in pods(live))
                     == count, "every pod Running")
    ips = [p.status["podIP"] for p in pods(live)]
    assert len(set(ips)) == count
    adds = calls(live, "cni ADD", mark)
    assert Counter(Counter((e.request.get("pod"), e.call) for e in adds).values()) == {
        1: 2 * count}  # loopback and bridge, once per pod
    busiest = max(most_at_once([e for e in adds if e.node == node and "bridge" in e.call])
                  for node in live.kubelets)
    assert busiest > 1, "no two pods of one node were set up at the same time"

    for i in range(count):
        live.api.delete("Pod", f"p{i}", "default")
    await eventually(lambda: not pods(live), "every pod gone")
    dels = calls(live, "cni DEL", mark)
    assert len(dels) == 2 * count and all(e.result == "OK" for e in adds + dels)


async def test_two_pods_sharing_a_readwriteonce_volume_stage_it_once_and_unstage_it_last(
    live: Cluster,
) -> None:
    live.api.create(builders.persistent_volume_claim("shared", storage="1Gi",
                                                     storage_class="mini"))
    mark = len(live.trace.events)
    for name in ("first", "second"):
        live.api.create(on(name, "node-1", ("shared",)))
    await eventually(lambda: phase(live, "first") == phase(live, "second") == "Running",
                     "both pods Running")
    assert [e.result for e in calls(live, "csi.Node/NodeStageVolume", mark)] == ["OK"]
    assert len(calls(live, "csi.Node/NodePublishVolume", mark)) == 2

    for name in ("first", "second"):
        live.api.delete("Pod", name, "default")
    await eventually(lambda: not pods(live) and not live.api.list("VolumeAttachment").items,
                     "pods gone and the volume detached")
    node_calls = [e.call for e in live.trace.events[mark:]
                  if e.call in ("csi.Node/NodeUnpublishVolume", "csi.Node/NodeUnstageVolume")]
    assert node_calls == ["csi.Node/NodeUnpublishVolume"] * 2 + ["csi.Node/NodeUnstageVolume"]


async def test_a_pod_deleted_while_its_volume_attaches_goes_and_the_volume_is_detached(
    live: Cluster,
) -> None:
    assert live.controller_plugin is not None
    # every ControllerPublishVolume from now on takes 3 s (the driver's own faults)
    request(str(live.controller_plugin.socket.parent / "faults.sock"), {"op": "add", "rules": [
        {"method": "ControllerPublishVolume", "delay": 3}]})
    live.api.create(builders.persistent_volume_claim("slow-data", storage="1Gi",
                                                     storage_class="mini"))
    mark = len(live.trace.events)
    live.api.create(on("impatient", "node-1", ("slow-data",)))
    await eventually(lambda: live.api.list("VolumeAttachment").items, "attaching")
    assert not calls(live, "csi.Controller/ControllerPublishVolume", mark)  # still on it
    pv = live.api.get("PersistentVolumeClaim", "slow-data", "default").spec["volumeName"]
    live.api.delete("Pod", "impatient", "default")
    await eventually(lambda: phase(live, "impatient") == "gone", "the pod gone")
    await eventually(lambda: not live.api.list("VolumeAttachment").items, "the volume detached")
    controller = [(e.call.split("/")[1], e.result) for e in live.trace.events[mark:]
                  if e.call.split("/")[-1] in ("ControllerPublishVolume",
                                               "ControllerUnpublishVolume")]
    assert controller == [("ControllerPublishVolume", "OK"),
                          ("ControllerUnpublishVolume", "OK")]
    assert not calls(live, "csi.Node/NodeStageVolume", mark)  # never mounted
    assert not calls(live, "cni ADD", mark)  # never got a sandbox
    assert str(pv).startswith("pvc-")


async def test_pods_started_across_a_node_plugin_restart_all_run_and_tear_down(
    live: Cluster,
) -> None:
    count = 6
    for i in range(count):
        live.api.create(builders.persistent_volume_claim(f"c{i}", storage="1Gi",
                                                         storage_class="mini"))
    mark = len(live.trace.events)
    for i in range(count):
        live.api.create(on(f"p{i}", "node-1", (f"c{i}",)))
    await eventually(lambda: calls(live, "csi.Node/NodeStageVolume", mark), "a first stage")
    await live.node_plugins["node-1"].restart()
    await eventually(lambda: all(phase(live, f"p{i}") == "Running" for i in range(count)),
                     "every pod Running after the restart")
    staged = Counter(e.request.get("volume_id") for e in calls(live, "csi.Node/NodeStageVolume",
                                                                mark) if e.result == "OK")
    assert len(staged) == count  # every volume staged (a retried stage is idempotent)

    for i in range(count):
        live.api.delete("Pod", f"p{i}", "default")
    await eventually(lambda: not pods(live) and not live.api.list("VolumeAttachment").items,
                     "pods gone and volumes detached")
    unstaged = {e.request.get("volume_id") for e in calls(live, "csi.Node/NodeUnstageVolume",
                                                          mark) if e.result == "OK"}
    assert unstaged == set(staged)
