"""Clocks and backoff used by the API server's clients."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime

from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.utils.clock import Backoff, ExponentialBackoff, RealClock


async def test_fake_clock_sleep_waits_for_advance() -> None:
    clock = FakeClock(datetime(2030, 1, 1, tzinfo=UTC))
    task = asyncio.create_task(clock.sleep(5))
    await asyncio.sleep(0)
    clock.advance(4.9)
    await asyncio.sleep(0)
    assert not task.done()
    clock.advance(0.1)
    await task
    assert clock.now() == datetime(2030, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert clock.monotonic() == 5


async def test_fake_clock_wakes_sleepers_in_deadline_order() -> None:
    clock = FakeClock()
    order: list[int] = []

    async def sleeper(seconds: int) -> None:
        await clock.sleep(seconds)
        order.append(seconds)

    tasks = [asyncio.create_task(sleeper(s)) for s in (3, 1, 2)]
    await asyncio.sleep(0)
    assert clock.pending_sleepers == 3
    clock.advance(10)
    await asyncio.gather(*tasks)
    assert order == [1, 2, 3]


def test_backoff_delays_grow_by_factor_up_to_cap() -> None:
    delays = Backoff(duration=1, factor=2, steps=6, cap=5).delays()
    assert delays == [1, 2, 4, 5, 5]


def test_backoff_jitter_adds_at_most_the_jitter_fraction() -> None:
    delays = Backoff(duration=1, factor=1, jitter=0.5, steps=50).delays(random.Random(7))
    assert all(1 <= d <= 1.5 for d in delays) and len(set(delays)) > 1


def test_exponential_backoff_doubles_until_cap_and_resets_on_success() -> None:
    clock = FakeClock()
    backoff = ExponentialBackoff(clock, initial=0.5, factor=2, cap=2)
    assert [backoff.failed("op") for _ in range(4)] == [0.5, 1, 2, 2]
    assert not backoff.ready("op")
    clock.advance(2)
    assert backoff.ready("op")
    backoff.succeeded("op")
    assert backoff.failed("op") == 0.5


def test_real_clock_is_timezone_aware_utc() -> None:
    assert RealClock().now().tzinfo is UTC
