"""The shape shared by the kubelet loop's news sources: subscribe to the shared cache for
some kinds, note in the committing thread what concerns this kubelet, and let one small
task wake the loop when there is something to take. A subclass says what it notes
(:meth:`NewsRelay._changed`) and whether anything is pending (:meth:`NewsRelay._pending`);
its ``take`` hands the news over."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache


class NewsRelay:
    """Subscribed from construction until :meth:`close`. A subclass sets up the state its
    :meth:`_changed` reads before calling ``super().__init__`` (the cache may tell at once)."""

    def __init__(self, cache: SharedCache, kinds: Iterable[str], dirty: asyncio.Event,
                 name: str) -> None:
        self._told = asyncio.Event()
        self._unsubscribe = cache.notify(kinds, self._told, self._changed)
        self._relay = asyncio.create_task(self._wake(dirty), name=name)

    def _changed(self, obj: Resource) -> None:
        """Note ``obj`` if it concerns us; inside a commit: quick, reads only."""
        raise NotImplementedError

    def _pending(self) -> bool:
        """Whether news is waiting to be taken."""
        raise NotImplementedError

    async def _wake(self, dirty: asyncio.Event) -> None:
        while True:
            await self._told.wait()
            self._told.clear()
            if self._pending():
                dirty.set()

    async def close(self) -> None:
        self._unsubscribe()
        self._relay.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay
