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
import math
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from kubelet_sim.api.errors import Gone
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.in_process import as_client, in_process_server, server_or_client
from kubelet_sim.client.indexes import add_indexes
from kubelet_sim.client.kube_client import KubeClient
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
    # The shortest time between the starts of two passes of :meth:`run` (real seconds,
    # whatever the clock): changes that come sooner wait and share the next pass.
    min_pass_seconds: float = 0.0

    def __init__(
        self,
        api: APIServer | KubeClient,
        *,
        clock: Clock | None = None,
        recorder: EventRecorder | None = None,
        resync_seconds: float = DEFAULT_RESYNC_SECONDS,
    ) -> None:
        # every call to the API server goes through this client: the in-process server
        # wrapped, or a client over HTTPS to an API server in another process
        self.client: KubeClient = as_client(api)
        self.api = in_process_server(api, type(self).__name__)
        # what a pass reads (never modifies): the shared informer cache, with the indexes
        self.cache: SharedCache = add_indexes(shared_cache(feed_source(self.client)))
        self.clock: Clock = clock or getattr(self.client, "clock", None) or RealClock()
        self.recorder = recorder or EventRecorder(server_or_client(api))
        self.resync_seconds = resync_seconds
        self.backoff = ExponentialBackoff(self.clock)
        self.errors: dict[str, str] = {}  # object key -> last error, while it backs off
        self._next_retry: float | None = None
        self._retry_at: dict[str, float] = {}
        # while :meth:`run` runs: its loop and the event that asks it for a pass
        self._wake_target: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

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

    def wake(self) -> None:
        """Ask the running loop for a pass soon, from any thread: for a controller that
        follows changes of its own (the garbage collector's monitors) besides
        :attr:`kinds`. Nothing while :meth:`run` is not running."""
        target = self._wake_target
        if target is None:
            return
        loop, event = target
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is loop:
            event.set()
        elif not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    def event(self, obj_kind: str, namespace: str, name: str, event_type: str, reason: str,
              message: str) -> None:
        self.recorder.record(obj_kind, namespace, name, event_type, reason, message, self.name)

    # -- work queue ---------------------------------------------------------------------

    def keys_for(self, obj: Resource) -> Iterable[str] | None:
        """The keys (as :meth:`step` names them) whose reconcile a change of ``obj``
        concerns, for a targeted pass; None: it may concern any, pass over everything.
        A controller that overrides this implements :meth:`reconcile_keys`."""
        return None

    async def reconcile_keys(self, keys: set[str]) -> bool:
        """Reconcile only ``keys`` (a work queue's batch); True when anything was written."""
        return await self.reconcile()

    # -- run loop -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Pass after every change of :attr:`kinds` (the shared cache tells, as an
        informer's event handlers do), on the resync period, and when an object's backoff
        expires; until ``stop`` is set.

        A controller with :meth:`keys_for` keeps a work queue instead, as client-go's
        controllers do: a change puts the keys it concerns on the queue (each once, however
        often it changes), and a pass reconciles only those. A full pass still runs at
        the start, on a retry, on a change :meth:`keys_for` cannot place, and within
        :data:`FULL_PASS_SECONDS` after targeted passes (a dependency a mapping missed
        waits at most that long)."""
        dirty = asyncio.Event()
        targeted = type(self).keys_for is not Controller.keys_for
        queue = _WorkQueue(self.keys_for) if targeted else None
        unsubscribe = self.cache.notify(self.kinds, dirty,
                                        queue.add if queue is not None else None)
        self._wake_target = (asyncio.get_running_loop(), dirty)
        full_due: float | None = 0.0  # monotonic time of the next full pass; None: none due
        woken = True
        last_start = -math.inf
        try:
            while not stop.is_set():
                if self.min_pass_seconds:
                    rest = last_start + self.min_pass_seconds - time.monotonic()
                    if rest > 0:
                        await asyncio.sleep(rest)
                    last_start = time.monotonic()
                dirty.clear()
                now = self.clock.monotonic()
                keys = queue.take() if queue is not None else None
                full = (queue is None or keys is None or not woken
                        or (full_due is not None and now >= full_due))
                try:
                    if full:
                        full_due = None
                        changed = await self.sync_once()
                    else:
                        if full_due is None:
                            full_due = now + FULL_PASS_SECONDS
                        changed = await self.reconcile_keys(keys or set())
                except Exception:  # the loop never dies
                    log.exception("%s: pass failed", self.name)
                    changed = False
                if changed:
                    woken = True
                    continue  # our own writes may enable more work: pass again at once
                timeout = self.resync_seconds
                if self._next_retry is not None:
                    timeout = min(timeout, self._next_retry)
                if full_due is not None:
                    timeout = min(timeout, max(0.0, full_due - self.clock.monotonic()))
                await wait_any(stop, dirty, self.clock.sleep(timeout))
                woken = dirty.is_set()
        finally:
            self._wake_target = None
            unsubscribe()


def claim_step_key(namespace: str, name: str) -> str:
    return f"pvc/{namespace}/{name}"


def volume_step_key(name: str) -> str:
    return f"pv/{name}"


def split_step_key(key: str) -> tuple[str, str, str]:
    """``pvc/<namespace>/<name>`` → ("pvc", namespace, name); ``pv/<name>`` → ("pv", "",
    name): the step keys of the storage controllers' work queues."""
    prefix, _, rest = key.partition("/")
    if prefix == "pvc":
        namespace, _, name = rest.partition("/")
        return prefix, namespace, name
    return prefix, "", rest


def claim_ref_keys(pv: Resource) -> list[str]:
    """The step key of the claim a volume's claimRef names (none without one)."""
    ref = pv.spec.get("claimRef") or {}
    return [claim_step_key(str(ref.get("namespace", "")), str(ref["name"]))] \
        if ref.get("name") else []


def claims_and_volumes(cache: SharedCache, keys: Iterable[str]
                       ) -> tuple[list[Resource], list[Resource]]:
    """The cached claims and volumes ``pvc/…`` and ``pv/…`` keys name (gone ones left
    out), each list in key order."""
    claims: list[Resource] = []
    volumes: list[Resource] = []
    for prefix, namespace, name in map(split_step_key, sorted(keys)):
        if prefix == "pvc":
            claim = cache.get("PersistentVolumeClaim", name, namespace)
            if claim is not None:
                claims.append(claim)
        elif prefix == "pv":
            volume = cache.get("PersistentVolume", name)
            if volume is not None:
                volumes.append(volume)
    return claims, volumes


# How long a targeted pass's missed dependency can wait for the next full pass.
FULL_PASS_SECONDS = 1.0


class _WorkQueue:
    """The keys changes concerned since the last :meth:`take`, each once (client-go's
    work queue de-duplicates the same way). Filled from whichever thread commits."""

    def __init__(self, keys_for: Callable[[Resource], Iterable[str] | None]) -> None:
        self._keys_for = keys_for
        self._lock = threading.Lock()
        self._keys: set[str] = set()
        self._everything = False

    def add(self, obj: Resource) -> None:
        try:
            keys = self._keys_for(obj)
        except Exception:  # inside a commit: never fail it; a full pass will look
            log.exception("work queue: no keys for %s %s", obj.kind, obj.name)
            keys = None
        with self._lock:
            if keys is None:
                self._everything = True
            else:
                self._keys.update(keys)

    def take(self) -> set[str] | None:
        """The queued keys, or None when a change asked for a full pass."""
        with self._lock:
            keys, everything = self._keys, self._everything
            self._keys, self._everything = set(), False
        return None if everything else keys


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
        pass reports a change and the in-process API server's resourceVersion did not
        move).
        Returns the number of rounds that changed something; raises :class:`NotSettled`
        after ``max_rounds`` busy rounds."""
        # the in-process servers behind the controllers (over a client to another
        # process there is none: only the passes' own reports count there)
        servers = {id(c.api): c.api for c in self.controllers if isinstance(c.api, APIServer)}
        for rounds in range(max_rounds):
            changed = False
            versions = {key: server.resource_version for key, server in servers.items()}
            for controller in self.controllers:
                changed = await controller.sync_once() or changed
            # A step that failed after writing reports no change: the API server knows.
            changed = changed or any(wrote_objects(server, versions[key])
                                     for key, server in servers.items())
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
