"""What a pod waiting for its volumes waits for, as news for the kubelet's loop: a change
of the node's ``status.volumesAttached`` (the attach/detach controller's report) or of a
VolumeAttachment to the node. The waiting pods are synced again at once, instead of on the
loop's next period (the kubelet itself polls for its volumes; the simulator has the
events at hand)."""

from __future__ import annotations

import asyncio
import contextlib

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache


class VolumeNews:
    """Told by the shared cache (from whichever thread commits); :meth:`take` says whether
    anything came since the last take. ``dirty`` wakes the loop, only for this node."""

    def __init__(self, cache: SharedCache, node_name: str, dirty: asyncio.Event) -> None:
        self.node_name = node_name
        self._moved = False
        self._told = asyncio.Event()
        self._unsubscribe = cache.notify(("Node", "VolumeAttachment"), self._told,
                                         self._changed)
        self._relay = asyncio.create_task(self._wake(dirty), name=f"volume-news-{node_name}")

    def _changed(self, obj: Resource) -> None:  # inside a commit: quick, reads only
        if (obj.name if obj.kind == "Node" else obj.spec.get("nodeName")) == self.node_name:
            self._moved = True

    async def _wake(self, dirty: asyncio.Event) -> None:
        while True:
            await self._told.wait()
            self._told.clear()
            if self._moved:
                dirty.set()

    def take(self) -> bool:
        moved, self._moved = self._moved, False
        return moved

    async def close(self) -> None:
        self._unsubscribe()
        self._relay.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay
