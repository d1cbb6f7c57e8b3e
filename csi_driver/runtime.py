"""What every servicer shares: config, capabilities, the domain objects and the guard."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from csi_driver.attachments import Attachments
from csi_driver.capabilities import Capabilities
from csi_driver.config import Config
from csi_driver.inflight import InFlight
from csi_driver.node_volumes import NodeVolumes
from csi_driver.snapshots import Snapshots
from csi_driver.store import Store
from csi_driver.volume_data import VolumeData
from csi_driver.volumes import Volumes

T = TypeVar("T")


@dataclass
class Runtime:
    cfg: Config
    caps: Capabilities
    store: Store
    data: VolumeData
    volumes: Volumes
    attachments: Attachments
    snapshots: Snapshots
    node: NodeVolumes
    inflight: InFlight

    async def run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking domain work (SQLite commits, file copies) off the event loop."""
        return await asyncio.to_thread(fn, *args)
