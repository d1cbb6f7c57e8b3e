"""A clock that moves only when a test moves it (the fake of kubelet_sim.utils.clock.Clock)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock that moves only when told to.

    ``sleep`` parks the caller until :meth:`advance` moves time past its deadline;
    ``sleep_sync`` (nobody else can advance while the thread blocks) advances time itself.
    Every sleep is recorded in :attr:`sleeps` so tests can assert a backoff sequence.
    """

    def __init__(self, start: datetime | None = None) -> None:
        self._start = start or datetime(2025, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self._elapsed + seconds, next(self._seq), future))
        await future

    def sleep_sync(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has passed."""
        if seconds < 0:
            raise ValueError("a clock cannot go back")
        self._elapsed += seconds
        while self._waiters and self._waiters[0][0] <= self._elapsed:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)

    @property
    def pending_sleepers(self) -> int:
        """Tasks currently parked in :meth:`sleep`."""
        return sum(1 for _, _, f in self._waiters if not f.done())
