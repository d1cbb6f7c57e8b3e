"""Domain records → csi.v1 response messages."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from csi_driver.state.records import GroupSnapshot, Snapshot, Volume
from csi_protos import csi_pb2

M = TypeVar("M", bound=Message)


def capabilities(response: type[M], capability: Any, rpc_types: Iterable[str]) -> M:
    """A Get*Capabilities answer: one ``capability`` (e.g. NodeServiceCapability) per RPC
    type name, in name order."""
    entries = [capability(rpc=capability.RPC(type=name)) for name in sorted(rpc_types)]
    return response(capabilities=entries)  # type: ignore[call-arg]


def timestamp(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromNanoseconds(int(seconds * 1e9))
    return ts


def volume(v: Volume) -> csi_pb2.Volume:
    message = csi_pb2.Volume(
        volume_id=v.volume_id,
        capacity_bytes=v.capacity_bytes,
        volume_context=v.volume_context,
        accessible_topology=[csi_pb2.Topology(segments=t) for t in v.accessible_topology],
    )
    if v.source_type == "snapshot":
        message.content_source.snapshot.snapshot_id = v.source_id
    elif v.source_type == "volume":
        message.content_source.volume.volume_id = v.source_id
    return message


def snapshot(s: Snapshot) -> csi_pb2.Snapshot:
    return csi_pb2.Snapshot(
        size_bytes=s.size_bytes,
        snapshot_id=s.snapshot_id,
        source_volume_id=s.source_volume_id,
        creation_time=timestamp(s.created_at),
        ready_to_use=True,
        group_snapshot_id=s.group_snapshot_id,
    )


def group_snapshot(g: GroupSnapshot, members: list[Snapshot]) -> csi_pb2.VolumeGroupSnapshot:
    return csi_pb2.VolumeGroupSnapshot(
        group_snapshot_id=g.group_snapshot_id,
        snapshots=[snapshot(s) for s in members],
        creation_time=timestamp(g.created_at),
        ready_to_use=len(members) == len(g.snapshot_ids),
    )


def condition(abnormal: bool, message: str) -> csi_pb2.VolumeCondition:
    return csi_pb2.VolumeCondition(abnormal=abnormal, message=message)
