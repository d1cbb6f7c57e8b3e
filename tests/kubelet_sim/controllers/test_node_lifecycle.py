"""The node lifecycle controller and the taint eviction controller, on a fake clock: a
node whose heartbeats stop is Unknown after the grace period, tainted unreachable, its
pods not ready; the kubelet's Ready condition drives the not-ready taints; NoExecute
taints evict pods after their toleration seconds (the DefaultTolerationSeconds 300 s)."""

from __future__ import annotations

from datetime import datetime

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, condition, format_time
from kubelet_sim.api.taints import NO_EXECUTE, NO_SCHEDULE, NOT_READY, UNREACHABLE
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.in_process import as_client
from kubelet_sim.controllers.node_lifecycle import NodeLifecycleController
from kubelet_sim.controllers.taint_eviction import TaintEvictionController
from kubelet_sim.kubelet.node_lease import ensure_lease_namespace, renew_node_lease
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(clock: FakeClock) -> APIServer:
    api = APIServer(clock=clock)
    ensure_lease_namespace(api)
    return api


@pytest.fixture
def recorder(api: APIServer) -> EventRecorder:
    return EventRecorder(api)


def post_ready(api: APIServer, name: str, now: datetime, status: str = "True") -> None:
    """What the kubelet writes: its Ready condition with a heartbeat."""
    node = api.get("Node", name)
    stamp = format_time(now)
    node.status["conditions"] = [{"type": "Ready", "status": status, "reason": "KubeletReady",
                                  "message": "kubelet is posting ready status",
                                  "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}]
    api.update_status(node)


def running_pod(api: APIServer, name: str, node: str,
                tolerations: list[JSON] | None = None) -> Resource:
    pod = builders.pod(name, node_name=node)
    if tolerations is not None:
        pod.spec["tolerations"] = tolerations
    api.create(pod)
    created = api.get("Pod", name, "default")
    created.status = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}
    return api.update_status(created)


def taints(api: APIServer, node: str) -> list[tuple[str, str]]:
    return [(t["key"], t["effect"]) for t in api.get("Node", node).spec.get("taints") or []]


async def test_a_node_that_stops_heartbeating_is_unknown_tainted_and_its_pods_not_ready(
    api: APIServer, clock: FakeClock, recorder: EventRecorder,
) -> None:
    api.create(builders.node("n1"))
    post_ready(api, "n1", clock.now())
    await renew_node_lease(as_client(api), "n1", clock.now())
    running_pod(api, "web", "n1")
    nlc = NodeLifecycleController(api, clock=clock, recorder=recorder, grace_period=50)

    clock.advance(40)
    await renew_node_lease(as_client(api), "n1", clock.now())  # the Lease alone keeps it alive
    clock.advance(49)
    await nlc.sync_once()
    assert condition(api.get("Node", "n1"), "Ready")["status"] == "True"  # type: ignore[index]
    assert taints(api, "n1") == []

    clock.advance(2)  # 51 s since the last renewal
    await nlc.sync_once()
    node = api.get("Node", "n1")
    conds = {c["type"]: c for c in node.status["conditions"]}
    assert (conds["Ready"]["status"], conds["Ready"]["reason"], conds["Ready"]["message"]) == (
        "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    for kind in ("MemoryPressure", "DiskPressure", "PIDPressure"):  # never posted here
        assert (conds[kind]["status"], conds[kind]["reason"]) == (
            "Unknown", "NodeStatusNeverUpdated")
    assert taints(api, "n1") == [(UNREACHABLE, NO_SCHEDULE), (UNREACHABLE, NO_EXECUTE)]
    no_execute = node.spec["taints"][1]
    assert no_execute["timeAdded"] == format_time(clock.now())
    assert condition(api.get("Pod", "web", "default"), "Ready")["status"] == "False"  # type: ignore[index]
    assert [e.reason for e in recorder.for_object("Node", "n1")] == [
        "RegisteredNode", "NodeNotReady"]
    assert [e.reason for e in recorder.for_object("Pod", "web", "default")] == ["NodeNotReady"]

    await nlc.sync_once()  # nothing more to do: no repeated marking
    assert [(e.reason, e.count) for e in recorder.for_object("Node", "n1")] == [
        ("RegisteredNode", 1), ("NodeNotReady", 1)]

    await renew_node_lease(as_client(api), "n1", clock.now())  # the kubelet is back
    post_ready(api, "n1", clock.now())
    await nlc.sync_once()
    assert taints(api, "n1") == []


async def test_the_kubelets_ready_condition_drives_the_not_ready_taints(
    api: APIServer, clock: FakeClock,
) -> None:
    api.create(builders.node("n1"))
    node = api.get("Node", "n1")
    node.spec["taints"] = [{"key": "example.com/gpu", "effect": NO_SCHEDULE}]
    api.update(node)
    post_ready(api, "n1", clock.now(), status="False")  # e.g. CNI STATUS failing
    await renew_node_lease(as_client(api), "n1", clock.now())
    nlc = NodeLifecycleController(api, clock=clock)
    await nlc.sync_once()
    assert taints(api, "n1") == [("example.com/gpu", NO_SCHEDULE), (NOT_READY, NO_SCHEDULE),
                                 (NOT_READY, NO_EXECUTE)]
    post_ready(api, "n1", clock.now(), status="True")
    await nlc.sync_once()
    assert taints(api, "n1") == [("example.com/gpu", NO_SCHEDULE)]  # the user's taint stays


async def test_a_node_whose_kubelet_never_posted_gets_the_startup_grace_period(
    api: APIServer, clock: FakeClock,
) -> None:
    api.create(builders.node("n1"))
    nlc = NodeLifecycleController(api, clock=clock, grace_period=50, startup_grace_period=60)
    clock.advance(55)
    await nlc.sync_once()
    assert condition(api.get("Node", "n1"), "Ready") is None
    clock.advance(6)
    await nlc.sync_once()
    ready = condition(api.get("Node", "n1"), "Ready")
    assert ready is not None and (ready["status"], ready["reason"]) == (
        "Unknown", "NodeStatusNeverUpdated")
    assert taints(api, "n1") == [(UNREACHABLE, NO_SCHEDULE), (UNREACHABLE, NO_EXECUTE)]


def test_every_new_pod_tolerates_a_lost_node_for_300_seconds_unless_it_says_otherwise(
    api: APIServer,
) -> None:
    plain = api.create(builders.pod("plain"))
    assert plain.spec["tolerations"] == [
        {"key": NOT_READY, "operator": "Exists", "effect": NO_EXECUTE, "tolerationSeconds": 300},
        {"key": UNREACHABLE, "operator": "Exists", "effect": NO_EXECUTE,
         "tolerationSeconds": 300}]
    everything = builders.pod("everything")
    everything.spec["tolerations"] = [{"operator": "Exists"}]
    assert api.create(everything).spec["tolerations"] == [{"operator": "Exists"}]
    blind = builders.pod("plain")  # a PUT without them gets them again
    blind.labels["x"] = "y"
    assert len(api.update(blind).spec["tolerations"]) == 2


async def test_no_execute_taints_evict_after_the_tolerated_seconds(
    api: APIServer, clock: FakeClock, recorder: EventRecorder,
) -> None:
    api.create(builders.node("n1"))
    node = api.get("Node", "n1")
    node.spec["taints"] = [{"key": UNREACHABLE, "effect": NO_EXECUTE,
                            "timeAdded": format_time(clock.now())}]
    api.update(node)
    running_pod(api, "default-300", "n1")
    running_pod(api, "short", "n1", [{"key": UNREACHABLE, "operator": "Exists",
                                      "effect": NO_EXECUTE, "tolerationSeconds": 5}])
    running_pod(api, "forever", "n1", [{"key": UNREACHABLE, "operator": "Exists",
                                        "effect": NO_EXECUTE}])
    evictor = TaintEvictionController(api, clock=clock, recorder=recorder)

    def terminating() -> list[str]:
        return sorted(p.name for p in api.list("Pod").items if p.is_terminating)

    await evictor.sync_once()
    assert terminating() == []
    clock.advance(6)
    await evictor.sync_once()
    assert terminating() == ["short"]
    clock.advance(295)
    await evictor.sync_once()
    assert terminating() == ["default-300", "short"]
    event = recorder.for_object("Pod", "short", "default")[0]
    assert (event.reason, event.message) == ("TaintManagerEviction",
                                             "Marking for deletion Pod default/short")

    node = api.get("Node", "n1")
    node.spec["taints"].append({"key": "example.com/broken", "effect": NO_EXECUTE,
                                "timeAdded": format_time(clock.now())})
    api.update(node)
    await evictor.sync_once()  # "forever" does not tolerate this one: out at once
    assert terminating() == ["default-300", "forever", "short"]
