"""What a pod waiting with CreateContainerConfigError waits for, as news for the kubelet's
loop: a change of a ConfigMap or Secret its containers' environment names. The kubelet's
configmap and secret managers watch the objects its pods reference; here the shared cache
tells, and the waiting pods are synced again at once."""

from __future__ import annotations

import asyncio

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.kubelet.news_relay import NewsRelay


class ConfigNews(NewsRelay):
    """``wanted`` maps each awaited (kind, namespace, name) to the uids of the pods that
    wait for it (kept by the kubelet); :meth:`take` returns the uids whose object moved
    since the last take. ``dirty`` wakes the loop."""

    def __init__(self, cache: SharedCache, wanted: dict[tuple[str, str, str], frozenset[str]],
                 dirty: asyncio.Event) -> None:
        self._wanted = wanted
        self._moved: set[str] = set()
        super().__init__(cache, ("ConfigMap", "Secret"), dirty, "config-news")

    def _changed(self, obj: Resource) -> None:
        uids = self._wanted.get(obj.key)
        if uids:
            self._moved |= uids

    def _pending(self) -> bool:
        return bool(self._moved)

    def take(self) -> set[str]:
        moved, self._moved = self._moved, set()
        return moved
