"""The shared informer cache of the in-process control plane: client-go's
SharedInformerFactory with its indexers and listers, for the controllers and the
scheduler that run beside the API server.

One cache per API server (:func:`shared_cache`) holds one copy of every object of each
kind someone asked for, kept by the API server's feed (a list, then every commit of the
kind, delivered inside the commit: in-process there is nothing to lag behind). Reads
return the cached objects themselves, without a copy per read — the rule client-go
gives its listers applies: never modify what a lister returns; copy it, or write
through the API server (``write_object`` re-reads the object), as every controller here
does. Indexes map an object to keys (the node a pod is on, the claims it uses), so a
controller reads the few objects one event concerns instead of scanning every object.

Over an API server in another process, a :class:`~kubelet_sim.client.client_feed.ClientFeed`
stands in for the API server: one informer per kind keeps the same cache, its objects
arriving on the event loop as the watches deliver them.
"""

from __future__ import annotations

import asyncio
import builtins
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Protocol

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.watch import DELETED

Key = tuple[str, str]  # (namespace, name)
IndexFunc = Callable[[Resource], Iterable[str]]


class Feed(Protocol):
    """Where the cache's objects come from: the in-process
    :class:`~kubelet_sim.apiserver.server.APIServer`, or a
    :class:`~kubelet_sim.client.client_feed.ClientFeed` over any KubeClient."""

    def feed(self, kind: str, on_change: Callable[[str, Resource], None]) -> None: ...


_CACHES: weakref.WeakKeyDictionary[Feed, SharedCache] = weakref.WeakKeyDictionary()


def shared_cache(api: Feed) -> SharedCache:
    """The one cache of ``api`` (made on first use)."""
    cache = _CACHES.get(api)
    if cache is None:
        cache = _CACHES[api] = SharedCache(api)
    return cache


class SharedCache:
    """Objects by kind and (namespace, name), with named indexes per kind."""

    def __init__(self, api: Feed) -> None:
        self.api = api
        # commits arrive under the API server's lock, possibly from an HTTP worker
        # thread; readers on the event loop take this lock to see whole updates
        self._lock = threading.RLock()
        self._feed_lock = threading.Lock()  # taken before the API server's, never after
        self._objects: dict[str, dict[Key, Resource]] = {}
        self._fed: set[str] = set()  # kinds listed and subscribed
        self._noticed: set[str] = set()  # kinds only told to listeners, not kept
        self._index_funcs: dict[str, dict[str, IndexFunc]] = {}
        self._indexes: dict[str, dict[str, dict[str, set[Key]]]] = {}  # kind/index/value
        self._index_keys: dict[str, dict[str, dict[Key, tuple[str, ...]]]] = {}
        self._listeners: dict[str, list[Callable[[Resource], None]]] = {}

    # -- setup --------------------------------------------------------------------------
    def add_index(self, kind: str, name: str, func: IndexFunc) -> None:
        """Index ``kind`` by ``func`` (the values an object files under); registering
        the same name again keeps the first function (controllers share indexes)."""
        with self._lock:
            funcs = self._index_funcs.setdefault(kind, {})
            if name in funcs:
                return
            funcs[name] = func
            index = self._indexes.setdefault(kind, {})[name] = {}
            keys = self._index_keys.setdefault(kind, {})[name] = {}
            for key, obj in self._objects.get(kind, {}).items():
                keys[key] = values = tuple(func(obj))
                for value in values:
                    index.setdefault(value, set()).add(key)

    def _kind(self, kind: str) -> dict[Key, Resource]:
        if kind not in self._fed:
            with self._feed_lock:
                if kind not in self._fed:
                    with self._lock:
                        self._objects[kind] = {}
                    # not under self._lock: a commit holds the API server's lock, then ours
                    listing = [True]

                    def on_change(event_type: str, obj: Resource) -> None:
                        # the initial list fills the cache; only later commits are news
                        self._on_change(event_type, obj, tell=not listing[0])

                    self.api.feed(kind, on_change)
                    listing[0] = False
                    self._fed.add(kind)
        return self._objects[kind]

    def notify(self, kinds: Iterable[str], wake: asyncio.Event,
               changed: Callable[[Resource], None] | None = None) -> Callable[[], None]:
        """Set ``wake`` (from any thread) after every change of ``kinds`` reaches the
        cache: a controller's trigger, without a watch that copies every object for
        it. ``changed``, when given, is first handed each changed object (the stored
        one; for a deletion, its last state) inside the commit, from the committing
        thread: it must be quick and must not modify it (an informer's event handler
        that puts a key on a work queue). Returns the function that stops it."""
        loop = asyncio.get_running_loop()

        def listener(obj: Resource) -> None:
            if changed is not None:
                changed(obj)
            if _in_loop(loop):
                wake.set()
            elif not loop.is_closed():
                loop.call_soon_threadsafe(wake.set)

        kinds = list(kinds)
        for kind in kinds:
            with self._lock:
                self._listeners.setdefault(kind, []).append(listener)
            with self._feed_lock:  # told of changes, without keeping a copy of the kind
                if kind not in self._fed and kind not in self._noticed:
                    self.api.feed(kind, self._on_notice)
                    self._noticed.add(kind)

        def stop() -> None:
            with self._lock:
                for kind in kinds:
                    self._listeners[kind].remove(listener)
        return stop

    # -- the feed -----------------------------------------------------------------------
    def _on_change(self, event_type: str, obj: Resource, tell: bool = True) -> None:
        with self._lock:
            key = (obj.namespace, obj.name)
            self._unindex(obj.kind, key)
            if event_type == DELETED:
                told = self._objects[obj.kind].pop(key, None) or obj
            else:
                told = obj.copy()
                self._store(told)
        if tell:
            self._tell(told)

    def _on_notice(self, _event_type: str, obj: Resource) -> None:
        if obj.kind not in self._fed:  # (once it is cached, _on_change tells)
            self._tell(obj)

    def _tell(self, obj: Resource) -> None:
        with self._lock:
            listeners = list(self._listeners.get(obj.kind, ()))
        for listener in listeners:
            listener(obj)

    def _store(self, obj: Resource) -> None:
        key = (obj.namespace, obj.name)
        self._objects[obj.kind][key] = obj
        for name, func in self._index_funcs.get(obj.kind, {}).items():
            values = self._index_keys[obj.kind][name][key] = tuple(func(obj))
            for value in values:
                self._indexes[obj.kind][name].setdefault(value, set()).add(key)

    def _unindex(self, kind: str, key: Key) -> None:
        for name, keys in self._index_keys.get(kind, {}).items():
            index = self._indexes[kind][name]
            for value in keys.pop(key, ()):
                members = index.get(value)
                if members is not None:
                    members.discard(key)
                    if not members:
                        del index[value]

    # -- listers ------------------------------------------------------------------------
    @property
    def kinds(self) -> builtins.list[str]:
        """The kinds the cache keeps (those read through it so far)."""
        return sorted(self._fed)

    def get(self, kind: str, name: str, namespace: str = "") -> Resource | None:
        """The cached object (not a copy), or None."""
        return self._kind(kind).get((namespace, name))

    def list(self, kind: str, namespace: str | None = None) -> list[Resource]:
        """Every cached object of ``kind`` (in ``namespace``), by namespace and name."""
        objects = self._kind(kind)
        with self._lock:
            keys = sorted(k for k in objects if not namespace or k[0] == namespace)
            return [objects[k] for k in keys]

    def by_index(self, kind: str, index: str, value: str) -> builtins.list[Resource]:
        """The objects ``index`` files under ``value``, by namespace and name."""
        objects = self._kind(kind)
        with self._lock:
            keys = sorted(self._indexes[kind][index].get(value, ()))
            return [objects[k] for k in keys]

    def index_values(self, kind: str, index: str) -> builtins.list[str]:
        """Every value ``index`` files some object under."""
        self._kind(kind)
        with self._lock:
            return sorted(self._indexes[kind][index])


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
