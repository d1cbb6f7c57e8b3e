"""Pod workers: one worker per pod at a time, at most ``limit`` pods synced at once, a
finished worker wakes the loop, and a worker that raises frees its pod."""

from __future__ import annotations

import asyncio
import functools

import pytest

from kubelet_sim.kubelet.pod_workers import PodWorkers


async def test_no_more_than_the_limit_of_pods_sync_at_once_and_each_pod_has_one_worker(
) -> None:
    running, most = 0, 0
    done: list[str] = []
    release = asyncio.Event()

    async def sync(uid: str) -> bool:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await release.wait()
        running -= 1
        done.append(uid)
        return True

    wakeups: list[str] = []
    workers = PodWorkers(limit=3, on_done=lambda uid, changed, again: wakeups.append(uid))
    for i in range(7):
        workers.dispatch(f"pod-{i}", functools.partial(sync, f"pod-{i}"))
    assert workers.busy("pod-0") and workers.in_flight == 7
    await asyncio.sleep(0.05)
    assert running == 3  # the other four wait for a slot
    release.set()
    assert await workers.wait() is True
    assert most == 3 and sorted(done) == [f"pod-{i}" for i in range(7)]
    assert len(wakeups) == 7 and workers.in_flight == 0 and not workers.busy("pod-0")


async def test_a_worker_that_raises_frees_its_pod_for_the_next_pass() -> None:
    async def broken() -> bool:
        raise RuntimeError("the runtime went away")

    workers = PodWorkers(limit=1)
    workers.dispatch("pod-1", broken)
    assert await workers.wait() is True  # reported as a change: the loop passes again
    assert not workers.busy("pod-1")


def test_at_least_one_worker() -> None:
    with pytest.raises(ValueError):
        PodWorkers(limit=0)
