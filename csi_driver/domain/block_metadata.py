"""Allocated and changed byte ranges of block-volume snapshots (SnapshotMetadata).

Allocated ranges come from the sparse file's extents (SEEK_DATA/SEEK_HOLE);
changed ranges compare the two snapshots' contents block by block over the union
of their allocated extents.  Ranges are VARIABLE_LENGTH, ascending, disjoint.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from csi_driver.errors import InvalidArgument, NotFound, OutOfRange
from csi_driver.state.records import Snapshot
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData, data_extents

COMPARE_BLOCK = 4096
Range = tuple[int, int]  # (byte_offset, size_bytes)


def _clip(ranges: Iterator[Range], starting_offset: int) -> Iterator[Range]:
    for offset, size in ranges:
        end = offset + size
        if end <= starting_offset:
            continue
        start = max(offset, starting_offset)
        yield start, end - start


def allocated_ranges(path: str, starting_offset: int) -> Iterator[Range]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        yield from _clip(data_extents(f.fileno(), size), starting_offset)


def _merge(ranges: list[Range]) -> list[Range]:
    merged: list[Range] = []
    for offset, size in sorted(ranges):
        if merged and offset <= merged[-1][0] + merged[-1][1]:
            last_off, last_size = merged[-1]
            merged[-1] = (last_off, max(last_off + last_size, offset + size) - last_off)
        else:
            merged.append((offset, size))
    return merged


def changed_ranges(base_path: str, target_path: str, starting_offset: int) -> Iterator[Range]:
    """Ranges where target differs from base (a range allocated in either is compared)."""
    with open(base_path, "rb") as base, open(target_path, "rb") as target:
        base_size = os.fstat(base.fileno()).st_size
        target_size = os.fstat(target.fileno()).st_size
        candidates = _merge(
            list(data_extents(base.fileno(), base_size))
            + list(data_extents(target.fileno(), target_size))
        )
        pending: Range | None = None
        for offset, size in _clip(iter(candidates), starting_offset):
            block = offset - offset % COMPARE_BLOCK
            end = offset + size
            while block < end:
                length = min(COMPARE_BLOCK, max(target_size, base_size) - block)
                if length <= 0:
                    break
                base.seek(block)
                target.seek(block)
                if base.read(length).ljust(length, b"\0") != target.read(length).ljust(
                    length, b"\0"
                ):
                    if pending and pending[0] + pending[1] == block:
                        pending = (pending[0], pending[1] + length)
                    else:
                        if pending:
                            yield pending
                        pending = (block, length)
                block += COMPARE_BLOCK
        if pending:
            yield pending


class BlockMetadata:
    """The SnapshotMetadata rules: which snapshots qualify and which offsets are valid."""

    def __init__(self, store: Store, data: VolumeData) -> None:
        self.store = store
        self.data = data

    def _block_snapshot(self, snapshot_id: str, what: str) -> Snapshot:
        snapshot = self.store.get_snapshot(snapshot_id)
        if snapshot is None:
            raise NotFound(f"{what} {snapshot_id!r} does not exist")
        if snapshot.access_type != "block":
            raise InvalidArgument(f"{what} {snapshot_id!r} is not of a block volume")
        return snapshot

    @staticmethod
    def _check_offset(starting_offset: int, capacity: int) -> None:
        if starting_offset < 0 or starting_offset > capacity:
            raise OutOfRange(f"starting_offset {starting_offset} is outside 0..{capacity}")

    def allocated(self, snapshot_id: str, starting_offset: int) -> tuple[int, list[Range]]:
        """(volume capacity, allocated ranges from starting_offset)."""
        snapshot = self._block_snapshot(snapshot_id, "snapshot")
        self._check_offset(starting_offset, snapshot.size_bytes)
        path = self.data.snapshot_path(snapshot_id, "block")
        return snapshot.size_bytes, list(allocated_ranges(path, starting_offset))

    def delta(
        self, base_id: str, target_id: str, starting_offset: int
    ) -> tuple[int, list[Range]]:
        """(target capacity, ranges that differ); both must be of the same volume."""
        base = self._block_snapshot(base_id, "base snapshot")
        target = self._block_snapshot(target_id, "target snapshot")
        if base.source_volume_id != target.source_volume_id:
            raise InvalidArgument("base and target snapshots are of different volumes")
        self._check_offset(starting_offset, target.size_bytes)
        return target.size_bytes, list(changed_ranges(
            self.data.snapshot_path(base_id, "block"),
            self.data.snapshot_path(target_id, "block"),
            starting_offset,
        ))
