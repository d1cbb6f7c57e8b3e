"""Watch events, the bounded event history, and live subscriptions.

Semantics follow the Kubernetes watch cache:

* every write produces one event carrying the object's new resourceVersion;
* a watch "from resourceVersion N" receives exactly the events with a larger version;
  if events after N were already evicted from the bounded history, the request fails
  with :class:`~kubelet_sim.api.errors.Gone` (HTTP 410, "too old resource version");
* with a label/field selector, an object that starts matching arrives as ``ADDED`` and
  one that stops matching leaves as ``DELETED`` (carrying its last matching content).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kubelet_sim.api.errors import Gone
from kubelet_sim.api.model import Resource

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"

Predicate = Callable[[Resource], bool]


@dataclass(frozen=True)
class WatchEvent:
    """One change as a watcher sees it. ``object`` is a private copy."""

    type: str
    object: Resource

    @property
    def resource_version(self) -> int:
        return int(self.object.metadata.resource_version)


@dataclass(frozen=True)
class Change:
    """One write as stored in history: the object before (None on create) and after."""

    type: str
    obj: Resource
    prev: Resource | None

    @property
    def resource_version(self) -> int:
        return int(self.obj.metadata.resource_version)


def _with_version(obj: Resource, version: str) -> Resource:
    out = obj.copy()
    out.metadata.resource_version = version
    return out


def filter_change(change: Change, kind: str | None, matches: Predicate) -> WatchEvent | None:
    """How a watcher of ``kind`` with predicate ``matches`` sees ``change`` (None: not at all)."""
    if kind is not None and change.obj.kind != kind:
        return None
    if change.type == ADDED:
        return WatchEvent(ADDED, change.obj.copy()) if matches(change.obj) else None
    if change.type == DELETED:
        return WatchEvent(DELETED, change.obj.copy()) if matches(change.obj) else None
    now_in, was_in = matches(change.obj), change.prev is not None and matches(change.prev)
    if now_in and was_in:
        return WatchEvent(MODIFIED, change.obj.copy())
    if now_in:
        return WatchEvent(ADDED, change.obj.copy())
    if was_in and change.prev is not None:
        return WatchEvent(DELETED, _with_version(change.prev, change.obj.metadata.resource_version))
    return None


class EventHistory:
    """The last ``limit`` changes, oldest first."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("history limit must be at least 1")
        self._changes: deque[Change] = deque(maxlen=limit)
        self._evicted_through = 0  # newest resourceVersion no longer retained

    def record(self, change: Change) -> None:
        if len(self._changes) == self._changes.maxlen:
            self._evicted_through = self._changes[0].resource_version
        self._changes.append(change)

    def resume_after(self, version: int) -> None:
        """Start empty after a restart at ``version``: older watch points are gone."""
        self._changes.clear()
        self._evicted_through = version

    @property
    def oldest_available(self) -> int:
        """The smallest resourceVersion a watch may start from."""
        return self._evicted_through

    def since(self, version: int) -> Iterable[Change]:
        """Changes with resourceVersion > ``version``; Gone if some were evicted."""
        if version < self._evicted_through:
            raise Gone(
                f"too old resource version: {version} ({self._evicted_through})"
            )
        newer: list[Change] = []
        for change in reversed(self._changes):  # newest first: only the new ones are read
            if change.resource_version <= version:
                break
            newer.append(change)
        newer.reverse()
        return newer


class Watch:
    """A live subscription: ``async for event in watch`` until :meth:`stop`.

    The API server commits under its lock, in resourceVersion order, from whichever
    thread wrote (the HTTP server's loop, a controller's loop, a worker thread); each
    commit appends its event to this watch's buffer right there, so the buffer is in
    commit order whatever thread the writer ran on. The consumer's event loop is only
    woken (directly from its own thread, through ``call_soon_threadsafe`` from another):
    a wake-up may come late or twice, an event never out of order. The buffer has no
    bound, so a watcher never misses an event.
    """

    def __init__(
        self, kind: str | None, matches: Predicate, on_stop: Callable[[Watch], None]
    ) -> None:
        self.kind = kind
        self._matches = matches
        self._on_stop = on_stop
        # appended by the committing thread, popped by the consumer; deque's append and
        # popleft are atomic, the order is the order of the appends
        self._buffer: deque[WatchEvent | None] = deque()  # None: the end marker
        self._ready = asyncio.Event()  # set by a wake-up; only touched on the loop's thread
        # a cross-thread wake-up is scheduled and has not run yet: a burst of commits from
        # another thread schedules one callback, not one per event
        self._wake_pending = False
        self._stopped = False
        try:  # the loop that consumes; bound on the first next() when made outside one
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def _put(self, item: WatchEvent | None) -> None:
        self._buffer.append(item)
        self._wake()

    def _wake(self) -> None:
        loop = self._loop
        if loop is None:
            return  # no consumer waits yet: the first next() looks at the buffer first
        try:
            same_thread = asyncio.get_running_loop() is loop
        except RuntimeError:
            same_thread = False
        if same_thread:
            self._ready.set()
            return
        if self._wake_pending:
            return  # the scheduled wake-up runs after this append: the consumer sees it
        self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is left to wake
            loop.call_soon_threadsafe(self._woken)

    def _woken(self) -> None:
        """On the consumer's loop: a wake-up from another thread arrives."""
        self._wake_pending = False  # cleared first: a later append schedules its own
        self._ready.set()

    def _offer(self, change: Change) -> None:
        if self._stopped:
            return
        event = filter_change(change, self.kind, self._matches)
        if event is not None:
            self._put(event)

    def _push(self, event: WatchEvent) -> None:
        self._put(event)

    def stop(self) -> None:
        """Unsubscribe; iteration ends after the events already queued."""
        if not self._stopped:
            self._stopped = True
            self._on_stop(self)
            self._put(None)

    def drain(self) -> list[WatchEvent]:
        """Every event queued right now, without waiting."""
        out: list[WatchEvent] = []
        while self._buffer and self._buffer[0] is not None:  # the end marker stays
            event = self._buffer.popleft()
            assert event is not None
            out.append(event)
        return out

    async def next(self) -> WatchEvent | None:
        """The next event, or None once stopped."""
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        while True:
            # cleared before looking: a wake-up for an append after the look is kept
            self._ready.clear()
            if self._buffer:
                if self._buffer[0] is None:
                    return None  # the end marker stays: every later next() ends too
                return self._buffer.popleft()
            await self._ready.wait()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        item = await self.next()
        if item is None:
            raise StopAsyncIteration
        return item

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
