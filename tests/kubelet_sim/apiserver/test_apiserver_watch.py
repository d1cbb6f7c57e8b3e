"""API server: watch history, live watches, Gone, injected conflicts and retry."""

from __future__ import annotations

import asyncio

import pytest

from kubelet_sim.api.errors import Conflict, Gone
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.watch import WatchEvent
from kubelet_sim.client.retry import retry_on_conflict, retry_on_conflict_async
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.utils.clock import Backoff


def pod(name: str, labels: dict[str, str] | None = None) -> Resource:
    return new("Pod", name, "default", labels=labels,
               spec={"containers": [{"name": "c", "image": "busybox"}]})


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def test_events_since_an_index_are_exactly_the_later_writes(api: APIServer) -> None:
    api.create(pod("a"))
    mark = api.resource_version
    b = api.create(pod("b"))
    b.labels["x"] = "1"
    b = api.update(b)
    api.delete("Pod", "a", "default")
    events = api.events_since(mark, kind="Pod")
    assert [(e.type, e.object.name) for e in events] == [
        ("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "a")]
    versions = [e.resource_version for e in events]
    assert versions == sorted(versions) and versions[0] > int(mark)
    assert events[1].object.labels == {"x": "1"}


def test_watch_from_an_index_replays_then_goes_live(api: APIServer) -> None:
    api.create(pod("a"))
    mark = api.resource_version
    api.create(pod("b"))
    with api.watch("Pod", resource_version=mark) as w:
        api.create(pod("c"))
        assert [e.object.name for e in w.drain()] == ["b", "c"]


def test_watch_from_a_too_old_index_fails_gone() -> None:
    api = APIServer(clock=FakeClock(), history_limit=3)
    first = api.create(pod("p0"))
    for i in range(1, 5):
        api.create(pod(f"p{i}"))
    with pytest.raises(Gone) as err:
        api.watch("Pod", resource_version=first.metadata.resource_version)
    assert err.value.code == 410
    recent = int(api.resource_version) - 3
    assert len(api.events_since(recent)) == 3


def test_watch_without_index_starts_with_current_objects(api: APIServer) -> None:
    api.create(pod("a"))
    with api.watch("Pod") as w:
        assert [(e.type, e.object.name) for e in w.drain()] == [("ADDED", "a")]


async def test_live_watch_receives_events_in_order(api: APIServer) -> None:
    w = api.watch("Pod", resource_version=api.resource_version)

    async def consume() -> list[tuple[str, str]]:
        return [(e.type, e.object.name) async for e in w]

    task = asyncio.create_task(consume())
    await asyncio.sleep(0)
    obj = api.create(pod("a"))
    obj.labels["v"] = "2"
    api.update(obj)
    api.create(new("Namespace", "noise"))  # another kind: filtered out
    api.delete("Pod", "a", "default")
    w.stop()
    assert await task == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]


async def test_watch_with_selector_sees_objects_enter_and_leave(api: APIServer) -> None:
    w = api.watch("Pod", label_selector="app=web", resource_version=api.resource_version)
    obj = api.create(pod("a", {"app": "db"}))
    obj.labels["app"] = "web"
    obj = api.update(obj)
    obj.labels["app"] = "db"
    api.update(obj)
    got = [(e.type, e.object.labels.get("app")) for e in w.drain()]
    assert got == [("ADDED", "web"), ("DELETED", "web")]
    w.stop()


async def test_watch_filters_by_namespace(api: APIServer) -> None:
    api.create(new("Namespace", "other"))
    w = api.watch("Pod", namespace="other", resource_version=api.resource_version)
    api.create(pod("a"))
    api.create(new("Pod", "b", "other", spec={"containers": [{"name": "c", "image": "i"}]}))
    assert [e.object.name for e in w.drain()] == ["b"]
    w.stop()


def test_stopped_watch_receives_nothing_more(api: APIServer) -> None:
    w = api.watch("Pod", resource_version=api.resource_version)
    w.stop()
    api.create(pod("a"))
    assert w.drain() == []


def test_injected_conflicts_fail_the_next_updates_of_that_kind(api: APIServer) -> None:
    obj = api.create(pod("a"))
    api.inject_conflicts("Pod", 2)
    obj.labels["x"] = "1"
    for _ in range(2):
        with pytest.raises(Conflict):
            api.update(obj)
    assert api.update(obj).labels == {"x": "1"}


def test_injected_conflicts_leave_other_kinds_alone(api: APIServer) -> None:
    api.inject_conflicts("Pod", 1)
    ns = api.get("Namespace", "default")
    ns.labels["x"] = "y"
    assert api.update(ns).labels["x"] == "y"


def test_retry_on_conflict_rereads_and_succeeds_after_injected_conflicts(
        api: APIServer) -> None:
    api.create(pod("a"))
    api.inject_conflicts("Pod", 3)
    clock = FakeClock()
    attempts = []

    def relabel() -> Resource:
        attempts.append(1)
        current = api.get("Pod", "a", "default")
        current.labels["n"] = str(len(attempts))
        return api.update(current)

    result = retry_on_conflict(relabel, Backoff(duration=0.01, steps=5), clock)
    assert result.labels["n"] == "4" and len(attempts) == 4
    assert clock.sleeps == [0.01, 0.01, 0.01]


def test_retry_on_conflict_gives_up_after_its_steps(api: APIServer) -> None:
    api.create(pod("a"))
    api.inject_conflicts("Pod", 10)

    def relabel() -> Resource:
        current = api.get("Pod", "a", "default")
        current.labels["n"] = "1"
        return api.update(current)

    with pytest.raises(Conflict):
        retry_on_conflict(relabel, Backoff(duration=0.01, steps=3), FakeClock())


async def test_async_retry_on_conflict_sleeps_on_the_clock(api: APIServer) -> None:
    api.create(pod("a"))
    api.inject_conflicts("Pod", 1, verbs=("update_status",))
    clock = FakeClock()

    async def set_running() -> Resource:
        current = api.get("Pod", "a", "default")
        current.status["phase"] = "Running"
        return api.update_status(current)

    task = asyncio.create_task(retry_on_conflict_async(set_running, Backoff(0.5, steps=2), clock))
    while clock.pending_sleepers == 0:
        await asyncio.sleep(0)
    clock.advance(0.5)
    assert (await task).status["phase"] == "Running"


async def test_writes_from_worker_threads_reach_a_live_watch_in_order(api: APIServer) -> None:
    w = api.watch("Pod", resource_version=api.resource_version)

    def write_from_thread() -> None:
        for i in range(20):
            api.create(pod(f"p{i}"))

    await asyncio.to_thread(write_from_thread)
    events: list[WatchEvent | None] = []
    while len(events) < 20:
        events.append(await w.next())
    w.stop()
    assert [e.object.name for e in events if e] == [f"p{i}" for i in range(20)]
