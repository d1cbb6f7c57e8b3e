"""A list-watch cache with event handlers: client-go's informer, reduced to what the
simulator's controllers need, over any :class:`~kubelet_sim.client.kube_client.KubeClient`
(an :class:`~kubelet_sim.apiserver.server.APIServer` is wrapped in an
:class:`~kubelet_sim.client.in_process.InProcessClient`: one code path for both).

:meth:`Informer.run` lists the objects, fills the cache, calls ``on_add`` for each,
marks itself synced, then watches from the list's resourceVersion (allowing BOOKMARKs,
which move that version on without an event) and keeps the cache current, calling
``on_add``/``on_update``/``on_delete`` in event order. A watch the server ends is started
again from the last resourceVersion seen. When the watch cannot resume
(:class:`~kubelet_sim.api.errors.Gone`), it relists and reports the difference as adds,
updates and deletes, as a client-go reflector does. When the server cannot be reached
or fails, the list or watch is tried again after a back-off (0.8 s doubling to 30 s, as
the reflector's, on the injected clock), so an API server that is killed and started
again on the same state loses the informer nothing.

Handlers may be plain functions or coroutines; an exception in a handler is logged and
does not stop the informer.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kubelet_sim.api.errors import ApiError, Gone
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.watch import ADDED, DELETED
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.kube_client import BOOKMARK, KubeClient, KubeWatch
from kubelet_sim.utils.clock import Clock, RealClock

log = logging.getLogger(__name__)

Handler = Callable[..., Awaitable[None] | None]

# the reflector's back-off after a failed list or watch: 800 ms doubling to 30 s
BACKOFF_INITIAL, BACKOFF_CAP = 0.8, 30.0


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
        api: APIServer | KubeClient,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        *,
        clock: Clock | None = None,
    ) -> None:
        self.api, self.kind = api, kind
        self.client: KubeClient = InProcessClient(api) if isinstance(api, APIServer) else api
        self.clock: Clock = clock or RealClock()
        self._filter = (namespace, label_selector, field_selector)
        self._cache: dict[tuple[str, str], Resource] = {}
        self._handlers: list[Handlers] = []
        self._synced = asyncio.Event()
        self._stopped = asyncio.Event()
        self._watch: KubeWatch | None = None
        self._stopping = False
        self._delay = 0.0  # the next back-off (0: none yet)
        self.relists = 0  # relists after a Gone watch
        self.failures = 0  # lists and watches that failed and were tried again
        self.resource_version = ""  # the newest version seen (list, event or bookmark)

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
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()

    async def run(self) -> None:
        """List, then watch until :meth:`stop`; relist whenever the watch is Gone, and
        back off and try again whenever the server fails or cannot be reached."""
        if not await self._relist():
            return
        while not self._stopping:
            try:
                self._watch = await self.client.watch(
                    self.kind, *self._filter, resource_version=self.resource_version,
                    allow_bookmarks=True)
                async for event in self._watch:
                    self.resource_version = event.object.metadata.resource_version
                    self._delay = 0.0  # the server answers again
                    if event.type != BOOKMARK:
                        await self._apply(event.type, event.object)
            except Gone:
                self.relists += 1
                if not await self._relist():
                    return
            except ApiError as err:
                await self._back_off("watch", err)
            finally:
                self._watch = None

    async def _relist(self) -> bool:
        """List (again, after a back-off while that fails) and reconcile the cache;
        False when stopped first."""
        while not self._stopping:
            try:
                listed = await self.client.list(self.kind, *self._filter)
            except ApiError as err:
                await self._back_off("list", err)
                continue
            self._delay = 0.0
            fresh = {(o.namespace, o.name): o for o in listed.items}
            for key in sorted(set(self._cache) - set(fresh)):
                await self._apply(DELETED, self._cache[key])
            for key in sorted(fresh):
                await self._apply(ADDED, fresh[key])
            self.resource_version = listed.resource_version
            self._synced.set()
            return True
        return False

    async def _back_off(self, what: str, err: ApiError) -> None:
        """Wait out the next back-off (or until stopped)."""
        self.failures += 1
        self._delay = min(BACKOFF_CAP, self._delay * 2) if self._delay else BACKOFF_INITIAL
        log.info("%s informer: %s failed (%s); again in %.1fs", self.kind, what, err,
                 self._delay)
        sleep = asyncio.ensure_future(self.clock.sleep(self._delay))
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            await asyncio.wait({sleep, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            stopped.cancel()

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
