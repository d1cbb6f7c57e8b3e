"""SnapshotMetadata streaming: allocated blocks of a block volume written at known offsets,
and the changed blocks between two snapshots, checked against the spec's stream rules
(one metadata type and capacity per stream, FIXED_LENGTH means constant size, at most
max_results tuples per message, strictly increasing non-overlapping ranges, starting_offset
respected) and its error table."""

from __future__ import annotations

import os
from collections.abc import Iterable

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    PluginService,
    SanityContext,
    block_capability,
    make_create_snapshot_req,
    plugin_services,
    unique_string,
)

MiB = 1024**2
VOLUME_SIZE = 16 * MiB
FIRST_WRITES = {0: 4096, 5 * MiB: 8192, 12 * MiB: 4096}
UNTOUCHED = 8 * MiB
Range = tuple[int, int]


@pytest.fixture
def flow(sanity: SanityContext) -> NodeFlow:
    if PluginService.SNAPSHOT_METADATA_SERVICE not in plugin_services(sanity.stubs):
        pytest.skip("SnapshotMetadata service not advertised")
    return NodeFlow(sanity)


def write_at(path: str, writes: dict[int, int], fill: bytes) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        for offset, size in writes.items():
            os.pwrite(fd, fill * size, offset)
        os.fsync(fd)
    finally:
        os.close(fd)


def collect(stream: Iterable, max_results: int = 0, starting_offset: int = 0) -> list[Range]:
    """Read a whole stream, checking every stream rule of the spec on the way."""
    ranges: list[Range] = []
    kinds: set[int] = set()
    capacities: set[int] = set()
    sizes: set[int] = set()
    for msg in stream:
        kinds.add(msg.block_metadata_type)
        capacities.add(msg.volume_capacity_bytes)
        if max_results:
            assert len(msg.block_metadata) <= max_results
        for block in msg.block_metadata:
            assert block.size_bytes > 0
            if ranges:
                assert ranges[-1][1] <= block.byte_offset, "ranges must increase and not overlap"
            ranges.append((block.byte_offset, block.byte_offset + block.size_bytes))
            sizes.add(block.size_bytes)
    if kinds:
        assert len(kinds) == 1, "one block_metadata_type per stream"
        kind = next(iter(kinds))
        assert kind in (
            csi_pb2.BlockMetadataType.FIXED_LENGTH,
            csi_pb2.BlockMetadataType.VARIABLE_LENGTH,
        )
        if kind == csi_pb2.BlockMetadataType.FIXED_LENGTH:
            assert len(sizes) <= 1, "FIXED_LENGTH blocks have one size"
    assert capacities <= {VOLUME_SIZE}
    if ranges:
        assert starting_offset < ranges[0][1], "the first range must not end before the start"
    return ranges


def covers(ranges: list[Range], start: int, end: int) -> bool:
    pos = start
    for lo, hi in ranges:
        if lo <= pos < hi:
            pos = hi
        if pos >= end:
            return True
    return pos >= end


@pytest.fixture
def block_volume(flow: NodeFlow) -> tuple[str, str]:
    """A published 16 MiB block volume with FIRST_WRITES written; (volume id, target)."""
    cap = block_capability()
    req = csi_pb2.CreateVolumeRequest(
        name=unique_string("blk"),
        volume_capabilities=[cap],
        capacity_range=csi_pb2.CapacityRange(required_bytes=VOLUME_SIZE),
    )
    vol = flow.res.must_create_volume(req)
    pub = flow.controller_publish(vol, "sanity-node", cap)
    flow.node_stage(vol, pub, cap)
    flow.node_publish(vol, pub, cap)
    write_at(flow.ctx.target_path, FIRST_WRITES, b"\xa5")
    return vol.volume.volume_id, flow.ctx.target_path


def snapshot(flow: NodeFlow, volume_id: str) -> str:
    rsp = flow.res.must_create_snapshot(make_create_snapshot_req(unique_string("bs"), volume_id))
    return rsp.snapshot.snapshot_id


class TestGetMetadataAllocated:
    def test_allocated_blocks_cover_what_was_written_and_skip_holes(
        self, flow: NodeFlow, block_volume: tuple[str, str]
    ) -> None:
        sid = snapshot(flow, block_volume[0])
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataAllocated(
            csi_pb2.GetMetadataAllocatedRequest(snapshot_id=sid)
        )
        ranges = collect(stream)
        for offset, size in FIRST_WRITES.items():
            assert covers(ranges, offset, offset + size), (offset, ranges)
        assert not covers(ranges, UNTOUCHED, UNTOUCHED + 1), "a hole is not allocated"

    def test_max_results_and_starting_offset_are_respected(
        self, flow: NodeFlow, block_volume: tuple[str, str]
    ) -> None:
        sid = snapshot(flow, block_volume[0])
        start = 5 * MiB + 4096
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataAllocated(
            csi_pb2.GetMetadataAllocatedRequest(
                snapshot_id=sid, starting_offset=start, max_results=1
            )
        )
        ranges = collect(stream, max_results=1, starting_offset=start)
        assert covers(ranges, 12 * MiB, 12 * MiB + 4096)
        assert not covers(ranges, 0, 4096)

    @pytest.mark.parametrize(
        ("snapshot_id", "offset", "code"),
        [
            ("", 0, grpc.StatusCode.INVALID_ARGUMENT),
            ("no-such-snapshot", 0, grpc.StatusCode.NOT_FOUND),
            (None, VOLUME_SIZE + 1, grpc.StatusCode.OUT_OF_RANGE),
            (None, -1, grpc.StatusCode.OUT_OF_RANGE),
        ],
    )
    def test_bad_requests_fail_with_the_spec_code(
        self,
        flow: NodeFlow,
        block_volume: tuple[str, str],
        snapshot_id: str | None,
        offset: int,
        code: grpc.StatusCode,
    ) -> None:
        sid = snapshot(flow, block_volume[0]) if snapshot_id is None else snapshot_id
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataAllocated(
            csi_pb2.GetMetadataAllocatedRequest(snapshot_id=sid, starting_offset=offset)
        )
        with pytest.raises(grpc.RpcError) as err:
            list(stream)
        assert err.value.code() == code


class TestGetMetadataDelta:
    def test_delta_lists_exactly_the_ranges_changed_between_two_snapshots(
        self, flow: NodeFlow, block_volume: tuple[str, str]
    ) -> None:
        vid, target = block_volume
        base = snapshot(flow, vid)
        changed = {5 * MiB: 4096, 9 * MiB: 4096}
        write_at(target, changed, b"\x5a")
        head = snapshot(flow, vid)
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataDelta(
            csi_pb2.GetMetadataDeltaRequest(base_snapshot_id=base, target_snapshot_id=head)
        )
        ranges = collect(stream)
        for offset, size in changed.items():
            assert covers(ranges, offset, offset + size), (offset, ranges)
        for offset in (0, 12 * MiB, UNTOUCHED):
            assert not covers(ranges, offset, offset + 1), f"{offset} did not change"

    def test_unknown_base_snapshot_is_not_found(
        self, flow: NodeFlow, block_volume: tuple[str, str]
    ) -> None:
        head = snapshot(flow, block_volume[0])
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataDelta(
            csi_pb2.GetMetadataDeltaRequest(base_snapshot_id="nope", target_snapshot_id=head)
        )
        with pytest.raises(grpc.RpcError) as err:
            list(stream)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND

    @pytest.mark.parametrize(
        ("base", "target", "offset", "code"),
        [
            ("", "head", 0, grpc.StatusCode.INVALID_ARGUMENT),
            ("base", "", 0, grpc.StatusCode.INVALID_ARGUMENT),
            ("base", "no-such-snapshot", 0, grpc.StatusCode.NOT_FOUND),
            ("base", "head", VOLUME_SIZE + 1, grpc.StatusCode.OUT_OF_RANGE),
        ],
    )
    def test_bad_delta_requests_fail_with_the_spec_code(
        self,
        flow: NodeFlow,
        block_volume: tuple[str, str],
        base: str,
        target: str,
        offset: int,
        code: grpc.StatusCode,
    ) -> None:
        ids = {"base": snapshot(flow, block_volume[0]), "head": snapshot(flow, block_volume[0])}
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataDelta(
            csi_pb2.GetMetadataDeltaRequest(
                base_snapshot_id=ids.get(base, base),
                target_snapshot_id=ids.get(target, target),
                starting_offset=offset,
            )
        )
        with pytest.raises(grpc.RpcError) as err:
            list(stream)
        assert err.value.code() == code

    def test_delta_respects_max_results_and_starting_offset(
        self, flow: NodeFlow, block_volume: tuple[str, str]
    ) -> None:
        vid, target = block_volume
        base = snapshot(flow, vid)
        write_at(target, {1 * MiB: 4096, 3 * MiB: 4096, 9 * MiB: 4096}, b"\x77")
        head = snapshot(flow, vid)
        start = 2 * MiB
        stream = flow.ctx.stubs.snapshot_metadata.GetMetadataDelta(
            csi_pb2.GetMetadataDeltaRequest(
                base_snapshot_id=base, target_snapshot_id=head, starting_offset=start, max_results=1
            )
        )
        ranges = collect(stream, max_results=1, starting_offset=start)
        assert covers(ranges, 3 * MiB, 3 * MiB + 4096) and covers(ranges, 9 * MiB, 9 * MiB + 4096)
        assert not covers(ranges, 1 * MiB, 1 * MiB + 1)
