"""Time as the simulator's components see it (the fake for tests is in
:mod:`kubelet_sim.testing.fake_clock`).

Components take a :class:`Clock` and never call ``time``/``asyncio.sleep`` directly, so a
test can drive backoff and timeouts with ``FakeClock`` deterministically:
``await clock.sleep(5)`` in the component parks until the test calls
``clock.advance(5)``.

:class:`Backoff` is client-go's ``wait.Backoff`` (duration, factor, jitter, steps, cap).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """What components need from time."""

    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC (for timestamps in objects)."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations and deadlines)."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Suspend the calling task for ``seconds``."""
        ...

    def sleep_sync(self, seconds: float) -> None:
        """Block the calling thread for ``seconds`` (synchronous retry loops)."""
        ...


class RealClock:
    """The system clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def sleep_sync(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))


@dataclass
class Backoff:
    """client-go's ``wait.Backoff``: ``steps`` attempts; the delay starts at ``duration``,
    is multiplied by ``factor`` after each step, capped at ``cap`` (0 = no cap), and each
    delay gets up to ``jitter * delay`` added at random."""

    duration: float = 0.01
    factor: float = 1.0
    jitter: float = 0.0
    steps: int = 5
    cap: float = 0.0

    def delays(self, rng: random.Random | None = None) -> list[float]:
        """The ``steps - 1`` sleeps between ``steps`` attempts."""
        out: list[float] = []
        delay = self.duration
        for _ in range(max(0, self.steps - 1)):
            extra = delay * self.jitter * (rng or random).random() if self.jitter else 0.0
            out.append(delay + extra)
            delay = delay * self.factor
            if self.cap:
                delay = min(delay, self.cap)
        return out


# client-go's retry.DefaultRetry and retry.DefaultBackoff.
DEFAULT_RETRY = Backoff(duration=0.01, factor=1.0, jitter=0.1, steps=5)
DEFAULT_BACKOFF = Backoff(duration=0.01, factor=5.0, jitter=0.1, steps=4)


class ExponentialBackoff:
    """Per-operation exponential backoff, as kubelet's volume manager keeps it
    (``exponentialbackoff``: 500 ms initial, doubling, capped at 2 min 2 s).

    Call :meth:`failed` after an error and :meth:`ready` before retrying.
    """

    def __init__(
        self, clock: Clock, initial: float = 0.5, factor: float = 2.0, cap: float = 122.0
    ) -> None:
        self._clock, self.initial, self.factor, self.cap = clock, initial, factor, cap
        self._delay: dict[str, float] = {}
        self._not_before: dict[str, float] = {}

    def failed(self, key: str) -> float:
        """Record a failure of ``key``; returns the delay before the next attempt."""
        prev = self._delay.get(key)
        delay = self.initial if prev is None else min(prev * self.factor, self.cap)
        self._delay[key] = delay
        self._not_before[key] = self._clock.monotonic() + delay
        return delay

    def ready(self, key: str) -> bool:
        """True when ``key`` may be attempted now."""
        return self._clock.monotonic() >= self._not_before.get(key, float("-inf"))

    def wait(self, key: str) -> float:
        """Seconds until ``key`` may be attempted (0 when it may now)."""
        return max(0.0, self._not_before.get(key, float("-inf")) - self._clock.monotonic())

    def succeeded(self, key: str) -> None:
        """Forget ``key``'s backoff."""
        self._delay.pop(key, None)
        self._not_before.pop(key, None)
