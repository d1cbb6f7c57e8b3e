"""Plain records the store keeps: volumes, snapshots, nodes and node/controller bindings."""

from __future__ import annotations

from dataclasses import dataclass, field

Topology = dict[str, str]


@dataclass(frozen=True)
class VolumeCapability:
    """One requested capability: how the volume is accessed and by whom."""

    access_type: str  # "mount" or "block"
    access_mode: int  # csi.v1 VolumeCapability.AccessMode.Mode value
    fs_type: str = ""
    mount_flags: tuple[str, ...] = ()
    volume_mount_group: str = ""

    def to_json(self) -> dict[str, object]:
        return {
            "access_type": self.access_type,
            "access_mode": self.access_mode,
            "fs_type": self.fs_type,
            "mount_flags": list(self.mount_flags),
            "volume_mount_group": self.volume_mount_group,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> VolumeCapability:
        flags = data.get("mount_flags") or []
        assert isinstance(flags, list)
        return cls(
            access_type=str(data["access_type"]),
            access_mode=int(str(data["access_mode"])),
            fs_type=str(data.get("fs_type", "")),
            mount_flags=tuple(str(f) for f in flags),
            volume_mount_group=str(data.get("volume_mount_group", "")),
        )


@dataclass(frozen=True)
class Volume:
    volume_id: str
    name: str
    capacity_bytes: int
    pool: str
    access_type: str
    parameters: dict[str, str]
    mutable_parameters: dict[str, str]
    accessible_topology: list[Topology]
    source_type: str  # "", "snapshot" or "volume"
    source_id: str
    request_fingerprint: str
    created_at: float
    seq: int = 0

    @property
    def volume_context(self) -> dict[str, str]:
        return {"pool": self.pool, "accessType": self.access_type}


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    name: str
    source_volume_id: str
    size_bytes: int
    access_type: str
    created_at: float
    group_snapshot_id: str = ""
    parameters: dict[str, str] = field(default_factory=dict)
    seq: int = 0


@dataclass(frozen=True)
class GroupSnapshot:
    group_snapshot_id: str
    name: str
    source_volume_ids: tuple[str, ...]
    parameters: dict[str, str]
    created_at: float
    snapshot_ids: tuple[str, ...]


@dataclass(frozen=True)
class Node:
    node_id: str
    topology: Topology
    max_volumes: int


@dataclass(frozen=True)
class Attachment:
    """A ControllerPublishVolume that answered OK."""

    volume_id: str
    node_id: str
    readonly: bool
    capability: VolumeCapability


@dataclass(frozen=True)
class Stage:
    volume_id: str
    node_id: str
    staging_path: str
    capability: VolumeCapability


@dataclass(frozen=True)
class Publish:
    volume_id: str
    node_id: str
    target_path: str
    staging_path: str
    readonly: bool
    capability: VolumeCapability
    method: str  # "bind" or "symlink"
    # Whether the driver created target_path (so unpublish may remove it); not part of
    # the request, so a repeated publish with the same arguments compares equal.
    created_target: bool = field(default=True, compare=False)
