"""client-go's client-side rate limit (``flowcontrol.NewTokenBucketRateLimiter``): a
bucket of ``burst`` tokens, full at the start, refilled at ``qps`` tokens a second; each
request takes one, waiting for it when the bucket is empty. rest.Config's defaults are
5 QPS and a burst of 10.

The waits are on an injected :class:`~kubelet_sim.utils.clock.Clock`, so a test moves
time instead of waiting for it. Waiters are served in arrival order: a token is reserved
when a request arrives, and the request sleeps until its reservation comes due.
"""

from __future__ import annotations

from kubelet_sim.utils.clock import Clock, RealClock

DEFAULT_QPS = 5.0
DEFAULT_BURST = 10


class TokenBucket:
    """``qps`` <= 0 turns the limit off (as client-go's rest.Config with QPS < 0)."""

    def __init__(self, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST,
                 clock: Clock | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError("burst must be at least 1 when qps is set")
        self.qps, self.burst = qps, burst
        self.clock: Clock = clock or RealClock()
        self._tokens = float(burst)  # may go negative: reservations not yet due
        self._last = self.clock.monotonic()

    def _refill(self) -> None:
        now = self.clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now

    def try_accept(self) -> bool:
        """Take a token if one is there now (client-go's ``TryAccept``)."""
        if self.qps <= 0:
            return True
        self._refill()
        if self._tokens >= 1:
            self._tokens -= 1
            return True
        return False

    def reserve(self) -> float:
        """Take the next token, due or not; the seconds until it is due."""
        if self.qps <= 0:
            return 0.0
        self._refill()
        self._tokens -= 1
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def accept(self) -> float:
        """Wait for a token (client-go's ``Wait``); the seconds waited."""
        delay = self.reserve()
        if delay > 0:
            await self.clock.sleep(delay)
        return delay
