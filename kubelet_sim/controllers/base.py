"""What every cluster controller shares: a reconcile pass, a watch-driven run loop, per-object
backoff, and a manager that settles a set of controllers.

A controller is level-triggered, as Kubernetes controllers are: :meth:`Controller.sync_once`
looks at every relevant object and moves each one step towards its desired state, returning
True when it wrote anything. :meth:`Controller.run` wakes on watch events for the kinds the
controller cares about (and on a resync period), then runs a pass. An error on one object
puts that object on exponential backoff (``clock.ExponentialBackoff``: 500 ms doubling,
capped) and never stops the loop or the other objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

from kubelet_sim.api.errors import Gone
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.indexes import add_indexes
from kubelet_sim.client.shared_cache import SharedCache, shared_cache
from kubelet_sim.utils.clock import Clock, ExponentialBackoff, RealClock
from kubelet_sim.utils.wakeup import wait_any

log = logging.getLogger(__name__)

DEFAULT_RESYNC_SECONDS = 30.0


class Controller(ABC):
    """Base of every controller. Subclasses set :attr:`name` and :attr:`kinds` and implement
    :meth:`reconcile`, calling :meth:`step` once per object."""

    name: str = "controller"
    kinds: tuple[str, ...] = ()

    def __init__(
        self,
        api: APIServer,
        *,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        resync_seconds: float = DEFAULT_RESYNC_SECONDS,
    ) -> None:
        self.api = api
        # what a pass reads (never modifies): the shared informer cache, with the indexes
        self.cache: SharedCache = add_indexes(shared_cache(api))
        self.clock: Clock = clock or api.clock or RealClock()
        self.recorder = recorder or EventRecorder(api)
        self.resync_seconds = resync_seconds
        self.backoff = ExponentialBackoff(self.clock)
        self.errors: dict[str, str] = {}  # object key -> last error, while it backs off
        self._next_retry: float | None = None
        self._retry_at: dict[str, float] = {}

    # -- one pass -----------------------------------------------------------------------

    @abstractmethod
    async def reconcile(self) -> bool:
        """One pass over every relevant object; True when anything was written."""

    async def sync_once(self) -> bool:
        self._next_retry = None
        return await self.reconcile()

    async def step(self, key: str, action: Callable[..., Awaitable[bool]], *args: Any) -> bool:
        """Run one object's reconcile step under its backoff: skipped while backing off;
        an exception is logged, remembered in :attr:`errors` and backs the key off."""
        if not self.backoff.ready(key):
            self._note_retry(key)
            return False
        try:
            changed = await action(*args)
        except Exception as err:  # one object's failure must not stop the pass
            delay = self.backoff.failed(key)
            self._retry_at[key] = self.clock.monotonic() + delay
            self.errors[key] = str(err)
            log.info("%s: %s failed (retry in %.1fs): %s", self.name, key, delay, err)
            self._note_retry(key, delay)
            return False
        self.backoff.succeeded(key)
        self.errors.pop(key, None)
        self._retry_at.pop(key, None)
        return changed

    def _note_retry(self, key: str, delay: float | None = None) -> None:
        if delay is None:
            delay = max(0.0, self._retry_at.get(key, 0.0) - self.clock.monotonic())
        if self._next_retry is None or delay < self._next_retry:
            self._next_retry = delay

    def event(self, obj_kind: str, namespace: str, name: str, event_type: str, reason: str,
              message: str) -> None:
        self.recorder.record(obj_kind, namespace, name, event_type, reason, message, self.name)

    # -- run loop -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after every change of :attr:`kinds` (the shared cache tells, as an
        informer's event handlers do), on the resync period, and when an object's backoff
        expires; until ``stop`` is set."""
        dirty = asyncio.Event()
        unsubscribe = self.cache.notify(self.kinds, dirty)
        try:
            while not stop.is_set():
                dirty.clear()
                try:
                    changed = await self.sync_once()
                except Exception:  # the loop never dies
                    log.exception("%s: pass failed", self.name)
                    changed = False
                if changed:
                    continue  # our own writes may enable more work: pass again at once
                timeout = self.resync_seconds
                if self._next_retry is not None:
                    timeout = min(timeout, self._next_retry)
                await wait_any(stop, dirty, self.clock.sleep(timeout))
        finally:
            unsubscribe()


def wrote_objects(api: APIServer, since: str) -> bool:
    """True when anything but an Event was written after resourceVersion ``since``: a
    recorded event (a repeat's count, say) is no progress towards the desired state."""
    if api.resource_version == since:
        return False
    try:
        return any(e.object.kind != "Event" for e in api.events_since(since))
    except Gone:
        return True


class NotSettled(RuntimeError):
    """settle() ran out of rounds while the controllers were still writing."""


class ControllerManager:
    """Several controllers: settle them deterministically, or run their loops."""

    def __init__(self, controllers: list[Controller]) -> None:
        self.controllers = list(controllers)
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def get(self, name: str) -> Controller:
        return next(c for c in self.controllers if c.name == name)

    async def settle(self, max_rounds: int = 50) -> int:
        """Run every controller's pass, in order, until a whole round changes nothing (no
        pass reports a change and the API server's resourceVersion did not move).
        Returns the number of rounds that changed something; raises :class:`NotSettled`
        after ``max_rounds`` busy rounds."""
        for rounds in range(max_rounds):
            changed = False
            versions = {id(c.api): c.api.resource_version for c in self.controllers}
            for controller in self.controllers:
                changed = await controller.sync_once() or changed
            # A step that failed after writing reports no change: the API server knows.
            changed = changed or any(wrote_objects(c.api, versions[id(c.api)])
                                     for c in self.controllers)
            if not changed:
                return rounds
        raise NotSettled(f"controllers still changing after {max_rounds} rounds")

    def start(self) -> None:
        """Start every controller's run loop as a task."""
        self._stop.clear()
        self._tasks = [asyncio.create_task(c.run(self._stop), name=c.name)
                       for c in self.controllers]

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
