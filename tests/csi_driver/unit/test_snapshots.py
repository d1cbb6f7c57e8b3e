"""Snapshots, group snapshots and block metadata, without grpc."""

from __future__ import annotations

import os

import pytest

from csi_driver.domain.block_metadata import allocated_ranges, changed_ranges
from csi_driver.errors import Aborted, AlreadyExists, InvalidArgument, NotFound

from .conftest import GiB, block_cap, create_args


def test_create_snapshot_twice_with_same_source_is_ok(domain):
    v = domain.volumes.create_volume(create_args("v"))
    first = domain.snapshots.create_snapshot("s", v.volume_id, {})
    assert domain.snapshots.create_snapshot("s", v.volume_id, {}).snapshot_id == first.snapshot_id


def test_create_snapshot_same_name_other_source_already_exists(domain):
    a = domain.volumes.create_volume(create_args("a"))
    b = domain.volumes.create_volume(create_args("b"))
    domain.snapshots.create_snapshot("s", a.volume_id, {})
    with pytest.raises(AlreadyExists):
        domain.snapshots.create_snapshot("s", b.volume_id, {})


def test_snapshot_of_missing_volume_is_not_found(domain):
    with pytest.raises(NotFound):
        domain.snapshots.create_snapshot("s", "nope", {})


def test_restore_from_snapshot_sees_data_written_before_the_snapshot(domain):
    v = domain.volumes.create_volume(create_args("v"))
    path = domain.data.volume_path(v.volume_id, "mount")
    with open(os.path.join(path, "f"), "w") as f:
        f.write("before")
    snap = domain.snapshots.create_snapshot("s", v.volume_id, {})
    with open(os.path.join(path, "f"), "w") as f:
        f.write("after")
    restored = domain.volumes.create_volume(
        create_args("r", source_type="snapshot", source_id=snap.snapshot_id)
    )
    with open(os.path.join(domain.data.volume_path(restored.volume_id, "mount"), "f")) as f:
        assert f.read() == "before"


def test_list_snapshots_filters_by_source_and_rejects_bad_tokens(domain):
    a = domain.volumes.create_volume(create_args("a"))
    b = domain.volumes.create_volume(create_args("b"))
    sa = domain.snapshots.create_snapshot("sa", a.volume_id, {})
    domain.snapshots.create_snapshot("sb", b.volume_id, {})
    found, _ = domain.snapshots.list_snapshots(0, "", a.volume_id, "")
    assert [s.snapshot_id for s in found] == [sa.snapshot_id]
    with pytest.raises(Aborted):
        domain.snapshots.list_snapshots(0, "invalid-token", "", "")


def test_group_snapshot_member_cannot_be_deleted_alone(domain):
    a = domain.volumes.create_volume(create_args("a"))
    group = domain.snapshots.create_group("g", (a.volume_id,), {})
    with pytest.raises(InvalidArgument):
        domain.snapshots.delete_snapshot(group.snapshot_ids[0])
    domain.snapshots.delete_group(group.group_snapshot_id, ())
    assert domain.store.get_snapshot(group.snapshot_ids[0]) is None


def test_group_snapshot_same_name_other_volumes_already_exists(domain):
    a = domain.volumes.create_volume(create_args("a"))
    b = domain.volumes.create_volume(create_args("b"))
    domain.snapshots.create_group("g", (a.volume_id,), {})
    with pytest.raises(AlreadyExists):
        domain.snapshots.create_group("g", (a.volume_id, b.volume_id), {})


def test_get_group_with_mismatched_snapshot_ids_is_invalid(domain):
    a = domain.volumes.create_volume(create_args("a"))
    group = domain.snapshots.create_group("g", (a.volume_id,), {})
    with pytest.raises(InvalidArgument):
        domain.snapshots.get_group(group.group_snapshot_id, ("other",))


def _write_at(path, offset, data):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_allocated_and_changed_ranges_follow_real_extents(domain):
    v = domain.volumes.create_volume(create_args("b", GiB, block_cap()))
    path = domain.data.volume_path(v.volume_id, "block")
    _write_at(path, 1 << 20, b"a" * 4096)
    base = domain.snapshots.create_snapshot("s1", v.volume_id, {})
    _write_at(path, 8 << 20, b"b" * 4096)
    target = domain.snapshots.create_snapshot("s2", v.volume_id, {})
    base_path = domain.data.snapshot_path(base.snapshot_id, "block")
    target_path = domain.data.snapshot_path(target.snapshot_id, "block")
    allocated = list(allocated_ranges(target_path, 0))
    assert (1 << 20) in [o for o, _ in allocated] and (8 << 20) in [o for o, _ in allocated]
    assert list(changed_ranges(base_path, target_path, 0)) == [(8 << 20, 4096)]
    assert next(iter(allocated_ranges(target_path, 2 << 20)))[0] == 8 << 20
