"""Node service: thin edge over the node-side domain (stage, publish, stats, expand)."""

from __future__ import annotations

from csi_driver.service import messages
from csi_driver.service import validation as v
from csi_driver.service.context import Ctx, Runtime
from csi_protos import csi_pb2, csi_pb2_grpc

Unit = csi_pb2.VolumeUsage.Unit


class NodeServicer(csi_pb2_grpc.NodeServicer):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._capabilities = messages.capabilities(
            csi_pb2.NodeGetCapabilitiesResponse, csi_pb2.NodeServiceCapability, rt.caps.node)

    async def NodeStageVolume(self, request: csi_pb2.NodeStageVolumeRequest, context: Ctx
                              ) -> csi_pb2.NodeStageVolumeResponse:
        v.require(request.volume_id, "volume_id")
        staging = v.require_path(request.staging_target_path, "staging_target_path")
        cap = v.required_capability(request)
        self.rt.caps.require_node("STAGE_UNSTAGE_VOLUME")
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.node.stage, request.volume_id, staging, cap)
        return csi_pb2.NodeStageVolumeResponse()

    async def NodeUnstageVolume(self, request: csi_pb2.NodeUnstageVolumeRequest, context: Ctx
                                ) -> csi_pb2.NodeUnstageVolumeResponse:
        v.require(request.volume_id, "volume_id")
        staging = v.require_path(request.staging_target_path, "staging_target_path")
        self.rt.caps.require_node("STAGE_UNSTAGE_VOLUME")
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.node.unstage, request.volume_id, staging)
        return csi_pb2.NodeUnstageVolumeResponse()

    async def NodePublishVolume(self, request: csi_pb2.NodePublishVolumeRequest, context: Ctx
                                ) -> csi_pb2.NodePublishVolumeResponse:
        v.require(request.volume_id, "volume_id")
        target = v.require_path(request.target_path, "target_path")
        staging = (v.normalised_path(request.staging_target_path, "staging_target_path")
                   if request.staging_target_path else "")
        cap = v.required_capability(request)
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.node.publish, request.volume_id, target, staging,
            cap, request.readonly, dict(request.volume_context))
        return csi_pb2.NodePublishVolumeResponse()

    async def NodeUnpublishVolume(self, request: csi_pb2.NodeUnpublishVolumeRequest,
                                  context: Ctx) -> csi_pb2.NodeUnpublishVolumeResponse:
        v.require(request.volume_id, "volume_id")
        target = v.require_path(request.target_path, "target_path")
        await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.node.unpublish, request.volume_id, target)
        return csi_pb2.NodeUnpublishVolumeResponse()

    async def NodeGetVolumeStats(self, request: csi_pb2.NodeGetVolumeStatsRequest,
                                 context: Ctx) -> csi_pb2.NodeGetVolumeStatsResponse:
        v.require(request.volume_id, "volume_id")
        v.require(request.volume_path, "volume_path")
        self.rt.caps.require_node("GET_VOLUME_STATS")
        stats = await self.rt.run_slow(self.rt.slow.node.stats, request.volume_id,
                                         request.volume_path)
        usage = [csi_pb2.VolumeUsage(unit=Unit.BYTES, total=stats.total_bytes,
                                     used=stats.used_bytes, available=stats.available_bytes)]
        if stats.access_type == "mount":
            usage.append(csi_pb2.VolumeUsage(unit=Unit.INODES, total=stats.inodes_total,
                                             used=stats.inodes_used,
                                             available=stats.inodes_available))
        response = csi_pb2.NodeGetVolumeStatsResponse(usage=usage)
        if "VOLUME_CONDITION" in self.rt.caps.node:
            response.volume_condition.CopyFrom(messages.condition(stats.abnormal, stats.message))
        return response

    async def NodeExpandVolume(self, request: csi_pb2.NodeExpandVolumeRequest, context: Ctx
                               ) -> csi_pb2.NodeExpandVolumeResponse:
        v.require(request.volume_id, "volume_id")
        v.require(request.volume_path, "volume_path")
        cap = (v.capability(request.volume_capability)
               if request.HasField("volume_capability") else None)
        capacity = v.capacity_range(request)
        self.rt.caps.require_node("EXPAND_VOLUME")
        size = await self.rt.locked(
            f"volume:{request.volume_id}", self.rt.node.expand, request.volume_id,
            request.volume_path, capacity.required_bytes, cap)
        return csi_pb2.NodeExpandVolumeResponse(capacity_bytes=size)

    async def NodeGetCapabilities(self, request: csi_pb2.NodeGetCapabilitiesRequest,
                                  context: Ctx) -> csi_pb2.NodeGetCapabilitiesResponse:
        return self._capabilities

    async def NodeGetInfo(self, request: csi_pb2.NodeGetInfoRequest, context: Ctx
                          ) -> csi_pb2.NodeGetInfoResponse:
        node = await self.rt.run(self.rt.node.register)
        response = csi_pb2.NodeGetInfoResponse(
            node_id=node.node_id, max_volumes_per_node=node.max_volumes
        )
        if node.topology:
            response.accessible_topology.segments.update(node.topology)
        return response
