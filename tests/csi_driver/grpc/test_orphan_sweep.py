"""Data a kill -9 mid-create leaves without a record (under <state>/volumes and
/snapshots, and ``.tmp`` copies) is swept while the driver runs, not only at start;
data that is still changing (another process creating it right now) is left alone."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    make_create_snapshot_req,
    make_create_volume_req,
)
from tests.fixtures.driver_process import DriverProcess

GUARD_SECONDS = 60.0  # only a guard against hangs, never asserted on
FAST_SWEEP = ("--orphan-sweep-interval", "0.2", "--orphan-min-age", "1")


def wait_until_gone(paths: list[Path], proc: DriverProcess) -> None:
    deadline = time.monotonic() + GUARD_SECONDS
    while any(p.exists() for p in paths):
        assert proc.proc is not None and proc.proc.poll() is None, proc.stderr()[-2000:]
        assert time.monotonic() < deadline, f"never swept: {[p for p in paths if p.exists()]}"
        time.sleep(0.1)


def leave_orphans(state: Path) -> list[Path]:
    """What a kill -9 leaves: volume data whose record never committed, a block image,
    a half-copied snapshot directory and block image."""
    volume_dir = state / "volumes" / str(uuid.uuid4())
    (volume_dir / "sub").mkdir(parents=True)
    (volume_dir / "sub" / "data.bin").write_bytes(b"x" * 4096)
    block = state / "volumes" / f"{uuid.uuid4()}.img"
    with open(block, "wb") as f:
        f.truncate(1 << 20)
    snapshot_copy = state / "snapshots" / f"{uuid.uuid4()}.tmp"
    snapshot_copy.mkdir()
    block_copy = state / "snapshots" / f"{uuid.uuid4()}.img.tmp"
    block_copy.write_bytes(b"partial")
    return [volume_dir, block, snapshot_copy, block_copy]


def test_orphans_left_while_the_driver_runs_are_swept_and_recorded_data_stays(
    spawn_driver: SpawnDriver,
) -> None:
    proc = spawn_driver(*FAST_SWEEP)
    ctrl = proc.stubs.controller
    vid = ctrl.CreateVolume(make_create_volume_req("swept-beside", GiB)).volume.volume_id
    sid = ctrl.CreateSnapshot(make_create_snapshot_req("swept-snap", vid)).snapshot.snapshot_id
    orphans = leave_orphans(proc.state_dir)
    wait_until_gone(orphans, proc)
    assert (proc.state_dir / "volumes" / vid).is_dir()
    assert (proc.state_dir / "snapshots" / sid).is_dir()
    status = ctrl.ControllerGetVolume(csi_pb2.ControllerGetVolumeRequest(volume_id=vid)).status
    assert not status.volume_condition.abnormal
    assert "removed" in proc.stderr()


def test_data_that_keeps_changing_is_not_swept_until_it_stops(spawn_driver: SpawnDriver) -> None:
    """The min-age guard: a copy in progress (its files still being written) has no record
    yet, and must survive every sweep while it changes."""
    proc = spawn_driver("--orphan-sweep-interval", "0.2", "--orphan-min-age", "5")
    in_progress = proc.state_dir / "volumes" / f"{uuid.uuid4()}.tmp"
    in_progress.mkdir()
    stop = threading.Event()

    def keep_writing() -> None:
        while not stop.is_set():
            (in_progress / "being-copied").write_bytes(str(time.time()).encode())
            stop.wait(0.1)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        logged_before = proc.stderr().count("csi_driver.state.orphans")
        for _ in range(15):  # many sweep intervals while it changes
            time.sleep(0.2)
            assert in_progress.exists()
        # nothing removed, no sweep failed
        assert proc.stderr().count("csi_driver.state.orphans") == logged_before
    finally:
        stop.set()
        writer.join()
    wait_until_gone([in_progress], proc)


def test_a_node_mode_driver_does_not_sweep(spawn_driver: SpawnDriver, shared_state_dir: Path
                                           ) -> None:
    """Only controller-side processes own volume data; a node process sharing the state
    dir never removes anything there."""
    node = spawn_driver("--mode", "node", *FAST_SWEEP, state_dir=shared_state_dir)
    orphans = leave_orphans(shared_state_dir)
    time.sleep(2.5)  # well past min-age and many intervals
    assert all(p.exists() for p in orphans)
    assert node.stubs.identity.Probe(csi_pb2.ProbeRequest()).ready.value
    controller = spawn_driver("--mode", "controller", *FAST_SWEEP, state_dir=shared_state_dir)
    wait_until_gone(orphans, controller)
