"""Filesystem volumes with a real size (issue 8, item 10): ``--fs-backend loop`` makes each
an ext4 image, loop-mounted at NodeStage.  Writing past the size fails with ENOSPC,
NodeExpandVolume grows the filesystem, NodeGetVolumeStats reports its own numbers,
snapshots and restores carry the data, and a reboot's lost mounts come back."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import grpc
import pytest

from csi_driver.state import loop_fs
from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver, needs_root
from tests.csi_driver.grpc.mount_table import mount_count
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess, unmount_under

MiB = 1 << 20
pytestmark = pytest.mark.skipif(bool(loop_fs.unavailable_reason()),
                                reason=loop_fs.unavailable_reason() or "loop backend available")


def write_until_full(path: Path, limit: int) -> tuple[int, int]:
    """Write up to ``limit`` bytes; (bytes written, errno that stopped it or 0)."""
    written = 0
    try:
        with open(path, "wb") as f:
            while written < limit:
                written += f.write(b"\xa5" * MiB)
                f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        return written, exc.errno or 0
    return written, 0


class LoopVolume:
    def __init__(self, ctx: SanityContext, size: int) -> None:
        self.ctx = ctx
        self.flow = NodeFlow(ctx)
        self.node_id = self.flow.node_info().node_id
        self.vol = ctx.resources.must_create_volume(
            make_create_volume_req(unique_string("loop"), size))
        self.volume_id = self.vol.volume.volume_id
        self.pub = self.flow.controller_publish(self.vol, self.node_id)

    def stage(self) -> None:
        self.flow.node_stage(self.vol, self.pub)

    def publish(self) -> Path:
        self.flow.node_publish(self.vol, self.pub)
        return Path(self.ctx.target_path)

    def unpublish(self) -> None:
        self.ctx.stubs.node.NodeUnpublishVolume(csi_pb2.NodeUnpublishVolumeRequest(
            volume_id=self.volume_id, target_path=self.ctx.target_path))

    def stats(self, path: str | None = None) -> dict[str, csi_pb2.VolumeUsage]:
        rsp = self.ctx.stubs.node.NodeGetVolumeStats(csi_pb2.NodeGetVolumeStatsRequest(
            volume_id=self.volume_id, volume_path=path or self.ctx.target_path))
        assert not rsp.volume_condition.abnormal, rsp.volume_condition.message
        return {csi_pb2.VolumeUsage.Unit.Name(u.unit): u for u in rsp.usage}

    def expand_controller(self, size: int) -> None:
        rsp = self.ctx.stubs.controller.ControllerExpandVolume(
            csi_pb2.ControllerExpandVolumeRequest(
                volume_id=self.volume_id, capacity_range=csi_pb2.CapacityRange(
                    required_bytes=size), volume_capability=mount_capability()))
        assert rsp.capacity_bytes == size and rsp.node_expansion_required

    def expand_node_request(self, size: int, path: str) -> csi_pb2.NodeExpandVolumeRequest:
        return csi_pb2.NodeExpandVolumeRequest(
            volume_id=self.volume_id, volume_path=path,
            staging_target_path=self.ctx.staging_path,
            capacity_range=csi_pb2.CapacityRange(required_bytes=size),
            volume_capability=mount_capability())


@pytest.fixture
def loop_proc(spawn_driver: SpawnDriver) -> DriverProcess:
    return spawn_driver("--fs-backend", "loop", node_id="loop-node")


@pytest.fixture
def loop_ctx(loop_proc: DriverProcess, make_sanity: MakeSanity) -> SanityContext:
    return make_sanity(loop_proc)


@needs_root
def test_a_filesystem_volume_is_an_ext4_image_mounted_at_stage(
    loop_proc: DriverProcess, loop_ctx: SanityContext
) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    (image,) = loop_proc.state_dir.glob(f"volumes/{volume.volume_id}.ext4")
    assert stat.S_IMODE(image.stat().st_mode) == 0o600
    assert image.stat().st_size == 16 * MiB
    assert image.stat().st_blocks * 512 < 16 * MiB  # sparse
    volume.stage()
    assert mount_count(loop_ctx.staging_path) == 1
    volume.publish()
    assert mount_count(loop_ctx.target_path) == 1


@needs_root
def test_writing_past_the_size_fails_with_enospc_and_stats_are_the_filesystems(
    loop_ctx: SanityContext,
) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    written, err = write_until_full(target / "big", 40 * MiB)
    assert err == errno.ENOSPC and written < 16 * MiB
    usage = volume.stats()
    real = os.statvfs(target)
    assert usage["BYTES"].total == real.f_blocks * real.f_frsize
    assert usage["BYTES"].total <= 16 * MiB
    assert usage["BYTES"].used >= written - MiB
    assert usage["BYTES"].available == real.f_bavail * real.f_frsize
    assert usage["INODES"].total == real.f_files
    assert usage["INODES"].used == real.f_files - real.f_ffree


def advertised_expansion(ctx: SanityContext) -> str:
    rsp = ctx.stubs.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
    kinds = [c.volume_expansion.type for c in rsp.capabilities if c.HasField("volume_expansion")]
    return csi_pb2.PluginCapability.VolumeExpansion.Type.Name(kinds[0]) if kinds else ""


@needs_root
def test_expansion_is_advertised_online_only_where_a_mounted_filesystem_can_grow(
    loop_ctx: SanityContext,
) -> None:
    assert advertised_expansion(loop_ctx) == ("ONLINE" if loop_fs.grows_online() else "OFFLINE")


@needs_root
def test_node_expansion_grows_a_published_filesystem_online(loop_ctx: SanityContext) -> None:
    if not loop_fs.grows_online():
        pytest.skip("this host denies growing a mounted filesystem (no CAP_SYS_RESOURCE)")
    volume = LoopVolume(loop_ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    write_until_full(target / "fill", 40 * MiB)
    before = volume.stats()["BYTES"].total
    volume.expand_controller(48 * MiB)
    loop_ctx.stubs.node.NodeExpandVolume(volume.expand_node_request(48 * MiB, str(target)))
    assert volume.stats()["BYTES"].total > before + 24 * MiB
    written, err = write_until_full(target / "more", 16 * MiB)
    assert err == 0 and written == 16 * MiB


@needs_root
def test_a_staged_unpublished_filesystem_grows_at_node_expansion(
    spawn_driver: SpawnDriver, make_sanity: MakeSanity
) -> None:
    """Offline growth while only staged: unmounted, grown, mounted again."""
    ctx = make_sanity(spawn_driver("--fs-backend", "loop", "--no-attach-required",
                                   node_id="loop-node"))
    volume = LoopVolume(ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    write_until_full(target / "fill", 40 * MiB)
    before = volume.stats()["BYTES"].total
    volume.unpublish()
    volume.expand_controller(48 * MiB)
    ctx.stubs.node.NodeExpandVolume(volume.expand_node_request(48 * MiB, ctx.staging_path))
    assert mount_count(ctx.staging_path) == 1
    volume.publish()
    assert volume.stats()["BYTES"].total > before + 24 * MiB
    assert (target / "fill").stat().st_size > 0  # the data survived the growth
    written, err = write_until_full(target / "more", 16 * MiB)
    assert err == 0 and written == 16 * MiB


@needs_root
def test_an_offline_expansion_grows_the_filesystem_at_the_next_stage(
    loop_ctx: SanityContext,
) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    (target / "data").write_text("before growing")
    before = volume.stats()["BYTES"].total
    volume.unpublish()
    loop_ctx.stubs.node.NodeUnstageVolume(csi_pb2.NodeUnstageVolumeRequest(
        volume_id=volume.volume_id, staging_target_path=loop_ctx.staging_path))
    assert mount_count(loop_ctx.staging_path) == 0
    loop_ctx.stubs.controller.ControllerUnpublishVolume(csi_pb2.ControllerUnpublishVolumeRequest(
        volume_id=volume.volume_id, node_id=volume.node_id))
    volume.expand_controller(40 * MiB)
    volume.pub = volume.flow.controller_publish(volume.vol, volume.node_id)
    volume.stage()  # grows the filesystem before mounting it
    loop_ctx.stubs.node.NodeExpandVolume(
        volume.expand_node_request(40 * MiB, loop_ctx.staging_path))
    volume.publish()
    assert volume.stats()["BYTES"].total > before + 16 * MiB
    assert (target / "data").read_text() == "before growing"


@needs_root
def test_a_snapshot_restored_bigger_has_the_data_and_the_size(loop_ctx: SanityContext) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    (target / "hello").write_text("from the source")
    snap = loop_ctx.resources.must_create_snapshot(csi_pb2.CreateSnapshotRequest(
        name=unique_string("loop-snap"), source_volume_id=volume.volume_id))
    volume.unpublish()
    loop_ctx.stubs.node.NodeUnstageVolume(csi_pb2.NodeUnstageVolumeRequest(
        volume_id=volume.volume_id, staging_target_path=loop_ctx.staging_path))
    req = make_create_volume_req(unique_string("restored"), 32 * MiB)
    req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
    restored = loop_ctx.resources.must_create_volume(req)
    flow = NodeFlow(loop_ctx)
    pub = flow.controller_publish(restored, volume.node_id)
    flow.node_stage(restored, pub)
    flow.node_publish(restored, pub)
    assert (target / "hello").read_text() == "from the source"
    stats = loop_ctx.stubs.node.NodeGetVolumeStats(csi_pb2.NodeGetVolumeStatsRequest(
        volume_id=restored.volume.volume_id, volume_path=str(target)))
    assert stats.usage[0].total > 24 * MiB


@needs_root
def test_after_a_reboot_the_restarted_driver_mounts_stage_and_publish_again(
    spawn_driver: SpawnDriver, make_sanity: MakeSanity
) -> None:
    proc = spawn_driver("--fs-backend", "loop", node_id="loop-node")
    ctx = make_sanity(proc)
    volume = LoopVolume(ctx, 16 * MiB)
    volume.stage()
    target = volume.publish()
    (target / "kept").write_text("across the reboot")
    proc.kill9()
    unmount_under(ctx.base)  # the reboot takes every mount
    assert not (target / "kept").exists()
    proc.start()
    ctx.stubs = ctx.resources.stubs = proc.stubs
    assert (target / "kept").read_text() == "across the reboot"
    assert mount_count(ctx.staging_path) == 1 and mount_count(str(target)) == 1


@needs_root
def test_unstage_unmounts_and_frees_the_loop_device(loop_ctx: SanityContext) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    volume.stage()
    device = loop_fs.device_at(loop_ctx.staging_path)
    assert device and loop_fs.backing_file(device).endswith(".ext4")
    loop_ctx.stubs.node.NodeUnstageVolume(csi_pb2.NodeUnstageVolumeRequest(
        volume_id=volume.volume_id, staging_target_path=loop_ctx.staging_path))
    assert mount_count(loop_ctx.staging_path) == 0
    assert not loop_fs.backing_file(device).endswith(".ext4")  # autoclear released it


@needs_root
def test_stage_onto_a_missing_or_non_empty_staging_dir_fails_precondition(
    loop_ctx: SanityContext,
) -> None:
    volume = LoopVolume(loop_ctx, 16 * MiB)
    staging = Path(loop_ctx.staging_path)
    (staging / "someone-elses").write_text("x")
    request = csi_pb2.NodeStageVolumeRequest(
        volume_id=volume.volume_id, staging_target_path=str(staging),
        volume_capability=mount_capability())
    expect_error_code(loop_ctx.stubs.node.NodeStageVolume, request,
                      grpc.StatusCode.FAILED_PRECONDITION)
    assert (staging / "someone-elses").read_text() == "x" and mount_count(str(staging)) == 0
    (staging / "someone-elses").unlink()
    request.staging_target_path = str(staging / "missing")
    expect_error_code(loop_ctx.stubs.node.NodeStageVolume, request,
                      grpc.StatusCode.FAILED_PRECONDITION)


def test_loop_backend_refused_at_start_where_it_cannot_work(spawn_driver: SpawnDriver) -> None:
    """Without root there are no loop devices: an explicit --fs-backend loop says so."""
    if os.geteuid() == 0:
        pytest.skip("root can use loop devices")
    proc = spawn_driver("--fs-backend", "loop", start=False)
    assert proc.spawn().wait(timeout=30) == 1
    assert "--fs-backend loop is not possible here" in proc.stderr()
