"""GroupController service: volume group snapshots."""

from __future__ import annotations

from csi_driver.service import messages
from csi_driver.service import validation as v
from csi_driver.service.context import Ctx, Runtime
from csi_driver.state.records import GroupSnapshot
from csi_protos import csi_pb2, csi_pb2_grpc

CAP = "CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT"


class GroupControllerServicer(csi_pb2_grpc.GroupControllerServicer):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._capabilities = messages.capabilities(
            csi_pb2.GroupControllerGetCapabilitiesResponse,
            csi_pb2.GroupControllerServiceCapability, rt.caps.group_controller)

    def _message(self, group: GroupSnapshot) -> csi_pb2.VolumeGroupSnapshot:
        return messages.group_snapshot(group, self.rt.slow.snapshots.group_members(group))

    async def GroupControllerGetCapabilities(
        self, request: csi_pb2.GroupControllerGetCapabilitiesRequest, context: Ctx
    ) -> csi_pb2.GroupControllerGetCapabilitiesResponse:
        return self._capabilities

    async def CreateVolumeGroupSnapshot(
        self, request: csi_pb2.CreateVolumeGroupSnapshotRequest, context: Ctx
    ) -> csi_pb2.CreateVolumeGroupSnapshotResponse:
        v.require(request.name, "name")
        v.require(list(request.source_volume_ids), "source_volume_ids")
        self.rt.caps.require_group(CAP)
        keys = [f"group:{request.name}"] + [f"volume:{i}" for i in request.source_volume_ids]
        with self.rt.inflight.hold(*keys):
            group = await self.rt.run_slow(
                self.rt.slow.snapshots.create_group, request.name,
                tuple(request.source_volume_ids), dict(request.parameters),
            )
            message = await self.rt.run_slow(self._message, group)
        return csi_pb2.CreateVolumeGroupSnapshotResponse(group_snapshot=message)

    async def DeleteVolumeGroupSnapshot(
        self, request: csi_pb2.DeleteVolumeGroupSnapshotRequest, context: Ctx
    ) -> csi_pb2.DeleteVolumeGroupSnapshotResponse:
        v.require(request.group_snapshot_id, "group_snapshot_id")
        self.rt.caps.require_group(CAP)
        await self.rt.locked(
            f"group:{request.group_snapshot_id}", self.rt.slow.snapshots.delete_group,
            request.group_snapshot_id, tuple(request.snapshot_ids), slow=True)
        return csi_pb2.DeleteVolumeGroupSnapshotResponse()

    async def GetVolumeGroupSnapshot(
        self, request: csi_pb2.GetVolumeGroupSnapshotRequest, context: Ctx
    ) -> csi_pb2.GetVolumeGroupSnapshotResponse:
        v.require(request.group_snapshot_id, "group_snapshot_id")
        self.rt.caps.require_group(CAP)
        group = await self.rt.run(
            self.rt.snapshots.get_group, request.group_snapshot_id, tuple(request.snapshot_ids)
        )
        message = await self.rt.run_slow(self._message, group)
        return csi_pb2.GetVolumeGroupSnapshotResponse(group_snapshot=message)
