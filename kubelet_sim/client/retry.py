"""client-go's retry on conflict (``retry.RetryOnConflict``), sync and async."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from kubelet_sim.api.errors import Conflict
from kubelet_sim.utils.clock import DEFAULT_RETRY, Backoff, Clock, RealClock

T = TypeVar("T")


def retry_on_conflict(
    fn: Callable[[], T], backoff: Backoff = DEFAULT_RETRY, clock: Clock | None = None
) -> T:
    """client-go's ``retry.RetryOnConflict``: call ``fn`` up to ``backoff.steps`` times,
    sleeping between attempts while it raises :class:`Conflict`; other errors and the
    last Conflict propagate. ``fn`` must re-read the object each time."""
    delays = backoff.delays()
    sleeper = clock or RealClock()
    for attempt in range(backoff.steps):
        try:
            return fn()
        except Conflict:
            if attempt == backoff.steps - 1:
                raise
            sleeper.sleep_sync(delays[attempt])
    raise AssertionError("unreachable: backoff.steps must be >= 1")


async def retry_on_conflict_async(
    fn: Callable[[], Awaitable[T]], backoff: Backoff = DEFAULT_RETRY, clock: Clock | None = None
) -> T:
    """:func:`retry_on_conflict` for coroutine functions; sleeps with ``clock.sleep``."""
    delays = backoff.delays()
    sleeper = clock or RealClock()
    for attempt in range(backoff.steps):
        try:
            return await fn()
        except Conflict:
            if attempt == backoff.steps - 1:
                raise
            await sleeper.sleep(delays[attempt])
    raise AssertionError("unreachable: backoff.steps must be >= 1")
