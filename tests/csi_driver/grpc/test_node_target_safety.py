"""The node plugin only touches what it made (issue 8, items 1-3, 5 and 8).

Every test runs the driver process on its socket.  No id turns into a path outside
the state dir; a target that exists and is not an empty directory (an empty file
for block), or is reached through a symlink, is refused untouched; what existed
before a publish is still there after the unpublish; an ephemeral publish never
reaches a provisioned volume; publishing twice never stacks a mount; a volume is
staged only once attached.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver, needs_root
from tests.csi_driver.grpc.mount_table import mount_count, mounts_under
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    SanityContext,
    block_capability,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    mount_capability,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess, unmount_under

INVALID_ARGUMENT = grpc.StatusCode.INVALID_ARGUMENT
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
NOT_FOUND = grpc.StatusCode.NOT_FOUND
EPHEMERAL = {"csi.storage.k8s.io/ephemeral": "true"}


def tree(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below ``root``: kind, size and (for symlinks) target, never following."""
    entries: dict[str, tuple[str, int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            kind = ("link" if os.path.islink(path) else "dir" if os.path.isdir(path)
                    else "file")
            link = os.readlink(path) if kind == "link" else ""
            entries[os.path.relpath(path, root)] = (kind, st.st_size if kind == "file" else 0,
                                                    link)
    return entries


class Setup:
    """A driver, its csi-sanity context, and a volume taken as far as the test needs."""

    def __init__(self, proc: DriverProcess, ctx: SanityContext) -> None:
        self.proc = proc
        self.ctx = ctx
        self.flow = NodeFlow(ctx)
        self.node = ctx.stubs.node

    def staged(self, cap: csi_pb2.VolumeCapability | None = None
               ) -> csi_pb2.CreateVolumeResponse:
        vol = self.flow.create_volume(unique_string("safe"), cap)
        pub = self.flow.controller_publish(vol, self.flow.node_info().node_id, cap)
        self.flow.node_stage(vol, pub, cap)
        return vol

    def publish_request(self, vol: csi_pb2.CreateVolumeResponse, target: str,
                        cap: csi_pb2.VolumeCapability | None = None
                        ) -> csi_pb2.NodePublishVolumeRequest:
        return self.flow.publish_request(vol, None, cap, target)

    def ephemeral_request(self, volume_id: str, target: str) -> csi_pb2.NodePublishVolumeRequest:
        return csi_pb2.NodePublishVolumeRequest(
            volume_id=volume_id, target_path=target, volume_capability=mount_capability(),
            volume_context=EPHEMERAL,
        )

    def start_again(self) -> None:
        """Start the killed driver on its state dir and talk to the new process."""
        self.proc.start()
        self.ctx.stubs = self.ctx.resources.stubs = self.proc.stubs
        self.node = self.proc.stubs.node
        self.flow = NodeFlow(self.ctx)

    def unpublish(self, volume_id: str, target: str) -> None:
        self.node.NodeUnpublishVolume(csi_pb2.NodeUnpublishVolumeRequest(
            volume_id=volume_id, target_path=target))


@pytest.fixture
def setup(spawn_driver: SpawnDriver, make_sanity: MakeSanity) -> Setup:
    proc = spawn_driver(node_id="safety-node")
    return Setup(proc, make_sanity(proc))


# -- 1. no id may name a path ------------------------------------------------------

@pytest.mark.parametrize("volume_id", ["..", "../../x", "/abs/dir", "a//b", "a/b", ".hidden",
                                       "x" * 129])
def test_an_ephemeral_volume_id_that_would_name_a_path_is_invalid_and_touches_nothing(
    setup: Setup, volume_id: str
) -> None:
    state = setup.proc.state_dir
    before = tree(state)
    target = setup.ctx.target_path
    expect_error_code(setup.node.NodePublishVolume, setup.ephemeral_request(volume_id, target),
                      INVALID_ARGUMENT)
    assert not os.path.lexists(target)
    assert mounts_under(str(setup.ctx.base)) == []
    assert tree(state) == before  # nothing created, nothing removed
    if len(volume_id) <= 128:  # (longer ids are refused by the size limit first)
        setup.unpublish(volume_id, target)  # nothing published there: OK, nothing touched
    assert tree(state) == before


def test_a_snapshot_or_clone_of_a_path_like_source_is_not_found_and_copies_nothing(
    setup: Setup,
) -> None:
    state = setup.proc.state_dir
    before = tree(state)
    for source in ("..", "../volumes", "/"):
        # (the old hole: an inline volume named ".." made the state dir a "volume")
        expect_error_code(setup.node.NodePublishVolume,
                          setup.ephemeral_request(source, setup.ctx.target_path),
                          INVALID_ARGUMENT)
        expect_error_code(
            setup.ctx.stubs.controller.CreateSnapshot,
            make_create_snapshot_req(unique_string("snap"), source), NOT_FOUND)
        clone = make_create_volume_req(unique_string("clone"))
        clone.volume_content_source.volume.volume_id = source
        expect_error_code(setup.ctx.stubs.controller.CreateVolume, clone, NOT_FOUND)
    assert tree(state) == before


# -- 2. only touch what the driver made --------------------------------------------

@needs_root
def test_publish_onto_a_non_empty_directory_fails_precondition_and_leaves_it(
    setup: Setup,
) -> None:
    vol = setup.staged()
    target = Path(setup.ctx.target_path)
    target.mkdir()
    (target / "precious").write_text("keep me")
    expect_error_code(setup.node.NodePublishVolume,
                      setup.publish_request(vol, str(target)), FAILED_PRECONDITION)
    assert (target / "precious").read_text() == "keep me"
    assert mount_count(str(target)) == 0
    setup.unpublish(vol.volume.volume_id, str(target))
    assert (target / "precious").read_text() == "keep me"
    (target / "precious").unlink()
    target.rmdir()


@needs_root
def test_publish_of_a_filesystem_volume_onto_a_regular_file_fails_precondition(
    setup: Setup,
) -> None:
    vol = setup.staged()
    target = Path(setup.ctx.target_path)
    target.write_text("")
    expect_error_code(setup.node.NodePublishVolume,
                      setup.publish_request(vol, str(target)), FAILED_PRECONDITION)
    assert target.is_file() and mount_count(str(target)) == 0
    target.unlink()


def test_publish_onto_the_root_directory_fails_precondition(setup: Setup) -> None:
    vol = setup.staged()
    expect_error_code(setup.node.NodePublishVolume, setup.publish_request(vol, "/"),
                      FAILED_PRECONDITION)
    assert mount_count("/") == 1


def test_publish_through_a_symlinked_parent_fails_precondition_and_creates_nothing(
    setup: Setup, tmp_path: Path
) -> None:
    vol = setup.staged()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link = Path(setup.ctx.mount_dir) / "link"
    link.symlink_to(elsewhere)
    for target in (link / "target", link / "deeper" / "target"):
        expect_error_code(setup.node.NodePublishVolume,
                          setup.publish_request(vol, str(target)), FAILED_PRECONDITION)
    assert list(elsewhere.iterdir()) == []
    assert mounts_under(str(tmp_path)) == []
    link.unlink()


def test_a_symlink_at_the_target_fails_precondition_and_stays(setup: Setup,
                                                              tmp_path: Path) -> None:
    vol = setup.staged()
    target = Path(setup.ctx.target_path)
    target.symlink_to(tmp_path)
    expect_error_code(setup.node.NodePublishVolume,
                      setup.publish_request(vol, str(target)), FAILED_PRECONDITION)
    assert target.is_symlink() and os.readlink(target) == str(tmp_path)
    target.unlink()


@pytest.mark.parametrize("target", ["relative/target", "/a/../b", "/a/./b", "/a//b", "/a/b/",
                                    "/x/" + "n" * 256, "/a/b\0c"])
def test_a_target_path_that_is_not_absolute_and_normalised_is_invalid(
    setup: Setup, target: str
) -> None:
    vol = setup.staged()
    expect_error_code(setup.node.NodePublishVolume, setup.publish_request(vol, target),
                      INVALID_ARGUMENT)


@needs_root
def test_an_existing_empty_directory_is_used_and_left_in_place_at_unpublish(
    setup: Setup,
) -> None:
    vol = setup.staged()
    target = Path(setup.ctx.target_path)
    target.mkdir()
    setup.node.NodePublishVolume(setup.publish_request(vol, str(target)))
    assert mount_count(str(target)) == 1
    setup.unpublish(vol.volume.volume_id, str(target))
    assert target.is_dir() and list(target.iterdir()) == []  # it was there before
    assert mount_count(str(target)) == 0
    target.rmdir()


@needs_root
def test_block_unpublish_keeps_a_file_that_existed_before_the_publish(setup: Setup) -> None:
    cap = block_capability()
    vol = setup.staged(cap)
    target = Path(setup.ctx.target_path)
    target.write_bytes(b"")
    setup.node.NodePublishVolume(setup.publish_request(vol, str(target), cap))
    assert mount_count(str(target)) == 1
    setup.unpublish(vol.volume.volume_id, str(target))
    assert target.is_file() and target.stat().st_size == 0
    target.unlink()


@needs_root
def test_block_publish_onto_a_non_empty_file_fails_precondition(setup: Setup) -> None:
    cap = block_capability()
    vol = setup.staged(cap)
    target = Path(setup.ctx.target_path)
    target.write_bytes(b"data")
    expect_error_code(setup.node.NodePublishVolume,
                      setup.publish_request(vol, str(target), cap), FAILED_PRECONDITION)
    assert target.read_bytes() == b"data"
    target.unlink()


@needs_root
def test_a_failed_publish_never_removes_a_directory_it_did_not_create(setup: Setup) -> None:
    vol = setup.staged()
    target = Path(setup.ctx.target_path)
    target.mkdir()
    (target / "x").write_text("x")
    expect_error_code(setup.node.NodePublishVolume,
                      setup.publish_request(vol, str(target)), FAILED_PRECONDITION)
    assert (target / "x").exists()
    (target / "x").unlink()
    target.rmdir()


# -- 3. ephemeral means ephemeral --------------------------------------------------

def test_an_ephemeral_publish_of_a_provisioned_volume_fails_precondition(setup: Setup) -> None:
    vol = setup.flow.create_volume(unique_string("provisioned"))  # neither attached nor staged
    volume_id = vol.volume.volume_id
    target = setup.ctx.target_path
    expect_error_code(setup.node.NodePublishVolume, setup.ephemeral_request(volume_id, target),
                      FAILED_PRECONDITION)
    assert not os.path.lexists(target)
    got = setup.ctx.stubs.controller.ControllerGetVolume(
        csi_pb2.ControllerGetVolumeRequest(volume_id=volume_id))
    assert got.volume.volume_id == volume_id and not got.status.published_node_ids


def test_an_inline_ephemeral_volume_is_never_staged(setup: Setup) -> None:
    handle = unique_string("csi-inline")
    target = setup.ctx.target_path
    setup.node.NodePublishVolume(setup.ephemeral_request(handle, target))
    expect_error_code(setup.node.NodeStageVolume, csi_pb2.NodeStageVolumeRequest(
        volume_id=handle, staging_target_path=setup.ctx.staging_path,
        volume_capability=mount_capability()), FAILED_PRECONDITION)
    setup.unpublish(handle, target)
    assert not os.path.lexists(target)


def test_a_failed_ephemeral_publish_leaves_no_volume_behind(setup: Setup) -> None:
    handle = unique_string("csi-inline")
    target = Path(setup.ctx.target_path)
    target.mkdir()
    (target / "x").write_text("x")
    expect_error_code(setup.node.NodePublishVolume,
                      setup.ephemeral_request(handle, str(target)), FAILED_PRECONDITION)
    expect_error_code(setup.ctx.stubs.controller.ControllerGetVolume,
                      csi_pb2.ControllerGetVolumeRequest(volume_id=handle), NOT_FOUND)
    assert not (setup.proc.state_dir / "volumes" / handle).exists()
    (target / "x").unlink()
    target.rmdir()


# -- 5. stacked mounts -------------------------------------------------------------

@needs_root
@pytest.mark.parametrize("name", ["with space", "tab\there", "back\\slash", "nön-ascii ü",
                                  "new\nline", "octal\\040"])
def test_publishing_twice_never_stacks_a_mount_whatever_the_target_name(
    setup: Setup, name: str
) -> None:
    vol = setup.staged()
    target = str(Path(setup.ctx.mount_dir) / name)
    request = setup.publish_request(vol, target)
    for _ in range(3):
        setup.node.NodePublishVolume(request)
    assert mount_count(target) == 1
    stats = setup.node.NodeGetVolumeStats(csi_pb2.NodeGetVolumeStatsRequest(
        volume_id=vol.volume.volume_id, volume_path=target))
    assert not stats.volume_condition.abnormal, stats.volume_condition.message
    setup.unpublish(vol.volume.volume_id, target)
    assert mount_count(target) == 0 and not os.path.lexists(target)


# -- 8. stage needs the attachment -------------------------------------------------

def test_stage_of_a_volume_not_controller_published_to_this_node_fails_precondition(
    setup: Setup,
) -> None:
    vol = setup.flow.create_volume(unique_string("unattached"))
    err = expect_error_code(setup.node.NodeStageVolume, csi_pb2.NodeStageVolumeRequest(
        volume_id=vol.volume.volume_id, staging_target_path=setup.ctx.staging_path,
        volume_capability=mount_capability()), FAILED_PRECONDITION)
    assert "attached" in (err.details() or "")
    err = expect_error_code(setup.node.NodePublishVolume,
                            setup.publish_request(vol, setup.ctx.target_path),
                            FAILED_PRECONDITION)
    assert "attached" in (err.details() or "")
    assert not os.path.lexists(setup.ctx.target_path)


def test_without_attach_a_volume_is_staged_without_controller_publish(
    spawn_driver: SpawnDriver, make_sanity: MakeSanity
) -> None:
    proc = spawn_driver("--no-attach-required", node_id="no-attach")
    ctx = make_sanity(proc)
    vol = NodeFlow(ctx).create_volume(unique_string("plain"))
    ctx.resources.node_stage(csi_pb2.NodeStageVolumeRequest(
        volume_id=vol.volume.volume_id, staging_target_path=ctx.staging_path,
        volume_capability=mount_capability()))


# -- 2. restart: re-establish only what is still as the driver left it ---------------

@needs_root
def test_a_restart_remounts_a_lost_publish_whose_target_is_still_the_empty_dir(
    setup: Setup,
) -> None:
    vol = setup.staged()
    target = setup.ctx.target_path
    setup.node.NodePublishVolume(setup.publish_request(vol, target))
    Path(target, "data").write_text("kept")
    setup.proc.kill9()
    unmount_under(setup.ctx.base)  # a reboot takes the mounts
    setup.start_again()
    assert Path(target, "data").read_text() == "kept"
    assert mount_count(target) == 1


@needs_root
def test_a_restart_drops_a_publish_whose_target_now_holds_something_else(
    setup: Setup,
) -> None:
    vol = setup.staged()
    target = setup.ctx.target_path
    setup.node.NodePublishVolume(setup.publish_request(vol, target))
    setup.proc.kill9()
    unmount_under(setup.ctx.base)
    Path(target, "someone-elses").write_text("not the driver's")
    setup.start_again()
    assert mount_count(target) == 0
    assert Path(target, "someone-elses").read_text() == "not the driver's"
    assert "dropping the publish" in setup.proc.stderr()
    setup.unpublish(vol.volume.volume_id, target)  # no record any more: OK, untouched
    assert Path(target, "someone-elses").exists()
    Path(target, "someone-elses").unlink()
    Path(target).rmdir()


# -- 4. private files --------------------------------------------------------------

def test_state_and_data_are_private_whatever_the_umask(setup: Setup) -> None:
    setup.flow.create_volume(unique_string("fs"))
    setup.flow.create_volume(unique_string("blk"), block_capability())
    state = setup.proc.state_dir
    modes = {p.relative_to(state).as_posix(): stat.S_IMODE(p.stat().st_mode)
             for p in [state, *state.rglob("*")]}
    assert modes["."] == 0o700
    assert modes["state.db"] == 0o600
    assert modes["volumes"] == modes["snapshots"] == 0o700
    images = [k for k in modes if k.endswith(".img")]
    assert images and all(modes[k] == 0o600 for k in images)
    assert all(mode & 0o077 == 0 for mode in modes.values()), modes


# -- 2. --allowed-target-root --------------------------------------------------------

def test_allowed_target_roots_confine_stage_and_publish(
    spawn_driver: SpawnDriver, make_sanity: MakeSanity, tmp_path: Path
) -> None:
    inside = make_sanity(spawn_driver("--allowed-target-root", str(tmp_path / "kubelet"),
                                      node_id="confined"))
    flow = NodeFlow(inside)
    vol = flow.create_volume(unique_string("confined"))
    pub = flow.controller_publish(vol, flow.node_info().node_id)
    stage = csi_pb2.NodeStageVolumeRequest(
        volume_id=vol.volume.volume_id, staging_target_path=inside.staging_path,
        volume_capability=mount_capability())
    err = expect_error_code(inside.stubs.node.NodeStageVolume, stage, INVALID_ARGUMENT)
    assert "allowed" in (err.details() or "")
    allowed = tmp_path / "kubelet"
    (allowed / "stg").mkdir(parents=True)
    stage.staging_target_path = str(allowed / "stg")
    inside.resources.node_stage(stage)
    publish = flow.publish_request(vol, pub, target=inside.target_path)
    publish.staging_target_path = str(allowed / "stg")
    expect_error_code(inside.stubs.node.NodePublishVolume, publish, INVALID_ARGUMENT)
    assert not os.path.lexists(inside.target_path)
    publish.target_path = str(allowed / "pod" / "mount")
    inside.resources.node_publish(publish)
    assert os.path.isdir(publish.target_path)
    inside.stubs.node.NodeUnpublishVolume(csi_pb2.NodeUnpublishVolumeRequest(
        volume_id=vol.volume.volume_id, target_path=publish.target_path))
    inside.stubs.node.NodeUnstageVolume(csi_pb2.NodeUnstageVolumeRequest(
        volume_id=vol.volume.volume_id, staging_target_path=str(allowed / "stg")))
