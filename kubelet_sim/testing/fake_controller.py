"""The in-memory fake driver with the controller side the sidecars need.

`kubelet_sim.testing.fake_csi.FakeCsiDriver` answers the node calls and basic Create/Delete/Publish;
this subclass adds what external-provisioner, -snapshotter and -resizer call: plugin and
controller capabilities, topology-aware CreateVolume with content sources, snapshots and
ControllerExpandVolume and ControllerModifyVolume (the volume keeps its mutable
parameters), with the spec's codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf.message import Message

from csi_protos import csi_pb2
from kubelet_sim.testing.fake_csi import FakeCsiDriver, FakeVolume, csi_error, require_fields

CtrlRpc = csi_pb2.ControllerServiceCapability.RPC
DEFAULT_CONTROLLER_CAPS = (
    CtrlRpc.CREATE_DELETE_VOLUME, CtrlRpc.PUBLISH_UNPUBLISH_VOLUME, CtrlRpc.PUBLISH_READONLY,
    CtrlRpc.CREATE_DELETE_SNAPSHOT, CtrlRpc.LIST_SNAPSHOTS, CtrlRpc.EXPAND_VOLUME,
    CtrlRpc.CLONE_VOLUME, CtrlRpc.MODIFY_VOLUME,
)


@dataclass
class FakeSnapshot:
    snapshot_id: str
    source_volume_id: str
    size_bytes: int
    creation_seconds: int
    ready: bool = True


@dataclass
class FakeControllerDriver(FakeCsiDriver):
    """``topology_key`` set: CreateVolume places the volume in the first preferred (else
    requisite) segment and reports it as accessible_topology. ``segment_capacity`` (bytes
    per value of the topology key) is what GetCapacity answers for a segment, less the
    volumes placed there; ``maximum_volume_size`` set: also answered, capped by what is left."""

    controller_capabilities: tuple[int, ...] = DEFAULT_CONTROLLER_CAPS
    topology_key: str = ""
    node_expansion_required: bool = True
    snapshots: dict[str, FakeSnapshot] = field(default_factory=dict)
    volume_topology: dict[str, dict[str, str]] = field(default_factory=dict)
    snapshot_clock: int = 1_700_000_000
    segment_capacity: dict[str, int] = field(default_factory=dict)
    maximum_volume_size: int | None = None

    def _GetCapacity(self, req: csi_pb2.GetCapacityRequest) -> Message:
        if CtrlRpc.GET_CAPACITY not in self.controller_capabilities:
            raise csi_error("GetCapacity", grpc.StatusCode.UNIMPLEMENTED,
                            "capability not advertised")
        value = dict(req.accessible_topology.segments).get(self.topology_key, "")
        used = sum(v.capacity_bytes for name, v in self.volumes.items()
                   if self.volume_topology.get(name, {}).get(self.topology_key) == value)
        left = max(0, self.segment_capacity.get(value, 0) - used)
        response = csi_pb2.GetCapacityResponse(available_capacity=left)
        if self.maximum_volume_size is not None:
            response.maximum_volume_size.value = min(left, self.maximum_volume_size)
        return response

    def _GetPluginCapabilities(self, _: Any) -> Message:
        Service = csi_pb2.PluginCapability.Service
        services = [Service.CONTROLLER_SERVICE]
        if self.topology_key:
            services.append(Service.VOLUME_ACCESSIBILITY_CONSTRAINTS)
        return csi_pb2.GetPluginCapabilitiesResponse(capabilities=[
            csi_pb2.PluginCapability(service=Service(type=t)) for t in services])

    def _ControllerGetCapabilities(self, _: Any) -> Message:
        return csi_pb2.ControllerGetCapabilitiesResponse(capabilities=[
            csi_pb2.ControllerServiceCapability(rpc=CtrlRpc(type=t))  # type: ignore[arg-type]
            for t in self.controller_capabilities])

    def _CreateVolume(self, req: csi_pb2.CreateVolumeRequest) -> Message:
        method = "CreateVolume"
        require_fields(method, name=req.name)
        if not req.volume_capabilities:
            raise csi_error(method, grpc.StatusCode.INVALID_ARGUMENT, "volume_capabilities missing")
        size = req.capacity_range.required_bytes
        existing = self.volumes.get(req.name)
        if existing is not None and existing.capacity_bytes < size:
            raise csi_error(method, grpc.StatusCode.ALREADY_EXISTS, "incompatible capacity")
        source = req.volume_content_source
        if source.HasField("snapshot"):
            snap = self.snapshots.get(source.snapshot.snapshot_id)
            if snap is None:
                raise csi_error(method, grpc.StatusCode.NOT_FOUND, "source snapshot not found")
            size = max(size, snap.size_bytes)
        elif source.HasField("volume"):
            parent = self.volumes.get(source.volume.volume_id)
            if parent is None:
                raise csi_error(method, grpc.StatusCode.NOT_FOUND, "source volume not found")
            size = max(size, parent.capacity_bytes)
        volume = existing or FakeVolume(req.name, size, dict(req.parameters),
                                        dict(req.mutable_parameters))
        self.volumes[req.name] = volume
        response = csi_pb2.CreateVolumeResponse(volume=csi_pb2.Volume(
            volume_id=volume.volume_id, capacity_bytes=volume.capacity_bytes,
            volume_context=volume.context, content_source=source if req.HasField(
                "volume_content_source") else None))
        if self.topology_key:
            wanted = req.accessibility_requirements
            terms = list(wanted.preferred) or list(wanted.requisite)
            segment = dict(terms[0].segments) if terms else {self.topology_key: self.node_id}
            self.volume_topology[req.name] = segment
            response.volume.accessible_topology.add().segments.update(segment)
        return response

    def _ControllerPublishVolume(self, req: csi_pb2.ControllerPublishVolumeRequest) -> Message:
        if not req.HasField("volume_capability"):
            raise csi_error("ControllerPublishVolume", grpc.StatusCode.INVALID_ARGUMENT,
                       "volume_capability missing")
        return super()._ControllerPublishVolume(req)

    def _CreateSnapshot(self, req: csi_pb2.CreateSnapshotRequest) -> Message:
        method = "CreateSnapshot"
        require_fields(method, name=req.name, source_volume_id=req.source_volume_id)
        existing = self.snapshots.get(req.name)
        if existing is not None and existing.source_volume_id != req.source_volume_id:
            raise csi_error(method, grpc.StatusCode.ALREADY_EXISTS, "snapshot name taken")
        volume = self._known(method, req.source_volume_id)
        snap = existing or FakeSnapshot(req.name, req.source_volume_id, volume.capacity_bytes,
                                        self.snapshot_clock)
        self.snapshots[req.name] = snap
        return csi_pb2.CreateSnapshotResponse(snapshot=self._snapshot_message(snap))

    def _DeleteSnapshot(self, req: csi_pb2.DeleteSnapshotRequest) -> Message:
        require_fields("DeleteSnapshot", snapshot_id=req.snapshot_id)
        self.snapshots.pop(req.snapshot_id, None)
        return csi_pb2.DeleteSnapshotResponse()

    def _ListSnapshots(self, req: csi_pb2.ListSnapshotsRequest) -> Message:
        snaps = [s for s in self.snapshots.values()
                 if (not req.snapshot_id or s.snapshot_id == req.snapshot_id)
                 and (not req.source_volume_id or s.source_volume_id == req.source_volume_id)]
        return csi_pb2.ListSnapshotsResponse(entries=[
            csi_pb2.ListSnapshotsResponse.Entry(snapshot=self._snapshot_message(s))
            for s in snaps])

    def _GetSnapshot(self, req: csi_pb2.GetSnapshotRequest) -> Message:
        snap = self.snapshots.get(req.snapshot_id)
        if snap is None:
            raise csi_error("GetSnapshot", grpc.StatusCode.NOT_FOUND, "snapshot not found")
        return csi_pb2.GetSnapshotResponse(snapshot=self._snapshot_message(snap))

    def _ControllerExpandVolume(self, req: csi_pb2.ControllerExpandVolumeRequest) -> Message:
        method = "ControllerExpandVolume"
        require_fields(method, volume_id=req.volume_id)
        if CtrlRpc.EXPAND_VOLUME not in self.controller_capabilities:
            raise csi_error(method, grpc.StatusCode.UNIMPLEMENTED, "capability not advertised")
        volume = self._known(method, req.volume_id)
        volume.capacity_bytes = max(volume.capacity_bytes, req.capacity_range.required_bytes)
        return csi_pb2.ControllerExpandVolumeResponse(
            capacity_bytes=volume.capacity_bytes,
            node_expansion_required=self.node_expansion_required)

    def _ControllerModifyVolume(self, req: csi_pb2.ControllerModifyVolumeRequest) -> Message:
        method = "ControllerModifyVolume"
        require_fields(method, volume_id=req.volume_id)
        if CtrlRpc.MODIFY_VOLUME not in self.controller_capabilities:
            raise csi_error(method, grpc.StatusCode.UNIMPLEMENTED, "capability not advertised")
        volume = self._known(method, req.volume_id)
        volume.mutable_parameters.update(req.mutable_parameters)
        return csi_pb2.ControllerModifyVolumeResponse()

    def add_snapshot(self, snapshot_id: str, source_volume_id: str,
                     size_bytes: int = 1 << 30) -> FakeSnapshot:
        snap = FakeSnapshot(snapshot_id, source_volume_id, size_bytes, self.snapshot_clock)
        self.snapshots[snapshot_id] = snap
        return snap

    @staticmethod
    def _snapshot_message(snap: FakeSnapshot) -> csi_pb2.Snapshot:
        message = csi_pb2.Snapshot(snapshot_id=snap.snapshot_id,
                                   source_volume_id=snap.source_volume_id,
                                   size_bytes=snap.size_bytes, ready_to_use=snap.ready)
        message.creation_time.seconds = snap.creation_seconds
        return message
