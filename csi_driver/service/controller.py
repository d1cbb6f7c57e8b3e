"""Controller service: thin edge over the volume, attachment and snapshot domain.

Every RPC: required fields → capability gate → in-flight guard → domain → response.
"""

from __future__ import annotations

from collections.abc import Callable

from csi_driver.domain.volumes import CreateVolumeArgs
from csi_driver.errors import InvalidArgument
from csi_driver.service import messages
from csi_driver.service import validation as v
from csi_driver.service.context import Ctx, Runtime
from csi_protos import csi_pb2, csi_pb2_grpc


class ControllerServicer(csi_pb2_grpc.ControllerServicer):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._capabilities = messages.capabilities(
            csi_pb2.ControllerGetCapabilitiesResponse, csi_pb2.ControllerServiceCapability,
            rt.caps.controller)

    async def _delete(self, object_id: str, kind: str, capability: str,
                      delete: Callable[[str], object], *, slow: bool = False) -> None:
        """DeleteVolume and DeleteSnapshot: ``<kind>_id`` is required and ``capability``
        offered, then ``delete`` runs under the object's in-flight key."""
        v.require(object_id, f"{kind}_id")
        self.rt.caps.require_controller(capability)
        await self.rt.locked(f"{kind}:{object_id}", delete, object_id, slow=slow)

    async def CreateVolume(self, request: csi_pb2.CreateVolumeRequest, context: Ctx
                           ) -> csi_pb2.CreateVolumeResponse:
        v.require(request.name, "name")
        caps = v.capabilities(request.volume_capabilities)
        self.rt.caps.require_controller("CREATE_DELETE_VOLUME")
        source_type, source_id = "", ""
        if request.HasField("volume_content_source"):
            source = request.volume_content_source
            kind = source.WhichOneof("type")
            # An unsupported source kind is INVALID_ARGUMENT (spec), not UNIMPLEMENTED.
            if kind == "snapshot" and "CREATE_DELETE_SNAPSHOT" in self.rt.caps.controller:
                source_type, source_id = "snapshot", source.snapshot.snapshot_id
            elif kind == "volume" and "CLONE_VOLUME" in self.rt.caps.controller:
                source_type, source_id = "volume", source.volume.volume_id
            else:
                raise InvalidArgument(f"volume_content_source {kind} is not supported")
            v.require(source_id, f"volume_content_source.{kind} id")
        requisite = v.topologies(request.accessibility_requirements.requisite)
        preferred = v.topologies(request.accessibility_requirements.preferred)
        args = CreateVolumeArgs(
            name=request.name,
            capabilities=caps,
            capacity=v.capacity_range(request),
            parameters=dict(request.parameters),
            mutable_parameters=dict(request.mutable_parameters),
            source_type=source_type,
            source_id=source_id,
            requisite=requisite,
            preferred=preferred,
        )
        with self.rt.inflight.hold(f"name:{request.name}", f"volume:{source_id}"):
            if self.rt.volumes.prepares_data(args):  # copies or formats: off the event loop
                volume = await self.rt.run_slow(self.rt.slow.volumes.create_volume, args)
            else:
                volume = await self.rt.run(self.rt.volumes.create_volume, args)
        return csi_pb2.CreateVolumeResponse(volume=messages.volume(volume))

    async def DeleteVolume(self, request: csi_pb2.DeleteVolumeRequest, context: Ctx
                           ) -> csi_pb2.DeleteVolumeResponse:
        await self._delete(request.volume_id, "volume", "CREATE_DELETE_VOLUME",
                           self.rt.volumes.delete_volume)
        return csi_pb2.DeleteVolumeResponse()

    async def ControllerPublishVolume(self, request: csi_pb2.ControllerPublishVolumeRequest,
                                      context: Ctx) -> csi_pb2.ControllerPublishVolumeResponse:
        v.require(request.volume_id, "volume_id")
        v.require(request.node_id, "node_id")
        cap = v.required_capability(request)
        self.rt.caps.require_controller("PUBLISH_UNPUBLISH_VOLUME")
        context_map = await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.attachments.publish, request.volume_id,
            request.node_id, cap, request.readonly)
        return csi_pb2.ControllerPublishVolumeResponse(publish_context=context_map)

    async def ControllerUnpublishVolume(self, request: csi_pb2.ControllerUnpublishVolumeRequest,
                                        context: Ctx
                                        ) -> csi_pb2.ControllerUnpublishVolumeResponse:
        v.require(request.volume_id, "volume_id")
        self.rt.caps.require_controller("PUBLISH_UNPUBLISH_VOLUME")
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.attachments.unpublish, request.volume_id,
            request.node_id)
        return csi_pb2.ControllerUnpublishVolumeResponse()

    async def ValidateVolumeCapabilities(
        self, request: csi_pb2.ValidateVolumeCapabilitiesRequest, context: Ctx
    ) -> csi_pb2.ValidateVolumeCapabilitiesResponse:
        v.require(request.volume_id, "volume_id")
        caps = v.capabilities(request.volume_capabilities)
        reason = await self.rt.run(
            self.rt.volumes.validate_capabilities, request.volume_id, caps,
            dict(request.parameters), dict(request.mutable_parameters),
            dict(request.volume_context),
        )
        if reason:
            return csi_pb2.ValidateVolumeCapabilitiesResponse(message=reason)
        confirmed = csi_pb2.ValidateVolumeCapabilitiesResponse.Confirmed(
            volume_context=request.volume_context,
            volume_capabilities=request.volume_capabilities,
            parameters=request.parameters,
            mutable_parameters=request.mutable_parameters,
        )
        return csi_pb2.ValidateVolumeCapabilitiesResponse(confirmed=confirmed)

    async def ListVolumes(self, request: csi_pb2.ListVolumesRequest, context: Ctx
                          ) -> csi_pb2.ListVolumesResponse:
        self.rt.caps.require_controller("LIST_VOLUMES")
        statuses, next_token = await self.rt.run(
            self.rt.volumes.list_volumes, request.max_entries, request.starting_token
        )
        entries = []
        for st in statuses:
            status = csi_pb2.ListVolumesResponse.VolumeStatus(
                published_node_ids=st.published_node_ids
            )
            if "VOLUME_CONDITION" in self.rt.caps.controller:
                status.volume_condition.CopyFrom(messages.condition(st.abnormal, st.message))
            entries.append(csi_pb2.ListVolumesResponse.Entry(
                volume=messages.volume(st.volume), status=status
            ))
        return csi_pb2.ListVolumesResponse(entries=entries, next_token=next_token)

    async def GetCapacity(self, request: csi_pb2.GetCapacityRequest, context: Ctx
                          ) -> csi_pb2.GetCapacityResponse:
        self.rt.caps.require_controller("GET_CAPACITY")
        for i, cap in enumerate(request.volume_capabilities):
            v.capability(cap, f"volume_capabilities[{i}]")
        topology = (dict(request.accessible_topology.segments)
                    if request.HasField("accessible_topology") else None)
        capacity = await self.rt.run(
            self.rt.volumes.get_capacity, dict(request.parameters), topology
        )
        response = csi_pb2.GetCapacityResponse(available_capacity=capacity.available_bytes)
        response.maximum_volume_size.value = capacity.maximum_volume_size
        response.minimum_volume_size.value = capacity.minimum_volume_size
        return response

    async def ControllerGetCapabilities(
        self, request: csi_pb2.ControllerGetCapabilitiesRequest, context: Ctx
    ) -> csi_pb2.ControllerGetCapabilitiesResponse:
        return self._capabilities

    async def CreateSnapshot(self, request: csi_pb2.CreateSnapshotRequest, context: Ctx
                             ) -> csi_pb2.CreateSnapshotResponse:
        v.require(request.name, "name")
        v.require(request.source_volume_id, "source_volume_id")
        self.rt.caps.require_controller("CREATE_DELETE_SNAPSHOT")
        snapshot = await self.rt.locked(
            (f"snapshot:{request.name}", f"volume:{request.source_volume_id}"),
            self.rt.slow.snapshots.create_snapshot, request.name, request.source_volume_id,
            dict(request.parameters), slow=True)
        return csi_pb2.CreateSnapshotResponse(snapshot=messages.snapshot(snapshot))

    async def DeleteSnapshot(self, request: csi_pb2.DeleteSnapshotRequest, context: Ctx
                             ) -> csi_pb2.DeleteSnapshotResponse:
        await self._delete(request.snapshot_id, "snapshot", "CREATE_DELETE_SNAPSHOT",
                           self.rt.slow.snapshots.delete_snapshot, slow=True)
        return csi_pb2.DeleteSnapshotResponse()

    async def ListSnapshots(self, request: csi_pb2.ListSnapshotsRequest, context: Ctx
                            ) -> csi_pb2.ListSnapshotsResponse:
        self.rt.caps.require_controller("LIST_SNAPSHOTS")
        snapshots, next_token = await self.rt.run(
            self.rt.snapshots.list_snapshots, request.max_entries, request.starting_token,
            request.source_volume_id, request.snapshot_id,
        )
        return csi_pb2.ListSnapshotsResponse(
            entries=[csi_pb2.ListSnapshotsResponse.Entry(snapshot=messages.snapshot(s))
                     for s in snapshots],
            next_token=next_token,
        )

    async def GetSnapshot(self, request: csi_pb2.GetSnapshotRequest, context: Ctx
                          ) -> csi_pb2.GetSnapshotResponse:
        v.require(request.snapshot_id, "snapshot_id")
        self.rt.caps.require_controller("GET_SNAPSHOT")
        snapshot = await self.rt.run(self.rt.snapshots.get, request.snapshot_id)
        return csi_pb2.GetSnapshotResponse(snapshot=messages.snapshot(snapshot))

    async def ControllerExpandVolume(self, request: csi_pb2.ControllerExpandVolumeRequest,
                                     context: Ctx) -> csi_pb2.ControllerExpandVolumeResponse:
        v.require(request.volume_id, "volume_id")
        if not request.HasField("capacity_range"):
            raise InvalidArgument("capacity_range is required")
        cap = (v.capability(request.volume_capability)
               if request.HasField("volume_capability") else None)
        self.rt.caps.require_controller("EXPAND_VOLUME")
        size, node_needed = await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.volumes.expand_volume, request.volume_id,
            v.capacity_range(request), cap)
        return csi_pb2.ControllerExpandVolumeResponse(
            capacity_bytes=size, node_expansion_required=node_needed
        )

    async def ControllerGetVolume(self, request: csi_pb2.ControllerGetVolumeRequest,
                                  context: Ctx) -> csi_pb2.ControllerGetVolumeResponse:
        v.require(request.volume_id, "volume_id")
        self.rt.caps.require_controller("GET_VOLUME")
        st = await self.rt.run(self.rt.volumes.get_volume, request.volume_id)
        status = csi_pb2.ControllerGetVolumeResponse.VolumeStatus(
            published_node_ids=st.published_node_ids
        )
        if "VOLUME_CONDITION" in self.rt.caps.controller:
            status.volume_condition.CopyFrom(messages.condition(st.abnormal, st.message))
        return csi_pb2.ControllerGetVolumeResponse(
            volume=messages.volume(st.volume), status=status
        )

    async def ControllerModifyVolume(self, request: csi_pb2.ControllerModifyVolumeRequest,
                                     context: Ctx) -> csi_pb2.ControllerModifyVolumeResponse:
        v.require(request.volume_id, "volume_id")
        self.rt.caps.require_controller("MODIFY_VOLUME")
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.volumes.modify_volume, request.volume_id,
            dict(request.mutable_parameters))
        return csi_pb2.ControllerModifyVolumeResponse()
