"""Removing volume and snapshot data that has no record: what a kill -9 mid-create (or
mid-copy) leaves behind.  Once at start, then every ``orphan_sweep_interval`` seconds
while the driver runs, so a crash of another process sharing the state dir does not
leave its leftovers until the next restart."""

from __future__ import annotations

import asyncio
import logging

from csi_driver.config import Config
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData

log = logging.getLogger(__name__)


class OrphanSweeper:
    def __init__(self, cfg: Config, store: Store, data: VolumeData) -> None:
        """``store`` and ``data`` must be usable from a worker thread (the ``slow``
        domain's): each periodic sweep runs off the event loop."""
        self.cfg = cfg
        self.store = store
        self.data = data
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def sweep(self) -> int:
        removed = self.data.sweep(
            lambda v: self.store.get_volume(v) is not None,
            lambda s: self.store.get_snapshot(s) is not None,
            self.cfg.orphan_min_age,
        )
        if removed:
            log.info("removed %d data entries with no volume or snapshot record", removed)
        return removed

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        """Let a sweep in progress finish (it holds the store), then end."""
        self._stop.set()
        if self._task is not None:
            await self._task

    async def _run(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._stop.wait(), self.cfg.orphan_sweep_interval)
                return
            except TimeoutError:
                pass
            try:
                await asyncio.to_thread(self.sweep)
            except Exception:  # a failed sweep must not end the next ones
                log.exception("orphan sweep failed")
