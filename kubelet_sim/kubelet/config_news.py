"""What a pod waiting with CreateContainerConfigError waits for, as news for the kubelet's
loop: a change of a ConfigMap or Secret its containers' environment names. The kubelet's
configmap and secret managers watch the objects its pods reference; here the shared cache
tells, and the waiting pods are synced again at once."""

from __future__ import annotations

import asyncio
import contextlib

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache


class ConfigNews:
    """``wanted`` maps each awaited (kind, namespace, name) to the uids of the pods that
    wait for it (kept by the kubelet); :meth:`take` returns the uids whose object moved
    since the last take. ``dirty`` wakes the loop."""

    def __init__(self, cache: SharedCache, wanted: dict[tuple[str, str, str], frozenset[str]],
                 dirty: asyncio.Event) -> None:
        self._wanted = wanted
        self._moved: set[str] = set()
        self._told = asyncio.Event()
        self._unsubscribe = cache.notify(("ConfigMap", "Secret"), self._told, self._changed)
        self._relay = asyncio.create_task(self._wake(dirty), name="config-news")

    def _changed(self, obj: Resource) -> None:  # inside a commit: quick, reads only
        uids = self._wanted.get(obj.key)
        if uids:
            self._moved |= uids

    async def _wake(self, dirty: asyncio.Event) -> None:
        while True:
            await self._told.wait()
            self._told.clear()
            if self._moved:
                dirty.set()

    def take(self) -> set[str]:
        moved, self._moved = self._moved, set()
        return moved

    async def close(self) -> None:
        self._unsubscribe()
        self._relay.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay
