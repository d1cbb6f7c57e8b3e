"""Leader election over a ``coordination.k8s.io/v1`` Lease, as client-go's
``leaderelection`` package runs it (the lock kube-controller-manager, kube-scheduler and
the CSI sidecars take with ``--leader-elect``), over any
:class:`~kubelet_sim.client.kube_client.KubeClient`.

* A candidate tries to acquire every ``retry_period`` (jittered by up to
  ``jitter_factor`` times it): it creates the Lease when there is none, takes it when
  the holder's lease has run out (``leaseDurationSeconds`` since this candidate last
  saw the record change, measured on its own clock, so clocks of other machines never
  matter) or when it was released (no holder), and otherwise waits.
* The leader renews every ``retry_period``; a renewal that does not succeed within
  ``renew_deadline`` (trying every ``retry_period``) loses the leadership.
* Taking a Lease from another holder sets ``acquireTime`` and adds one to
  ``leaseTransitions``; renewing moves only ``renewTime``. Every write carries the
  resourceVersion read, so two candidates never both win (409 for the slower one).
* On stop a leader with ``release_on_cancel`` releases the Lease: no holder,
  ``leaseDurationSeconds`` 1, so another candidate takes it at once.

Defaults are client-go's and the components': 15 s lease, 10 s renew deadline, 2 s
retry period. Time is the injected :class:`~kubelet_sim.utils.clock.Clock`.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubelet_sim.api.errors import ApiError, NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.utils.clock import Clock, RealClock

log = logging.getLogger(__name__)

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 15.0, 10.0, 2.0
JITTER_FACTOR = 1.2  # client-go's JitterFactor for the acquire loop

Callback = Callable[..., Awaitable[None] | None]


def micro_time(moment: datetime) -> str:
    """``metav1.MicroTime`` as a Lease's times are written: microseconds, UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass(frozen=True)
class LeaderElectionRecord:
    """A Lease's spec as the elector reads and writes it."""

    holder_identity: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str = ""
    renew_time: str = ""
    lease_transitions: int = 0

    @classmethod
    def of(cls, lease: Resource) -> LeaderElectionRecord:
        spec = lease.spec
        return cls(str(spec.get("holderIdentity") or ""),
                   int(spec.get("leaseDurationSeconds") or 0),
                   str(spec.get("acquireTime") or ""), str(spec.get("renewTime") or ""),
                   int(spec.get("leaseTransitions") or 0))

    def spec(self) -> JSON:
        out: JSON = {"leaseDurationSeconds": self.lease_duration_seconds,
                     "leaseTransitions": self.lease_transitions}
        if self.holder_identity:
            out["holderIdentity"] = self.holder_identity
        if self.acquire_time:
            out["acquireTime"] = self.acquire_time
        if self.renew_time:
            out["renewTime"] = self.renew_time
        return out


@dataclass
class LeaderElectionConfig:
    """Which Lease, who this candidate is, the timings and the callbacks:
    ``on_started_leading()`` (may be a coroutine; it is cancelled when the leadership is
    lost), ``on_stopped_leading()``, ``on_new_leader(identity)`` (a plain function, called
when a new holder is seen)."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = LEASE_DURATION
    renew_deadline: float = RENEW_DEADLINE
    retry_period: float = RETRY_PERIOD
    jitter_factor: float = JITTER_FACTOR
    release_on_cancel: bool = True
    on_started_leading: Callback | None = None
    on_stopped_leading: Callback | None = None
    on_new_leader: Callable[[str], None] | None = None
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        # client-go's checks (its jitter factor is the constant 1.2 there)
        if not self.lease_duration > self.renew_deadline > JITTER_FACTOR * \
                self.retry_period > 0:
            raise ValueError("leader election wants lease duration > renew deadline > "
                             f"{JITTER_FACTOR} * retry period > 0")
        if not self.identity:
            raise ValueError("leader election needs an identity")


class LeaderElector:
    """One candidate. ``await run()`` until :meth:`stop` (or the leadership is lost)."""

    def __init__(self, client: KubeClient, config: LeaderElectionConfig,
                 clock: Clock | None = None) -> None:
        self.client, self.config = client, config
        self.clock: Clock = clock or RealClock()
        self.observed: LeaderElectionRecord | None = None
        self._observed_version = ""
        self._observed_at = float("-inf")  # monotonic time the record last changed
        self._reported_leader = ""
        self._stopped = asyncio.Event()

    @property
    def leader(self) -> str:
        """The holder this candidate last saw."""
        return self.observed.holder_identity if self.observed else ""

    @property
    def is_leader(self) -> bool:
        return self.leader == self.config.identity

    def stop(self) -> None:
        self._stopped.set()

    async def run(self) -> None:
        """Acquire, lead (renewing) until stopped or lost, then release."""
        if not await self._acquire():
            return
        leading: asyncio.Task[Any] | None = None
        try:
            if self.config.on_started_leading is not None:
                leading = asyncio.ensure_future(_call(self.config.on_started_leading))
            await self._renew()
        finally:
            if leading is not None:
                leading.cancel()
                await asyncio.gather(leading, return_exceptions=True)
            if self.config.release_on_cancel:
                await self.release()
            if self.config.on_stopped_leading is not None:
                await _call(self.config.on_stopped_leading)

    async def _acquire(self) -> bool:
        while not self._stopped.is_set():
            if await self.try_acquire_or_renew():
                log.info("%s acquired lease %s/%s", self.config.identity, self.config.namespace,
                         self.config.name)
                return True
            period = self.config.retry_period
            jitter = period * self.config.jitter_factor * self.config.rng.random() \
                if self.config.jitter_factor > 0 else 0.0
            await self._wait(period + jitter)
        return False

    async def _renew(self) -> None:
        while not self._stopped.is_set():
            deadline = self.clock.monotonic() + self.config.renew_deadline
            while not await self.try_acquire_or_renew():
                if self._stopped.is_set():
                    return
                if self.clock.monotonic() + self.config.retry_period > deadline:
                    log.info("%s failed to renew lease %s/%s: leadership lost",
                             self.config.identity, self.config.namespace, self.config.name)
                    return
                await self._wait(self.config.retry_period)
            await self._wait(self.config.retry_period)

    async def _wait(self, seconds: float) -> None:
        """Sleep on the clock, or until stopped."""
        sleep = asyncio.ensure_future(self.clock.sleep(seconds))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({sleep, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            stopped.cancel()

    async def try_acquire_or_renew(self) -> bool:
        """One attempt (client-go's ``tryAcquireOrRenew``): True when this candidate
        holds the Lease afterwards."""
        cfg = self.config
        now = micro_time(self.clock.now())
        mine = LeaderElectionRecord(cfg.identity, int(cfg.lease_duration), now, now, 0)
        try:
            lease = await self.client.get("Lease", cfg.name, cfg.namespace)
        except NotFound:
            try:
                created = await self.client.create(new("Lease", cfg.name, cfg.namespace,
                                                       spec=mine.spec()))
            except ApiError as err:
                log.debug("%s: creating lease failed: %s", cfg.identity, err)
                return False
            self._observe(created)
            return True
        except ApiError as err:
            log.debug("%s: reading lease failed: %s", cfg.identity, err)
            return False
        old = LeaderElectionRecord.of(lease)
        if old != self.observed:
            self._observe(lease)
        held_by_other = old.holder_identity and old.holder_identity != cfg.identity
        if held_by_other and self._observed_at + old.lease_duration_seconds > \
                self.clock.monotonic():
            return False
        if old.holder_identity == cfg.identity:
            mine = LeaderElectionRecord(cfg.identity, int(cfg.lease_duration),
                                        old.acquire_time or now, now, old.lease_transitions)
        else:
            mine = LeaderElectionRecord(cfg.identity, int(cfg.lease_duration), now, now,
                                        old.lease_transitions + 1)
        lease.spec = {**lease.spec, **mine.spec()}
        try:
            updated = await self.client.update(lease)
        except ApiError as err:  # a Conflict: another candidate wrote first
            log.debug("%s: updating lease failed: %s", cfg.identity, err)
            return False
        self._observe(updated)
        return True

    async def release(self) -> bool:
        """Give the Lease up (only when held): no holder, a 1 s lease."""
        if not self.is_leader:
            return False
        cfg = self.config
        now = micro_time(self.clock.now())
        try:
            lease = await self.client.get("Lease", cfg.name, cfg.namespace)
            if LeaderElectionRecord.of(lease).holder_identity != cfg.identity:
                return False
            released = LeaderElectionRecord("", 1, now, now,
                                            self.observed.lease_transitions
                                            if self.observed else 0)
            lease.spec = released.spec()
            self._observe(await self.client.update(lease))
        except ApiError as err:
            log.info("%s: releasing lease failed: %s", cfg.identity, err)
            return False
        return True

    def _observe(self, lease: Resource) -> None:
        record = LeaderElectionRecord.of(lease)
        if record != self.observed:
            self._observed_at = self.clock.monotonic()
        self.observed, self._observed_version = record, lease.metadata.resource_version
        if record.holder_identity and record.holder_identity != self._reported_leader:
            self._reported_leader = record.holder_identity
            if self.config.on_new_leader is not None:
                self.config.on_new_leader(record.holder_identity)


async def _call(fn: Callback) -> None:
    result = fn()
    if inspect.isawaitable(result):
        await result
