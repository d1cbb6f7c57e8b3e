"""The storage layer under the API server: etcd plus the watch cache, in memory, and
optionally on disk (:mod:`kubelet_sim.apiserver.persistence`).

It keeps the objects, hands out the global ``resourceVersion`` (one counter, bumped by
every commit), records each commit in the bounded :class:`~kubelet_sim.apiserver.watch.EventHistory`
and fans it out to live watches. It applies no API rules: defaulting, validation,
concurrency and deletion semantics live in :mod:`kubelet_sim.apiserver.server`, which also
serialises access with its lock.

Each kind's objects are kept by their storage key (etcd's key after
``/registry/<resource>/``: ``<namespace>/<name>``, or ``<name>`` for a cluster-scoped
kind) with the keys in etcd's (byte) order, so a page of a list starts by bisecting the
keys and costs its own size. A page can show an older resourceVersion, as etcd's MVCC
does, while the retained history reaches back to it: the current objects with the
changes made since undone (each change keeps the object before it).
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import json
import time
from bisect import bisect_left, insort
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

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
# Objects of a kind from which each one's JSON is made when it is written, not when a LIST
# first asks for it: fewer cost a LIST little to encode (1,000: ~35 ms), and their kept
# JSON would only be memory (10,000 updates of one Lease: RSS +3 MiB).
ENCODE_ON_WRITE_FROM = 1000
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


def storage_key(namespace: str, name: str) -> str:
    """An object's key within its kind, as etcd orders them: ``namespace/name``, or
    ``name`` for a cluster-scoped object."""
    return f"{namespace}/{name}" if namespace else name


def _encode(obj: Resource) -> bytes:
    obj.encoded = json.dumps(obj.shared_dict()).encode()
    return obj.encoded


def key_prefix(namespace: str | None) -> str:
    """The prefix of the keys in ``namespace`` ("" for every namespace)."""
    return f"{namespace}/" if namespace else ""


def _prefix_end(prefix: str) -> str | None:
    """The first key after every key starting with ``prefix`` (None: no bound)."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else None


class _KindIndex:
    """One kind's objects by storage key, and the keys sorted."""

    __slots__ = ("keys", "objects")

    def __init__(self) -> None:
        self.objects: dict[str, Resource] = {}
        self.keys: list[str] = []

    def put(self, key: str, obj: Resource) -> None:
        if key not in self.objects:
            insort(self.keys, key)
        self.objects[key] = obj

    def drop(self, key: str) -> None:
        if self.objects.pop(key, None) is not None:
            del self.keys[bisect_left(self.keys, key)]

    def span(self, begin: str, end: str | None) -> tuple[int, int]:
        """The positions of the keys in [begin, end)."""
        return (bisect_left(self.keys, begin),
                len(self.keys) if end is None else bisect_left(self.keys, end))


@dataclass(frozen=True)
class Page:
    """A page of a list: the stored objects (to read, never to modify), the
    resourceVersion it shows, the key of its last object, and how many objects (matching
    or not) follow that one in the listed range."""

    items: list[Resource]
    resource_version: int
    last_key: str
    remaining: int


class ObjectStore:
    """Objects by kind and storage key. Returned objects are the stored ones, never
    changed once stored (a write stores a new one): the API server copies them, inside
    its lock or after it, before handing them out."""

    def __init__(self, history_limit: int, database: ObjectDatabase | None = None, *,
                 ttl: Mapping[str, float] | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self._objects: dict[str, _KindIndex] = {}
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
                self._index(obj.kind).put(storage_key(obj.namespace, obj.name), obj)
                self._schedule_expiry(obj, written=_last_written(obj))
            # No change before the restart is retained: a watch from an older
            # resourceVersion is 410 Gone, and the client relists.
            self._history.resume_after(self.version)
        self._counter = itertools.count(self.version + 1)

    # ------------------------------------------------------------------ reads
    def _index(self, kind: str) -> _KindIndex:
        index = self._objects.get(kind)
        if index is None:
            index = self._objects[kind] = _KindIndex()
        return index

    def lookup(self, kind: str, namespace: str, name: str) -> Resource | None:
        index = self._objects.get(kind)
        return None if index is None else index.objects.get(storage_key(namespace, name))

    def sorted(self, kind: str) -> list[Resource]:
        """Every stored object of ``kind``, in key order (namespace, then name)."""
        kind_info(kind)
        index = self._objects.get(kind)
        return [] if index is None else [index.objects[k] for k in index.keys]

    def kinds(self) -> list[str]:
        return sorted(self._objects)

    def names_in_namespace(self, namespace: str) -> list[tuple[str, str]]:
        """(kind, name) of every namespaced object in ``namespace``."""
        prefix = key_prefix(namespace)
        found = []
        for kind, index in sorted(self._objects.items()):
            if index.keys and kind_info(kind).namespaced:
                lo, hi = index.span(prefix, _prefix_end(prefix))
                found += [(kind, key[len(prefix):]) for key in index.keys[lo:hi]]
        return found

    @staticmethod
    def encoded_json(objects: list[Resource]) -> list[bytes]:
        """``json.dumps(obj.to_dict()).encode()`` of each stored object (current or kept
        in the history), made when it was committed (for kinds of at least
        :data:`ENCODE_ON_WRITE_FROM` objects) or else the first time it is asked for, and
        kept on it, as kube-apiserver's watch cache keeps an object's serialized forms: a
        LIST of thousands then builds no objects (nothing for the garbage collector, whose
        full collections stop every thread) and its answer is these bytes joined. Safe
        without the lock: stored objects never change."""
        return [obj.encoded if obj.encoded is not None else _encode(obj) for obj in objects]

    def page(self, kind: str, prefix: str, start: str, matches: Predicate | None, limit: int,
             at: int | None = None) -> Page:
        """Up to ``limit`` (0: every) objects of ``kind`` that ``matches`` (None: every
        one), with keys under ``prefix`` from the key ``start`` on, as they were at
        resourceVersion ``at`` (None: now; :class:`Gone` when the kept history does not
        reach back)."""
        kind_info(kind)
        index = self._objects.get(kind) or _KindIndex()
        end = _prefix_end(prefix)
        begin = max(prefix, start)
        lo, hi = index.span(begin, end)
        before = self._undone(kind, begin, end, at)
        total = hi - lo + sum((old is not None) - (key in index.objects)
                              for key, old in before.items())
        version = self.version if at is None else at
        if matches is None and not before:  # a slice of the index: no call per object
            keys = index.keys[lo:hi if limit <= 0 else min(hi, lo + limit)]
            return Page(list(map(index.objects.__getitem__, keys)), version,
                        keys[-1] if keys else "", total - len(keys))
        items: list[Resource] = []
        last, seen = "", 0
        for key, obj in _merged(index, lo, hi, before):
            seen += 1
            if matches is None or matches(obj):
                items.append(obj)
                last = key
                if len(items) == limit:
                    break
        return Page(items, version, last, total - seen)

    def _undone(self, kind: str, begin: str, end: str | None,
                at: int | None) -> dict[str, Resource | None]:
        """The objects of ``kind`` in [begin, end) that changed after ``at``, each as it
        was at ``at`` (None: not there yet)."""
        if at is None or at >= self.version:
            return {}
        before: dict[str, Resource | None] = {}
        for change in reversed(list(self._history.since(at))):  # newest first: oldest wins
            if change.obj.kind != kind:
                continue
            key = storage_key(change.obj.namespace, change.obj.name)
            if begin <= key and (end is None or key < end):
                before[key] = change.prev
        return before

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
        key = storage_key(obj.namespace, obj.name)
        if event_type == DELETED:
            self._index(obj.kind).drop(key)
        else:
            self._index(obj.kind).put(key, stored)
        if event_type != DELETED:
            self._schedule_expiry(stored, written=self._now())
            if len(self._index(obj.kind).objects) >= ENCODE_ON_WRITE_FROM:
                # its JSON now, while the write pays for Python anyway: a LIST of the kind
                # never encodes (the first LIST of 20,000 new objects would hold the GIL
                # 0.4-0.7 s); what JSON cannot hold fails where it is answered, as before
                with contextlib.suppress(TypeError, ValueError):
                    _encode(stored)
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


def _merged(index: _KindIndex, lo: int, hi: int,
            before: dict[str, Resource | None]) -> Iterator[tuple[str, Resource]]:
    """(key, object) in key order: the keys ``index`` has in [lo, hi) with the objects
    in ``before`` instead of the current ones (dropped where None, added where new)."""
    keys, objects = index.keys, index.objects
    if not before:
        for i in range(lo, hi):
            key = keys[i]
            yield key, objects[key]
        return
    older = sorted(before)
    i = j = 0
    while lo + i < hi or j < len(older):
        current = keys[lo + i] if lo + i < hi else None
        changed = older[j] if j < len(older) else None
        if changed is None or (current is not None and current < changed):
            i += 1
            assert current is not None
            yield current, objects[current]
            continue
        if current == changed:
            i += 1
        j += 1
        old = before[changed]
        if old is not None:
            yield changed, old
