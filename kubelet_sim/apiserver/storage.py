"""The storage layer under the API server: etcd plus the watch cache, in memory, and
optionally on disk (:mod:`kubelet_sim.apiserver.persistence`).

It keeps the objects, hands out the global ``resourceVersion`` (one counter, bumped by
every commit), records each commit in the bounded :class:`~kubelet_sim.apiserver.watch.EventHistory`
and fans it out to live watches. It applies no API rules: defaulting, validation,
concurrency and deletion semantics live in :mod:`kubelet_sim.apiserver.server`, which also
serialises access with its lock.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import time
from collections.abc import Callable, Mapping

from kubelet_sim.api.model import Resource, kind_info, parse_time
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.watch import (
    ADDED,
    DELETED,
    Change,
    EventHistory,
    Watch,
    WatchEvent,
    filter_change,
)

Predicate = Callable[[Resource], bool]
Feed = Callable[[str, Resource], None]  # (event type, the stored object) per commit


def _last_written(obj: Resource) -> float:
    """When an object loaded from disk was last written, as well as it says: an Event's
    lastTimestamp (or eventTime), else its creation."""
    for text in (obj.body.get("lastTimestamp"), obj.body.get("eventTime"),
                 obj.metadata.creation_timestamp):
        if text:
            with contextlib.suppress(ValueError):
                return parse_time(str(text)).timestamp()
    return time.time()


class ObjectStore:
    """Objects by kind and (namespace, name). Returned objects are the stored ones: the
    API server copies before handing them out."""

    def __init__(self, history_limit: int, database: ObjectDatabase | None = None, *,
                 ttl: Mapping[str, float] | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self._objects: dict[str, dict[tuple[str, str], Resource]] = {}
        self.version = 0
        self._history = EventHistory(history_limit)
        self._watches: list[Watch] = []
        self._feeds: dict[str, list[Feed]] = {}
        self._database = database
        # Kinds kept only for a while after their last write (etcd leases: Events, 1 h).
        self._ttl = dict(ttl or {})
        self._now = now
        self._expiry: list[tuple[float, int, str, str, str]] = []  # deadline, version, key
        if database is not None:
            self.version, objects = database.load()
            for obj in objects:
                self._objects.setdefault(obj.kind, {})[(obj.namespace, obj.name)] = obj
                self._schedule_expiry(obj, written=_last_written(obj))
            # No change before the restart is retained: a watch from an older
            # resourceVersion is 410 Gone, and the client relists.
            self._history.resume_after(self.version)
        self._counter = itertools.count(self.version + 1)

    # ------------------------------------------------------------------ reads
    def lookup(self, kind: str, namespace: str, name: str) -> Resource | None:
        return self._objects.get(kind, {}).get((namespace, name))

    def sorted(self, kind: str) -> list[Resource]:
        """Every stored object of ``kind``, by namespace then name."""
        kind_info(kind)
        objects = self._objects.get(kind, {})
        return [objects[k] for k in sorted(objects)]

    def kinds(self) -> list[str]:
        return sorted(self._objects)

    def names_in_namespace(self, namespace: str) -> list[tuple[str, str]]:
        """(kind, name) of every namespaced object in ``namespace``."""
        return [
            (kind, name)
            for kind, objects in sorted(self._objects.items())
            if objects and kind_info(kind).namespaced
            for ns, name in sorted(objects)
            if ns == namespace
        ]

    # ------------------------------------------------------------------ writes
    def commit(self, event_type: str, obj: Resource, prev: Resource | None) -> Resource:
        """Store (or, for DELETED, drop) ``obj`` under the next resourceVersion, which is
        written into ``obj``; record and fan out the event. Returns the stored copy."""
        version = next(self._counter)
        obj.metadata.resource_version = str(version)
        if self._database is not None:  # durable before anyone sees it
            self._database.commit(version, obj, deleted=event_type == DELETED)
        self.version = version
        stored = obj.copy()
        key = (obj.namespace, obj.name)
        if event_type == DELETED:
            self._objects.get(obj.kind, {}).pop(key, None)
        else:
            self._objects.setdefault(obj.kind, {})[key] = stored
        if event_type != DELETED:
            self._schedule_expiry(stored, written=self._now())
        change = Change(event_type, stored, prev)
        self._history.record(change)
        for feed in self._feeds.get(obj.kind, ()):
            feed(event_type, stored)
        for w in list(self._watches):
            w._offer(change)
        return stored

    # ------------------------------------------------------------------ expiry
    def _schedule_expiry(self, obj: Resource, written: float) -> None:
        ttl = self._ttl.get(obj.kind)
        if ttl is not None:
            heapq.heappush(self._expiry, (written + ttl, int(obj.metadata.resource_version or 0),
                                          obj.kind, obj.namespace, obj.name))

    def expire(self) -> int:
        """Delete (with a DELETED event) every object whose time ran out since its last
        write; returns how many went."""
        gone = 0
        now = self._now()
        while self._expiry and self._expiry[0][0] <= now:
            _, version, kind, namespace, name = heapq.heappop(self._expiry)
            current = self.lookup(kind, namespace, name)
            if current is not None and int(current.metadata.resource_version) == version:
                self.commit(DELETED, current.copy(), current)
                gone += 1
        return gone

    # ------------------------------------------------------------------ watch
    def feed(self, kind: str, on_change: Feed) -> None:
        """``on_change(ADDED, obj)`` for every stored object of ``kind`` now, then for every
        later commit of ``kind``, synchronously and in order. It is handed the stored
        objects: the subscriber copies what it keeps."""
        for obj in self.sorted(kind):
            on_change(ADDED, obj)
        self._feeds.setdefault(kind, []).append(on_change)

    def watch(self, kind: str | None, matches: Predicate, since: int | None,
              limit: int | None = None) -> Watch:
        """A live watch; it first replays the retained changes after ``since`` (Gone when
        too old) or, with ``since=None``, a synthetic ADDED per current object. ``limit``
        bounds the live events it may hold unread (:class:`Watch`)."""
        w = Watch(kind, matches, self._unsubscribe, limit)
        if since is not None:
            for change in self._history.since(since):
                event = filter_change(change, kind, matches)
                if event is not None:
                    w._replay(event)
        else:
            for k in [kind] if kind else self.kinds():
                for obj in self.sorted(k):
                    if matches(obj):
                        w._replay(WatchEvent(ADDED, obj.copy()))
        self._watches.append(w)
        return w

    def events_since(self, since: int, kind: str | None, matches: Predicate) -> list[WatchEvent]:
        """The retained changes after ``since`` as a watcher with ``matches`` sees them."""
        w = Watch(kind, matches, lambda _w: None)
        for change in self._history.since(since):
            w._offer(change)
        return w.drain()

    def expire_history(self) -> None:
        """Forget every retained change: a watch from before now is 410 Gone."""
        self._history.resume_after(self.version)

    def close_watches(self, kind: str | None = None) -> int:
        """End every live watch (of ``kind`` only, when given); how many ended."""
        watches = [w for w in self._watches if kind is None or w.kind == kind]
        for w in watches:
            w.stop()
        return len(watches)

    def _unsubscribe(self, watch: Watch) -> None:
        if watch in self._watches:
            self._watches.remove(watch)
