"""What every servicer shares: config, capabilities, the guard and two domain sets.

``fast`` runs on the event loop (most RPCs are a few indexed statements); when each
commit waits for the disk, its writes are group-committed so concurrent RPCs share
one fsync.  ``slow`` has its own connections with immediate commits and runs in a
worker thread, for work that copies or walks volume data (snapshots, clones,
restores, usage, block metadata) and must not stall the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import grpc

from csi_driver.config import Config
from csi_driver.domain.attachments import Attachments
from csi_driver.domain.block_metadata import BlockMetadata
from csi_driver.domain.capabilities import Capabilities
from csi_driver.domain.inflight import Activity, InFlight
from csi_driver.domain.node_volumes import NodeVolumes
from csi_driver.domain.snapshots import Snapshots
from csi_driver.domain.volumes import Volumes
from csi_driver.state.mounter import Mounter
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData

T = TypeVar("T")
Ctx = grpc.aio.ServicerContext


@dataclass
class Domain:
    store: Store
    data: VolumeData
    volumes: Volumes
    attachments: Attachments
    snapshots: Snapshots
    node: NodeVolumes
    metadata: BlockMetadata

    @classmethod
    def open(cls, cfg: Config, mounter: Mounter, background_removal: bool = False,
             fs_backend: str = "dir") -> Domain:
        """``fs_backend``: the resolved ``--fs-backend`` ("loop" or "dir")."""
        wait_for_disk = cfg.durability == "host"
        store = Store(cfg.state_dir, wait_for_disk)
        data = VolumeData(cfg.state_dir, background_removal, wait_for_disk,
                          fs_images=fs_backend == "loop")
        return cls(
            store=store,
            data=data,
            volumes=Volumes(cfg, store, data),
            attachments=Attachments(cfg, store),
            snapshots=Snapshots(store, data),
            node=NodeVolumes(cfg, store, data, mounter),
            metadata=BlockMetadata(store, data),
        )


class _Fast(Generic[T]):
    """A `Runtime` attribute that is the ``fast`` domain's part of that name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, rt: Runtime, owner: type | None = None) -> T:
        part: T = getattr(rt.fast, self.name)
        return part


@dataclass
class Runtime:
    cfg: Config
    caps: Capabilities
    inflight: InFlight
    fast: Domain
    slow: Domain
    activity: Activity = field(default_factory=Activity)

    store = _Fast[Store]("store")
    volumes = _Fast[Volumes]("volumes")
    attachments = _Fast[Attachments]("attachments")
    snapshots = _Fast[Snapshots]("snapshots")
    node = _Fast[NodeVolumes]("node")

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Run a ``fast`` domain call on the loop; answer only once its writes are durable."""
        store = self.fast.store
        if not store.group_commit:
            return fn(*args)  # its transactions committed before it returned
        await store.ready()
        before = store.writes
        try:
            return fn(*args)
        finally:
            if store.writes != before:
                await self._settle(store)

    async def _settle(self, store: Store) -> None:
        """Wait for durability: inline when alone (no thread hand-off), else threaded."""
        inline = self.activity.commit_inline()
        starts = self.activity.starts
        await store.settle(alone=inline)
        if not inline:
            self.activity.observed(self.activity.starts != starts)

    async def run_slow(self, fn: Callable[..., T], *args: object) -> T:
        """Run a ``slow`` domain call in a worker thread (immediate commits)."""
        return await asyncio.to_thread(fn, *args)

    async def locked(self, keys: str | tuple[str, ...], fn: Callable[..., T], *args: object,
                     slow: bool = False) -> T:
        """`run` (or `run_slow`) ``fn(*args)`` while holding the in-flight ``keys``: a
        concurrent call on one of them is ABORTED."""
        with self.inflight.hold(*((keys,) if isinstance(keys, str) else keys)):
            return await (self.run_slow if slow else self.run)(fn, *args)

    def close(self) -> None:
        for domain in (self.fast, self.slow):
            domain.data.close()
            domain.store.close()
