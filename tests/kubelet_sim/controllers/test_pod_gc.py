"""The pod garbage collector, on a fake clock: pods bound to a node that is gone are
marked Failed (DisruptionTarget, DeletionByPodGC) and force-deleted after the 40 s
quarantine, not before and not while the node exists; past the terminated-pod threshold
the oldest terminated pods go."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.pod_gc import QUARANTINE_SECONDS, PodGarbageCollector
from kubelet_sim.testing.fake_clock import FakeClock


def running_pod(api: APIServer, name: str, node: str) -> Resource:
    api.create(builders.pod(name, node_name=node))
    pod = api.get("Pod", name, "default")
    pod.status = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return api.update_status(pod)


def exists(api: APIServer, name: str) -> bool:
    try:
        api.get("Pod", name, "default")
    except NotFound:
        return False
    return True


async def test_pods_of_a_deleted_node_are_failed_and_force_deleted_after_the_quarantine() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1"))
    api.create(builders.node("node-2", "10.244.2.0/24", "192.168.0.2"))
    running_pod(api, "gone-with-node", "node-1")
    running_pod(api, "stays", "node-2")
    seen: list[Resource] = []
    api.feed("Pod", lambda kind, obj: seen.append(obj.copy()))
    gc = PodGarbageCollector(api, clock=clock)

    assert not await gc.sync_once()  # both nodes exist
    api.delete("Node", "node-1")
    assert not await gc.sync_once()  # quarantined
    clock.advance(QUARANTINE_SECONDS - 1)
    assert not await gc.sync_once()
    assert exists(api, "gone-with-node")
    clock.advance(1)
    assert await gc.sync_once()
    assert not exists(api, "gone-with-node")
    assert exists(api, "stays")
    failed = [p for p in seen if p.name == "gone-with-node" and p.status.get("phase") == "Failed"]
    assert failed, "marked Failed before it was deleted"
    target = [c for c in failed[-1].status["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["reason"] == "DeletionByPodGC"
    assert target[0]["message"] == "PodGC: node no longer exists"


async def test_a_node_back_within_the_quarantine_keeps_its_pods() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1"))
    running_pod(api, "web", "node-1")
    gc = PodGarbageCollector(api, clock=clock)
    api.delete("Node", "node-1")
    await gc.sync_once()
    clock.advance(10)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1"))
    await gc.sync_once()
    clock.advance(QUARANTINE_SECONDS)
    assert not await gc.sync_once()
    assert exists(api, "web")


async def test_the_oldest_terminated_pods_beyond_the_threshold_are_deleted() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1"))
    for i in range(4):
        running_pod(api, f"job-{i}", "node-1")
        pod = api.get("Pod", f"job-{i}", "default")
        pod.status["phase"] = "Succeeded"
        api.update_status(pod)
        clock.advance(1)
    gc = PodGarbageCollector(api, clock=clock, terminated_threshold=2)
    assert await gc.sync_once()
    assert [exists(api, f"job-{i}") for i in range(4)] == [False, False, True, True]
