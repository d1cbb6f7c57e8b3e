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

    Events are queued without bound the moment the API server commits a write, so a
    watcher never misses one and sees them in resourceVersion order.
    """

    def __init__(
        self, kind: str | None, matches: Predicate, on_stop: Callable[[Watch], None]
    ) -> None:
        self.kind = kind
        self._matches = matches
        self._on_stop = on_stop
        self._queue: asyncio.Queue[WatchEvent | None] = asyncio.Queue()
        self._stopped = False
        try:  # the loop that consumes; writes from other threads are handed to it
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None

    def _put(self, item: WatchEvent | None) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            self._queue.put_nowait(item)
            return
        try:
            same_thread = asyncio.get_running_loop() is loop
        except RuntimeError:
            same_thread = False
        if same_thread:
            self._queue.put_nowait(item)
        else:
            loop.call_soon_threadsafe(self._queue.put_nowait, item)

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
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is None:
                self._queue.put_nowait(None)  # keep the end marker for iterators
                break
            out.append(item)
        return out

    async def next(self) -> WatchEvent | None:
        """The next event, or None once stopped."""
        item = await self._queue.get()
        if item is None:
            self._queue.put_nowait(None)
        return item

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
