"""Fixtures for the driver's in-process tests: a config and domain over a temp state dir."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from csi_driver.config import Config
from csi_driver.domain.attachments import Attachments
from csi_driver.domain.node_volumes import NodeVolumes
from csi_driver.domain.snapshots import Snapshots
from csi_driver.domain.volumes import CapacityRange, CreateVolumeArgs, Volumes
from csi_driver.state.mounter import Mounter
from csi_driver.state.records import VolumeCapability
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData

GiB = 1 << 30


def mount_cap(mode: int = 1) -> VolumeCapability:
    return VolumeCapability("mount", mode)


def block_cap(mode: int = 1) -> VolumeCapability:
    return VolumeCapability("block", mode)


def create_args(name: str, size: int = GiB, cap: VolumeCapability | None = None,
                **kw: object) -> CreateVolumeArgs:
    return CreateVolumeArgs(name=name, capabilities=(cap or mount_cap(),),
                            capacity=CapacityRange(size, 0), **kw)  # type: ignore[arg-type]


@dataclass
class Domain:
    cfg: Config
    store: Store
    data: VolumeData
    volumes: Volumes
    attachments: Attachments
    snapshots: Snapshots
    node: NodeVolumes


def make_domain(state_dir: Path, **overrides: object) -> Domain:
    settings: dict[str, object] = {
        "endpoint": "unix:///tmp/unused.sock",
        "node_id": "node-1",
        "state_dir": str(state_dir),
        "mount_method": "symlink",
    }
    settings.update(overrides)
    cfg = Config(**settings).validate()  # type: ignore[arg-type]
    wait_for_disk = cfg.durability == "host"
    store = Store(cfg.state_dir, wait_for_disk)
    data = VolumeData(cfg.state_dir, wait_for_disk=wait_for_disk)
    node = NodeVolumes(cfg, store, data, Mounter.choose(cfg.mount_method))
    node.register()
    return Domain(cfg, store, data, Volumes(cfg, store, data), Attachments(cfg, store),
                  Snapshots(store, data), node)


@pytest.fixture
def domain(tmp_path: Path) -> Iterator[Domain]:
    d = make_domain(tmp_path / "state")
    yield d
    d.store.close()
