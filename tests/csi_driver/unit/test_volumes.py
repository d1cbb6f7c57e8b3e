"""CreateVolume / DeleteVolume / list / capacity / expand / modify rules, without grpc."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from csi_driver.domain.volumes import CapacityRange
from csi_driver.errors import (
    Aborted,
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
    ResourceExhausted,
)

from .conftest import GiB, block_cap, create_args, make_domain, mount_cap


def test_create_volume_twice_with_same_arguments_returns_the_same_volume(domain):
    first = domain.volumes.create_volume(create_args("v"))
    again = domain.volumes.create_volume(create_args("v"))
    assert again.volume_id == first.volume_id


def test_create_volume_same_name_other_capacity_already_exists(domain):
    domain.volumes.create_volume(create_args("v", GiB))
    with pytest.raises(AlreadyExists):
        domain.volumes.create_volume(create_args("v", 2 * GiB))


def test_create_volume_same_name_other_parameters_already_exists(domain):
    domain.volumes.create_volume(create_args("v"))
    with pytest.raises(AlreadyExists):
        domain.volumes.create_volume(create_args("v", parameters={"pool": "default"}))


def test_create_volume_beyond_max_size_is_out_of_range(domain):
    with pytest.raises(OutOfRange):
        domain.volumes.create_volume(create_args("v", 2 << 40))


def test_create_volume_when_pool_is_full_is_resource_exhausted(tmp_path):
    d = make_domain(tmp_path, capacity=(("default", 3 * GiB),))
    d.volumes.create_volume(create_args("a", 2 * GiB))
    with pytest.raises(ResourceExhausted):
        d.volumes.create_volume(create_args("b", 2 * GiB))


def test_get_capacity_falls_as_volumes_are_created(domain):
    before = domain.volumes.get_capacity({}, None).available_bytes
    domain.volumes.create_volume(create_args("v", 5 * GiB))
    assert domain.volumes.get_capacity({}, None).available_bytes == before - 5 * GiB


def test_get_capacity_reports_the_largest_volume_that_still_fits_per_segment(tmp_path):
    d = make_domain(tmp_path, capacity=(("default", 3 * GiB),), max_volume_size=2 * GiB)
    segment = {"topology.csi-mini.example.com/node": "node-1"}
    assert d.volumes.get_capacity({}, segment).maximum_volume_size == 2 * GiB
    d.volumes.create_volume(create_args("a", 2 * GiB))
    left = d.volumes.get_capacity({}, segment)
    assert (left.available_bytes, left.maximum_volume_size) == (GiB, GiB)
    elsewhere = d.volumes.get_capacity({}, {"topology.csi-mini.example.com/node": "node-9"})
    assert (elsewhere.available_bytes, elsewhere.maximum_volume_size) == (0, 0)


def test_delete_volume_gives_its_capacity_back(domain):
    before = domain.volumes.get_capacity({}, None).available_bytes
    v = domain.volumes.create_volume(create_args("v", 5 * GiB))
    domain.volumes.delete_volume(v.volume_id)
    assert domain.volumes.get_capacity({}, None).available_bytes == before
    assert not os.path.exists(domain.data.volume_path(v.volume_id, "mount"))


def test_delete_unknown_volume_is_ok(domain):
    domain.volumes.delete_volume("no-such-volume")


def test_delete_attached_volume_fails_precondition(domain):
    v = domain.volumes.create_volume(create_args("v"))
    domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(FailedPrecondition):
        domain.volumes.delete_volume(v.volume_id)


def test_mixing_block_and_mount_capabilities_is_invalid(domain):
    from csi_driver.domain.volumes import CreateVolumeArgs

    with pytest.raises(InvalidArgument):
        domain.volumes.create_volume(
            CreateVolumeArgs("v", (mount_cap(), block_cap()), CapacityRange(GiB))
        )


def test_block_volume_is_a_sparse_file_of_its_capacity(domain):
    v = domain.volumes.create_volume(create_args("b", GiB, block_cap()))
    st = os.stat(domain.data.volume_path(v.volume_id, "block"))
    assert st.st_size == GiB
    assert st.st_blocks * 512 < GiB


def test_unknown_mutable_parameter_at_create_is_invalid(domain):
    with pytest.raises(InvalidArgument):
        domain.volumes.create_volume(create_args("v", mutable_parameters={"XXX": "1"}))


def test_clone_from_missing_volume_is_not_found(domain):
    with pytest.raises(NotFound):
        domain.volumes.create_volume(create_args("c", source_type="volume", source_id="nope"))


def test_clone_copies_the_data(domain):
    src = domain.volumes.create_volume(create_args("src"))
    with open(os.path.join(domain.data.volume_path(src.volume_id, "mount"), "f"), "w") as f:
        f.write("hello")
    clone = domain.volumes.create_volume(
        create_args("clone", source_type="volume", source_id=src.volume_id)
    )
    with open(os.path.join(domain.data.volume_path(clone.volume_id, "mount"), "f")) as f:
        assert f.read() == "hello"


def test_list_volumes_pages_with_next_token(domain):
    ids = [domain.volumes.create_volume(create_args(f"v{i}")).volume_id for i in range(5)]
    page, token = domain.volumes.list_volumes(2, "")
    seen = [s.volume.volume_id for s in page]
    while token:
        page, token = domain.volumes.list_volumes(2, token)
        seen += [s.volume.volume_id for s in page]
    assert seen == ids


def test_list_volumes_with_invalid_token_is_aborted(domain):
    with pytest.raises(Aborted):
        domain.volumes.list_volumes(0, "invalid-token")


def test_expand_to_a_smaller_size_returns_current_size(domain):
    v = domain.volumes.create_volume(create_args("v", 2 * GiB))
    size, _ = domain.volumes.expand_volume(v.volume_id, CapacityRange(GiB))
    assert size == 2 * GiB


def test_expand_beyond_max_size_is_out_of_range(domain):
    v = domain.volumes.create_volume(create_args("v"))
    with pytest.raises(OutOfRange):
        domain.volumes.expand_volume(v.volume_id, CapacityRange(4 << 40))


def test_offline_expansion_of_a_published_volume_fails_precondition(tmp_path):
    d = make_domain(tmp_path, expansion="offline")
    v = d.volumes.create_volume(create_args("v"))
    d.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(FailedPrecondition):
        d.volumes.expand_volume(v.volume_id, CapacityRange(2 * GiB))


def test_expand_block_volume_grows_the_file_and_needs_no_node_step(domain):
    v = domain.volumes.create_volume(create_args("b", GiB, block_cap()))
    size, node_needed = domain.volumes.expand_volume(v.volume_id, CapacityRange(2 * GiB))
    assert size == 2 * GiB and node_needed is False
    assert os.path.getsize(domain.data.volume_path(v.volume_id, "block")) == 2 * GiB


def test_modify_with_unknown_key_applies_nothing(domain):
    v = domain.volumes.create_volume(create_args("v", mutable_parameters={"iops": "10"}))
    with pytest.raises(InvalidArgument):
        domain.volumes.modify_volume(v.volume_id, {"iops": "20", "XXX": "1"})
    assert domain.store.get_volume(v.volume_id).mutable_parameters == {"iops": "10"}


def test_modify_is_idempotent(domain):
    v = domain.volumes.create_volume(create_args("v"))
    domain.volumes.modify_volume(v.volume_id, {"iops": "20"})
    domain.volumes.modify_volume(v.volume_id, {"iops": "20"})
    assert domain.store.get_volume(v.volume_id).mutable_parameters == {"iops": "20"}


def test_requisite_topology_no_node_offers_is_resource_exhausted(domain):
    with pytest.raises(ResourceExhausted):
        domain.volumes.create_volume(
            create_args("v", requisite=({"topology.csi-mini.example.com/node": "elsewhere"},))
        )


def test_preferred_topology_places_the_volume_on_that_node(domain):
    node_topology = {"topology.csi-mini.example.com/node": "node-1"}
    v = domain.volumes.create_volume(
        create_args("v", requisite=(node_topology,), preferred=(node_topology,))
    )
    assert v.accessible_topology == [node_topology]


def test_delete_volume_with_a_snapshot_succeeds_and_the_snapshot_still_restores(domain):
    v = domain.volumes.create_volume(create_args("v", 1 << 20, block_cap()))
    with open(domain.data.volume_path(v.volume_id, "block"), "r+b") as f:
        f.seek(4096)
        f.write(b"block payload")
    snap = domain.snapshots.create_snapshot("s", v.volume_id, {})
    domain.volumes.delete_volume(v.volume_id)
    assert domain.store.get_volume(v.volume_id) is None
    assert domain.snapshots.get(snap.snapshot_id).source_volume_id == v.volume_id
    restored = domain.volumes.create_volume(create_args(
        "r", 1 << 20, block_cap(), source_type="snapshot", source_id=snap.snapshot_id))
    with open(domain.data.volume_path(restored.volume_id, "block"), "rb") as f:
        f.seek(4096)
        assert f.read(13) == b"block payload"


def test_with_snapshots_block_delete_a_volume_with_a_snapshot_fails_precondition(tmp_path):
    d = make_domain(tmp_path, snapshots_block_delete=True)
    v = d.volumes.create_volume(create_args("v"))
    snap = d.snapshots.create_snapshot("s", v.volume_id, {})
    with pytest.raises(FailedPrecondition):
        d.volumes.delete_volume(v.volume_id)
    d.snapshots.delete_snapshot(snap.snapshot_id)
    d.volumes.delete_volume(v.volume_id)
    d.store.close()


def _records(domain):
    return (lambda v: domain.store.get_volume(v) is not None,
            lambda s: domain.store.get_snapshot(s) is not None)


def test_sweep_removes_data_without_a_record_once_old_enough_and_keeps_the_rest(domain):
    kept = domain.volumes.create_volume(create_args("kept"))
    orphan = domain.data.volume_path("orphan-id", "mount")
    os.makedirs(os.path.join(orphan, "sub"))
    leftover_copy = domain.data.snapshot_path("snap-id", "block") + ".tmp"
    with open(leftover_copy, "wb") as f:
        f.truncate(1 << 20)
    assert domain.data.sweep(*_records(domain), min_age=60) == 0  # too fresh: maybe in use
    later = time.time() + 120
    assert domain.data.sweep(*_records(domain), min_age=60, now=later) == 2
    assert not os.path.exists(orphan)
    assert not os.path.exists(leftover_copy)
    assert os.path.exists(domain.data.volume_path(kept.volume_id, "mount"))


def test_sweep_spares_a_fresh_copy_that_kept_its_sources_old_mtimes(domain):
    """A directory copy keeps its source's mtimes (copystat), so a restore of an old
    snapshot looks old by mtime while it is being made: the sweep goes by the newest
    change (ctime counts) anywhere in the tree."""
    source = domain.data.volume_path("source-id", "mount")
    os.makedirs(source)
    with open(os.path.join(source, "f"), "w") as f:
        f.write("x")
    old = time.time() - 3600
    for path in (os.path.join(source, "f"), source):
        os.utime(path, (old, old))
    copy = domain.data.volume_path("copy-in-progress", "mount") + ".tmp"
    shutil.copytree(source, copy)
    assert os.stat(copy).st_mtime < time.time() - 3000
    shutil.rmtree(source)
    assert domain.data.sweep(*_records(domain), min_age=60) == 0
    assert os.path.exists(copy)
