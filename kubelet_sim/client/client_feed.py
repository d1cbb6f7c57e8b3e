""":class:`ClientFeed`: the API server's ``feed`` (list, then every change of a kind, to
an ``on_change(event_type, obj)`` callback) kept over any
:class:`~kubelet_sim.client.kube_client.KubeClient` by one
:class:`~kubelet_sim.client.informer.Informer` per kind, so the shared informer cache
(:mod:`kubelet_sim.client.shared_cache`) the controllers read fills the same way from an
API server in another process.

The difference from the in-process feed is time: the in-process server hands the
current objects over inside :meth:`feed` and every commit as it happens; here the list
and the changes arrive on the event loop as the informer receives them (the cache tells
its listeners about the listed objects too), and :meth:`wait_synced` is client-go's
``WaitForCacheSync``.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.watch import ADDED, DELETED, MODIFIED
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.informer import Handlers, Informer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import Feed
from kubelet_sim.utils.clock import Clock

OnChange = Callable[[str, Resource], None]


class ClientFeed:
    """Feeds of kinds over ``client``; :meth:`feed` needs a running event loop."""

    def __init__(self, client: KubeClient, clock: Clock | None = None) -> None:
        self.client, self.clock = client, clock
        self.informers: dict[str, Informer] = {}
        self._callbacks: dict[str, list[OnChange]] = {}
        self._tasks: list[asyncio.Task[None]] = []

    def feed(self, kind: str, on_change: OnChange) -> None:
        """``on_change(ADDED, obj)`` for each object listed, then for every change of
        ``kind`` (one informer per kind, whoever asks)."""
        self._callbacks.setdefault(kind, []).append(on_change)
        if kind in self.informers:
            for obj in self.informers[kind].items():  # what a later subscriber missed
                on_change(ADDED, obj)
            return
        informer = Informer(self.client, kind, clock=self.clock)

        def tell(event_type: str) -> Callable[..., None]:
            def handler(*objs: Resource) -> None:
                for callback in list(self._callbacks[kind]):
                    callback(event_type, objs[-1])
            return handler

        informer.add_handlers(Handlers(on_add=tell(ADDED), on_update=tell(MODIFIED),
                                       on_delete=tell(DELETED)))
        self.informers[kind] = informer
        self._tasks.append(asyncio.get_running_loop().create_task(
            informer.run(), name=f"feed-{kind}"))

    async def wait_synced(self) -> None:
        """Return once every kind fed so far has its first list in."""
        await asyncio.gather(*(i.wait_synced() for i in self.informers.values()))

    async def stop(self) -> None:
        for informer in self.informers.values():
            informer.stop()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()


_FEEDS: weakref.WeakKeyDictionary[KubeClient, ClientFeed] = weakref.WeakKeyDictionary()


def feed_source(client: KubeClient) -> Feed:
    """Where the shared cache of the components using ``client`` is fed from: the
    in-process API server itself (every commit, inside the commit), or one
    :class:`ClientFeed` per client over its watches."""
    if isinstance(client, InProcessClient):
        return client.api
    feed = _FEEDS.get(client)
    if feed is None:
        feed = _FEEDS[client] = ClientFeed(client)
    return feed
