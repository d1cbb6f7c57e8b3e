"""SnapshotMetadata service: allocated and changed block ranges, server-streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator

from csi_driver.domain.block_metadata import BlockMetadata, Range
from csi_driver.errors import InvalidArgument
from csi_driver.service import validation as v
from csi_driver.service.context import Ctx, Runtime
from csi_protos import csi_pb2, csi_pb2_grpc

DEFAULT_MAX_RESULTS = 256
VARIABLE = csi_pb2.BlockMetadataType.VARIABLE_LENGTH


def _pages(ranges: list[Range], max_results: int) -> list[list[Range]]:
    if max_results < 0:
        raise InvalidArgument("max_results must not be negative")
    size = max_results or DEFAULT_MAX_RESULTS
    return [ranges[i:i + size] for i in range(0, len(ranges), size)]


def _tuples(page: list[Range]) -> list[csi_pb2.BlockMetadata]:
    return [csi_pb2.BlockMetadata(byte_offset=o, size_bytes=s) for o, s in page]


class SnapshotMetadataServicer(csi_pb2_grpc.SnapshotMetadataServicer):
    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.metadata: BlockMetadata = rt.slow.metadata

    async def GetMetadataAllocated(
        self, request: csi_pb2.GetMetadataAllocatedRequest, context: Ctx
    ) -> AsyncIterator[csi_pb2.GetMetadataAllocatedResponse]:
        """Ascending, disjoint VARIABLE_LENGTH ranges; at most max_results per message."""
        v.require(request.snapshot_id, "snapshot_id")
        self.rt.caps.require_service("SNAPSHOT_METADATA_SERVICE")
        capacity, ranges = await self.rt.run_slow(
            self.metadata.allocated, request.snapshot_id, request.starting_offset
        )
        for page in _pages(ranges, request.max_results):
            yield csi_pb2.GetMetadataAllocatedResponse(
                block_metadata_type=VARIABLE, volume_capacity_bytes=capacity,
                block_metadata=_tuples(page),
            )

    async def GetMetadataDelta(
        self, request: csi_pb2.GetMetadataDeltaRequest, context: Ctx
    ) -> AsyncIterator[csi_pb2.GetMetadataDeltaResponse]:
        v.require(request.base_snapshot_id, "base_snapshot_id")
        v.require(request.target_snapshot_id, "target_snapshot_id")
        self.rt.caps.require_service("SNAPSHOT_METADATA_SERVICE")
        capacity, ranges = await self.rt.run_slow(
            self.metadata.delta, request.base_snapshot_id, request.target_snapshot_id,
            request.starting_offset,
        )
        for page in _pages(ranges, request.max_results):
            yield csi_pb2.GetMetadataDeltaResponse(
                block_metadata_type=VARIABLE, volume_capacity_bytes=capacity,
                block_metadata=_tuples(page),
            )
