"""ControllerPublish and node stage/publish rules, without grpc (symlink publishing)."""

from __future__ import annotations

import os

import pytest

from csi_driver.domain.access_modes import AccessMode
from csi_driver.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from csi_driver.state.records import Node

from .conftest import create_args, make_domain, mount_cap


def _second_node(domain, node_id="node-2"):
    with domain.store.transaction():
        domain.store.upsert_node(Node(node_id, {}, 0))


def test_publish_twice_compatibly_is_ok(domain):
    v = domain.volumes.create_volume(create_args("v"))
    first = domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    assert domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False) == first


def test_publish_same_node_other_readonly_already_exists(domain):
    v = domain.volumes.create_volume(create_args("v"))
    domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(AlreadyExists):
        domain.attachments.publish(v.volume_id, "node-1", mount_cap(), True)


def test_publish_to_unknown_node_is_not_found(domain):
    v = domain.volumes.create_volume(create_args("v"))
    with pytest.raises(NotFound):
        domain.attachments.publish(v.volume_id, "ghost", mount_cap(), False)


def test_single_node_volume_published_elsewhere_fails_precondition(domain):
    _second_node(domain)
    v = domain.volumes.create_volume(create_args("v"))
    domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(FailedPrecondition):
        domain.attachments.publish(v.volume_id, "node-2", mount_cap(), False)


def test_multi_node_multi_writer_may_attach_to_two_nodes(domain):
    _second_node(domain)
    cap = mount_cap(AccessMode.MULTI_NODE_MULTI_WRITER)
    v = domain.volumes.create_volume(create_args("v", cap=cap))
    domain.attachments.publish(v.volume_id, "node-1", cap, False)
    domain.attachments.publish(v.volume_id, "node-2", cap, False)


def test_multi_node_reader_only_requires_readonly(domain):
    cap = mount_cap(AccessMode.MULTI_NODE_READER_ONLY)
    v = domain.volumes.create_volume(create_args("v", cap=cap))
    with pytest.raises(InvalidArgument):
        domain.attachments.publish(v.volume_id, "node-1", cap, False)


def test_attach_limit_is_resource_exhausted(tmp_path):
    d = make_domain(tmp_path, max_volumes_per_node=1)
    a = d.volumes.create_volume(create_args("a"))
    b = d.volumes.create_volume(create_args("b"))
    d.attachments.publish(a.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(ResourceExhausted):
        d.attachments.publish(b.volume_id, "node-1", mount_cap(), False)


def test_unpublish_of_what_is_not_attached_is_ok(domain):
    domain.attachments.unpublish("nope", "node-1")


def _staged(domain, tmp_path, cap=None):
    v = domain.volumes.create_volume(create_args("v", cap=cap or mount_cap()))
    domain.attachments.publish(v.volume_id, "node-1", cap or mount_cap(), False)
    staging = tmp_path / "staging"
    staging.mkdir()
    domain.node.stage(v.volume_id, str(staging), cap or mount_cap())
    return v, str(staging)


def test_stage_twice_is_ok_and_at_another_path_already_exists(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    domain.node.stage(v.volume_id, staging, mount_cap())
    with pytest.raises(AlreadyExists):
        domain.node.stage(v.volume_id, staging + "-other", mount_cap())


def test_node_publish_without_staging_path_fails_precondition(domain, tmp_path):
    v, _ = _staged(domain, tmp_path)
    with pytest.raises(FailedPrecondition):
        domain.node.publish(v.volume_id, str(tmp_path / "t"), "", mount_cap(), False)


def test_node_publish_of_unstaged_volume_fails_precondition(domain, tmp_path):
    v = domain.volumes.create_volume(create_args("v"))
    with pytest.raises(FailedPrecondition):
        domain.node.publish(v.volume_id, str(tmp_path / "t"), str(tmp_path), mount_cap(), False)


def test_node_publish_creates_target_and_unpublish_removes_it(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    target = str(tmp_path / "target")
    domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    with open(os.path.join(target, "file"), "w") as f:
        f.write("data")
    assert os.path.exists(os.path.join(domain.data.volume_path(v.volume_id, "mount"), "file"))
    domain.node.unpublish(v.volume_id, target)
    assert not os.path.lexists(target)
    domain.node.unpublish(v.volume_id, target)


def test_single_node_writer_may_publish_at_two_targets(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    domain.node.publish(v.volume_id, str(tmp_path / "t1"), staging, mount_cap(), False)
    domain.node.publish(v.volume_id, str(tmp_path / "t2"), staging, mount_cap(), False)


def test_single_node_single_writer_second_target_fails_precondition(domain, tmp_path):
    cap = mount_cap(AccessMode.SINGLE_NODE_SINGLE_WRITER)
    v, staging = _staged(domain, tmp_path, cap)
    domain.node.publish(v.volume_id, str(tmp_path / "t1"), staging, cap, False)
    with pytest.raises(FailedPrecondition):
        domain.node.publish(v.volume_id, str(tmp_path / "t2"), staging, cap, False)


def test_same_target_with_other_readonly_already_exists(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    target = str(tmp_path / "t")
    domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    with pytest.raises(AlreadyExists):
        domain.node.publish(v.volume_id, target, staging, mount_cap(), True)


def test_volume_stats_report_real_bytes_and_inodes(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    target = str(tmp_path / "t")
    domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    with open(os.path.join(target, "f"), "wb") as f:
        f.write(b"x" * 65536)
    stats = domain.node.stats(v.volume_id, target)
    assert stats.used_bytes >= 65536
    assert stats.available_bytes == stats.total_bytes - stats.used_bytes
    assert stats.inodes_used == 2
    assert not stats.abnormal


def test_a_directory_volume_whose_files_exceed_its_capacity_is_abnormal(domain, tmp_path):
    v = domain.volumes.create_volume(create_args("small", 64 * 1024))
    domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    staging = tmp_path / "staging"
    staging.mkdir()
    domain.node.stage(v.volume_id, str(staging), mount_cap())
    target = str(tmp_path / "t")
    domain.node.publish(v.volume_id, target, str(staging), mount_cap(), False)
    with open(os.path.join(target, "f"), "wb") as f:
        f.write(os.urandom(128 * 1024))
        f.flush()
        os.fsync(f.fileno())
    stats = domain.node.stats(v.volume_id, target)
    assert stats.abnormal and "more than its capacity" in stats.message
    assert stats.available_bytes == 0


def test_volume_stats_at_a_path_where_it_is_not_published_is_not_found(domain, tmp_path):
    v, _ = _staged(domain, tmp_path)
    with pytest.raises(NotFound):
        domain.node.stats(v.volume_id, "some/path")


def test_unstage_while_published_fails_precondition(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    domain.node.publish(v.volume_id, str(tmp_path / "t"), staging, mount_cap(), False)
    with pytest.raises(FailedPrecondition):
        domain.node.unstage(v.volume_id, staging)


def test_recheck_mounts_drops_a_publish_whose_target_is_no_longer_what_the_driver_left(
    domain, tmp_path
):
    v, staging = _staged(domain, tmp_path)
    target = str(tmp_path / "t")
    domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    os.unlink(target)
    os.mkdir(target)
    (tmp_path / "t" / "someone-elses").write_text("x")
    assert domain.node.recheck_mounts() == 0
    assert domain.store.get_publish("node-1", target) is None
    assert os.listdir(target) == ["someone-elses"]


def test_recheck_mounts_keeps_a_publish_that_still_stands(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    target = str(tmp_path / "t")
    domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    assert domain.node.recheck_mounts() == 0
    assert domain.store.get_publish("node-1", target) is not None
    assert os.path.islink(target)


def test_unstage_at_another_path_is_ok_and_keeps_the_real_stage(domain, tmp_path):
    v, staging = _staged(domain, tmp_path)
    domain.node.unstage(v.volume_id, staging + "-elsewhere")
    assert domain.store.get_stage(v.volume_id, "node-1") is not None


def test_stage_with_a_capability_the_volume_cannot_serve_fails_precondition(domain, tmp_path):
    from .conftest import block_cap

    v = domain.volumes.create_volume(create_args("v"))
    domain.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    with pytest.raises(FailedPrecondition, match="not block"):
        domain.node.stage(v.volume_id, str(tmp_path), block_cap())


def test_node_expand_with_another_access_type_is_invalid(domain, tmp_path):
    from .conftest import block_cap

    v, staging = _staged(domain, tmp_path)
    with pytest.raises(InvalidArgument):
        domain.node.expand(v.volume_id, staging, 0, block_cap())


EPHEMERAL = {"csi.storage.k8s.io/ephemeral": "true"}


def test_inline_ephemeral_volume_is_created_on_publish_and_deleted_on_unpublish(domain, tmp_path):
    target = str(tmp_path / "pod" / "vol")
    domain.node.publish("csi-abc", target, "", mount_cap(), False, EPHEMERAL)
    assert domain.store.get_volume("csi-abc").capacity_bytes == 100 << 20
    assert os.path.lexists(target)
    domain.node.unpublish("csi-abc", target)
    assert domain.store.get_volume("csi-abc") is None
    assert not os.path.exists(domain.data.volume_path("csi-abc", "mount"))


def test_publish_of_an_unknown_volume_that_is_not_ephemeral_is_not_found(domain, tmp_path):
    with pytest.raises(NotFound):
        domain.node.publish("nope", str(tmp_path / "t"), str(tmp_path), mount_cap(), False)
