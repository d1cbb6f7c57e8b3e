"""A list-watch cache with event handlers: client-go's informer, reduced to what the
simulator's controllers need.

:meth:`Informer.run` lists the objects, fills the cache, calls ``on_add`` for each,
marks itself synced, then watches from the list's resourceVersion and keeps the cache
current, calling ``on_add``/``on_update``/``on_delete`` in event order. When the watch
cannot resume (:class:`~kubelet_sim.api.errors.Gone`), it relists and reports the
difference as adds, updates and deletes, as a client-go reflector does.

Handlers may be plain functions or coroutines; an exception in a handler is logged and
does not stop the informer.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kubelet_sim.api.errors import Gone
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.watch import ADDED, DELETED, Watch

log = logging.getLogger(__name__)

Handler = Callable[..., Awaitable[None] | None]


@dataclass
class Handlers:
    """``on_add(obj)``, ``on_update(old, new)``, ``on_delete(obj)``; any may be None."""

    on_add: Handler | None = None
    on_update: Handler | None = None
    on_delete: Handler | None = None


class Informer:
    """Cache of one kind (optionally one namespace / selector), kept by list + watch."""

    def __init__(
        self,
        api: APIServer,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> None:
        self.api, self.kind = api, kind
        self._filter = (namespace, label_selector, field_selector)
        self._cache: dict[tuple[str, str], Resource] = {}
        self._handlers: list[Handlers] = []
        self._synced = asyncio.Event()
        self._watch: Watch | None = None
        self._stopping = False
        self.relists = 0

    def add_handlers(self, handlers: Handlers) -> None:
        """Register handlers; register before :meth:`run` to see the initial adds."""
        self._handlers.append(handlers)

    def get(self, name: str, namespace: str = "") -> Resource | None:
        """The cached object (a copy), or None."""
        obj = self._cache.get((namespace, name))
        return obj.copy() if obj else None

    def items(self) -> list[Resource]:
        """Every cached object (copies), sorted by namespace and name."""
        return [self._cache[k].copy() for k in sorted(self._cache)]

    @property
    def synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Return once the initial list is in the cache and its adds were handled."""
        await self._synced.wait()

    def stop(self) -> None:
        """End :meth:`run`."""
        self._stopping = True
        if self._watch is not None:
            self._watch.stop()

    async def run(self) -> None:
        """List, then watch until :meth:`stop`; relist whenever the watch is Gone."""
        version = await self._relist()
        while not self._stopping:
            try:
                self._watch = self.api.watch(self.kind, *self._filter, resource_version=version)
            except Gone:
                self.relists += 1
                version = await self._relist()
                continue
            async for event in self._watch:
                version = event.object.metadata.resource_version
                await self._apply(event.type, event.object)
            self._watch = None

    async def _relist(self) -> str:
        listed = self.api.list(self.kind, *self._filter)
        fresh = {(o.namespace, o.name): o for o in listed.items}
        for key in sorted(set(self._cache) - set(fresh)):
            await self._apply(DELETED, self._cache[key])
        for key in sorted(fresh):
            await self._apply(ADDED, fresh[key])
        self._synced.set()
        return listed.resource_version

    async def _apply(self, event_type: str, obj: Resource) -> None:
        key = (obj.namespace, obj.name)
        old = self._cache.get(key)
        if event_type == DELETED:
            self._cache.pop(key, None)
            await self._call("on_delete", obj)
            return
        self._cache[key] = obj
        if old is None:
            await self._call("on_add", obj)
        elif old.metadata.resource_version != obj.metadata.resource_version:
            await self._call("on_update", old, obj)

    async def _call(self, which: str, *args: Resource) -> None:
        for handlers in self._handlers:
            fn = getattr(handlers, which)
            if fn is None:
                continue
            try:
                result = fn(*(a.copy() for a in args))
                if inspect.isawaitable(result):
                    await result
            except Exception:
                log.exception("%s informer: %s handler failed", self.kind, which)
