"""A watch sees the commits in resourceVersion order and all of them, whichever thread
wrote: the consumer's own event loop or another thread (a controller's loop, a worker)."""

from __future__ import annotations

import asyncio
import threading

from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.watch import ADDED, Change, Watch
from kubelet_sim.testing.fake_clock import FakeClock

WRITES_PER_WRITER = 300


def lease(name: str, version: int) -> Resource:
    obj = new("Lease", name, "default", spec={})
    obj.metadata.resource_version = str(version)
    return obj


class Committer:
    """A stand-in for the API server's commit: a lock and a counter, offered to watches
    under the lock, as the store does."""

    def __init__(self, watches: list[Watch]) -> None:
        self.lock = threading.Lock()
        self.version = 0
        self.watches = watches

    def commit(self, name: str) -> None:
        with self.lock:
            self.version += 1
            change = Change(ADDED, lease(name, self.version), None)
            for w in self.watches:
                w._offer(change)


async def _collect(watch: Watch, count: int) -> list[int]:
    seen: list[int] = []
    while len(seen) < count:
        event = await asyncio.wait_for(watch.next(), 10)
        assert event is not None
        seen.append(event.resource_version)
    return seen


def test_a_watch_sees_writes_from_its_own_loop_and_another_thread_in_commit_order() -> None:
    async def scenario() -> list[list[int]]:
        watches = [Watch(None, lambda _o: True, lambda _w: None) for _ in range(5)]
        committer = Committer(watches)

        def other_thread() -> None:
            for i in range(WRITES_PER_WRITER):
                committer.commit(f"thread-{i}")

        async def own_loop() -> None:
            for i in range(WRITES_PER_WRITER):
                committer.commit(f"loop-{i}")
                if i % 10 == 0:
                    await asyncio.sleep(0)

        writer = threading.Thread(target=other_thread)
        writer.start()
        collected = asyncio.gather(*(_collect(w, 2 * WRITES_PER_WRITER) for w in watches))
        await own_loop()
        seen = await collected
        writer.join()
        return seen

    for seen in asyncio.run(scenario()):
        assert seen == list(range(1, 2 * WRITES_PER_WRITER + 1))


def test_api_server_watches_see_every_write_of_two_threads_strictly_increasing() -> None:
    api = APIServer(clock=FakeClock())

    async def scenario() -> tuple[list[list[int]], int]:
        start = int(api.resource_version)
        watches = [api.watch("Lease", resource_version=start) for _ in range(5)]

        def other_thread() -> None:
            for i in range(WRITES_PER_WRITER):
                api.create(new("Lease", f"thread-{i}", "default", spec={}))

        writer = threading.Thread(target=other_thread)
        writer.start()
        collected = asyncio.gather(*(_collect(w, 2 * WRITES_PER_WRITER) for w in watches))
        for i in range(WRITES_PER_WRITER):
            api.create(new("Lease", f"loop-{i}", "default", spec={}))
            if i % 10 == 0:
                await asyncio.sleep(0)
        seen = await collected
        writer.join()
        for w in watches:
            w.stop()
        return seen, start

    seen, start = asyncio.run(scenario())
    for versions in seen:
        assert versions == list(range(start + 1, start + 2 * WRITES_PER_WRITER + 1))


def test_a_stopped_watch_ends_after_what_was_queued_and_drain_keeps_the_end() -> None:
    w = Watch(None, lambda _o: True, lambda _w: None)
    w._offer(Change(ADDED, lease("a", 1), None))
    w._offer(Change(ADDED, lease("b", 2), None))
    w.stop()

    async def read() -> tuple[int | None, list[int], bool]:
        first = await w.next()
        rest = w.drain()
        ended = await w.next() is None and await w.next() is None
        return first.resource_version if first else None, \
            [e.resource_version for e in rest], ended

    assert asyncio.run(read()) == (1, [2], True)
