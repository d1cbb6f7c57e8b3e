"""What a pod waiting for its volumes waits for, as news for the kubelet's loop: a change
of the node's ``status.volumesAttached`` (the attach/detach controller's report) or of a
VolumeAttachment to the node. The waiting pods are synced again at once, instead of on the
loop's next period (the kubelet itself polls for its volumes; the simulator has the
events at hand)."""

from __future__ import annotations

import asyncio

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.kubelet.news_relay import NewsRelay


class VolumeNews(NewsRelay):
    """Told by the shared cache (from whichever thread commits); :meth:`take` says whether
    anything came since the last take. ``dirty`` wakes the loop, only for this node."""

    def __init__(self, cache: SharedCache, node_name: str, dirty: asyncio.Event) -> None:
        self.node_name = node_name
        self._moved = False
        super().__init__(cache, ("Node", "VolumeAttachment"), dirty,
                         f"volume-news-{node_name}")

    def _changed(self, obj: Resource) -> None:
        if (obj.name if obj.kind == "Node" else obj.spec.get("nodeName")) == self.node_name:
            self._moved = True

    def _pending(self) -> bool:
        return self._moved

    def take(self) -> bool:
        moved, self._moved = self._moved, False
        return moved
