"""The list-watch informer built on the API server's watch."""

from __future__ import annotations

import asyncio

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.informer import Handlers, Informer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock(), history_limit=5)


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def handlers(self) -> Handlers:
        return Handlers(
            on_add=lambda o: self.seen.append(("add", o.name)),
            on_update=lambda old, new: self.seen.append(("update", new.name)),
            on_delete=lambda o: self.seen.append(("delete", o.name)),
        )


async def settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


async def test_informer_lists_then_follows_changes_in_order(api: APIServer) -> None:
    api.create(b.pod("a"))
    informer, rec = Informer(api, "Pod"), Recorder()
    informer.add_handlers(rec.handlers())
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    obj = api.create(b.pod("b"))
    obj.labels["x"] = "1"
    api.update(obj)
    api.delete("Pod", "a", "default")
    await settle()
    informer.stop()
    await task
    assert rec.seen == [("add", "a"), ("add", "b"), ("update", "b"), ("delete", "a")]
    assert [p.name for p in informer.items()] == ["b"]
    cached = informer.get("b", "default")
    assert cached is not None and cached.labels == {"x": "1"}


async def test_informer_resumes_after_dropped_watch_without_losing_events(
        api: APIServer) -> None:
    informer, rec = Informer(api, "Pod"), Recorder()
    informer.add_handlers(rec.handlers())
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    api.close_watches()
    api.create(b.pod("a"))  # written while the informer is between watches
    await settle()
    informer.stop()
    await task
    assert rec.seen == [("add", "a")] and informer.relists == 0


async def test_informer_relists_when_its_version_is_gone(api: APIServer) -> None:
    api.create(b.pod("old"))
    informer, rec = Informer(api, "Pod"), Recorder()
    informer.add_handlers(rec.handlers())
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    api.close_watches()
    api.delete("Pod", "old", "default")
    for i in range(8):  # more writes than the history keeps
        api.create(b.pod(f"p{i}"))
    await settle()
    informer.stop()
    await task
    assert informer.relists == 1
    assert ("delete", "old") in rec.seen
    assert sorted(p.name for p in informer.items()) == [f"p{i}" for i in range(8)]


async def test_informer_filters_by_selector_and_survives_a_failing_handler(
        api: APIServer) -> None:
    informer = Informer(api, "Pod", label_selector="app=web")
    got: list[Resource] = []

    async def boom(obj: Resource) -> None:
        raise RuntimeError("handler bug")

    informer.add_handlers(Handlers(on_add=boom))
    informer.add_handlers(Handlers(on_add=got.append))
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    api.create(b.pod("db", labels={"app": "db"}))
    api.create(b.pod("web", labels={"app": "web"}))
    await settle()
    informer.stop()
    await task
    assert [o.name for o in got] == ["web"]
