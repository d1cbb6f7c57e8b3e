"""Real bind mounts (root only): what a published target shows and what unpublish leaves."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from csi_driver.state.mountinfo import is_mount_point

from .conftest import GiB, block_cap, create_args, make_domain, mount_cap

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="bind mounts need root")


@pytest.fixture
def bind_domain(tmp_path):
    d = make_domain(tmp_path / "state", mount_method="bind")
    yield d
    for p in d.store.publishes_on_node("node-1"):
        d.node.unpublish(p.volume_id, p.target_path)
    d.store.close()


def _stage(d, tmp_path, cap):
    v = d.volumes.create_volume(create_args("v", GiB, cap))
    d.attachments.publish(v.volume_id, "node-1", cap, False)
    staging = tmp_path / "staging"
    staging.mkdir()
    d.node.stage(v.volume_id, str(staging), cap)
    return v, str(staging)


def test_publish_bind_mounts_the_volume_and_unpublish_removes_the_target(bind_domain, tmp_path):
    v, staging = _stage(bind_domain, tmp_path, mount_cap())
    target = str(tmp_path / "pod" / "mount")
    bind_domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    assert is_mount_point(target)
    with open(os.path.join(target, "hello"), "w") as f:
        f.write("world")
    source = bind_domain.data.volume_path(v.volume_id, "mount")
    with open(os.path.join(source, "hello")) as f:
        assert f.read() == "world"
    bind_domain.node.unpublish(v.volume_id, target)
    assert not os.path.exists(target)


def test_readonly_publish_refuses_writes(bind_domain, tmp_path):
    v, staging = _stage(bind_domain, tmp_path, mount_cap())
    target = str(tmp_path / "ro")
    bind_domain.node.publish(v.volume_id, target, staging, mount_cap(), True)
    with pytest.raises(OSError) as err, open(os.path.join(target, "x"), "w"):
        pass
    assert err.value.errno == errno.EROFS


def test_block_publish_creates_a_file_target_backed_by_the_volume(bind_domain, tmp_path):
    v, staging = _stage(bind_domain, tmp_path, block_cap())
    target = str(tmp_path / "dev")
    bind_domain.node.publish(v.volume_id, target, staging, block_cap(), False)
    assert os.path.isfile(target) and os.path.getsize(target) == GiB
    bind_domain.node.unpublish(v.volume_id, target)
    assert not os.path.exists(target)


def test_a_lost_bind_mount_is_redone_on_recheck(bind_domain, tmp_path):
    v, staging = _stage(bind_domain, tmp_path, mount_cap())
    target = str(tmp_path / "t")
    bind_domain.node.publish(v.volume_id, target, staging, mount_cap(), False)
    subprocess.run(["umount", target], check=True)
    assert not is_mount_point(target)
    assert bind_domain.node.recheck_mounts() == 1
    assert is_mount_point(target)
