"""Start the CSI driver the way a user does (a subprocess on a unix socket) and talk to it.

A `DriverProcess` owns one `python -m csi_driver` process, its socket directory and
(unless shared) its state directory. It waits for the socket to answer Probe, hands
out gRPC stubs for the five CSI services, and can stop the driver gracefully
(SIGTERM) or brutally (SIGKILL) and start it again on the same state directory.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from csi_protos import csi_pb2, csi_pb2_grpc

REPO = Path(__file__).resolve().parents[3]
PYTHON = str(REPO / ".venv" / "bin" / "python")
STARTUP_GUARD_SECONDS = 30.0  # only a guard against hangs, never asserted on


def short_tmpdir(prefix: str = "csi") -> Path:
    """A short directory under /tmp: unix socket paths are limited to 108 bytes."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


@dataclass
class Stubs:
    """The five CSI service stubs.  Like csi-sanity's ``--csi.controllerendpoint``, the
    controller-side services may come from another process than identity and node."""

    channel: grpc.Channel
    controller_channel: grpc.Channel | None = None
    identity: csi_pb2_grpc.IdentityStub = field(init=False)
    controller: csi_pb2_grpc.ControllerStub = field(init=False)
    group_controller: csi_pb2_grpc.GroupControllerStub = field(init=False)
    snapshot_metadata: csi_pb2_grpc.SnapshotMetadataStub = field(init=False)
    node: csi_pb2_grpc.NodeStub = field(init=False)

    def __post_init__(self) -> None:
        controller = self.controller_channel or self.channel
        self.identity = csi_pb2_grpc.IdentityStub(self.channel)
        self.controller = csi_pb2_grpc.ControllerStub(controller)
        self.group_controller = csi_pb2_grpc.GroupControllerStub(controller)
        self.snapshot_metadata = csi_pb2_grpc.SnapshotMetadataStub(controller)
        self.node = csi_pb2_grpc.NodeStub(self.channel)


class DriverExited(RuntimeError):
    """The driver process ended before its socket answered."""


class DriverProcess:
    """One driver subprocess bound to `<sock_dir>/csi.sock`."""

    def __init__(
        self,
        *,
        node_id: str = "sanity-node",
        args: Sequence[str] = (),
        state_dir: Path | None = None,
        sock_dir: Path | None = None,
        prefix: Sequence[str] = (),
    ) -> None:
        """``prefix`` wraps the command (e.g. ``unshare --mount``: the driver's mounts then
        stay in its own mount namespace); the wrapper must exec the driver in the end."""
        self.sock_dir = sock_dir or short_tmpdir("csis")
        self.owns_state = state_dir is None
        self.state_dir = state_dir or short_tmpdir("csid")
        self.socket_path = self.sock_dir / "csi.sock"
        self.endpoint = f"unix://{self.socket_path}"
        self.node_id = node_id
        self.args = list(args)
        self.prefix = list(prefix)
        self.stderr_path = self.sock_dir.parent / f"{self.sock_dir.name}.stderr"
        self.proc: subprocess.Popen[bytes] | None = None
        self._stubs: Stubs | None = None

    # -- lifecycle ---------------------------------------------------------------

    def command(self) -> list[str]:
        return [
            *self.prefix,
            PYTHON,
            "-m",
            "csi_driver",
            "--endpoint",
            self.endpoint,
            "--state-dir",
            str(self.state_dir),
            "--node-id",
            self.node_id,
            *self.args,
        ]

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the process without waiting for it (used by start-up failure tests)."""
        self.close_channel()
        with open(self.stderr_path, "ab") as err:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
            )
        return self.proc

    def start(self) -> DriverProcess:
        self.spawn()
        self.wait_ready()
        return self

    def wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + STARTUP_GUARD_SECONDS
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DriverExited(
                    f"driver exited with {self.proc.returncode}: {self.stderr()[-2000:]}"
                )
            if self.socket_path.exists():
                with contextlib.suppress(grpc.RpcError):
                    self.stubs.identity.Probe(csi_pb2.ProbeRequest(), timeout=2)
                    return
            time.sleep(0.05)
        raise TimeoutError(f"driver did not answer on {self.socket_path}: {self.stderr()[-2000:]}")

    def terminate(self, timeout: float = 15.0) -> int:
        """SIGTERM and wait; returns the exit status."""
        self.close_channel()
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=timeout)

    def kill9(self) -> None:
        self.close_channel()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=15)

    def restart(self) -> DriverProcess:
        """kill -9 and start again on the same socket and state directory."""
        self.kill9()
        return self.start()

    def close_channel(self) -> None:
        if self._stubs is not None:
            self._stubs.channel.close()
            self._stubs = None

    def cleanup(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and remove what the test created."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.terminate(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill9()
        self.close_channel()
        unmount_under(self.state_dir)
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        if self.owns_state:
            shutil.rmtree(self.state_dir, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.stderr_path.unlink()

    # -- access ------------------------------------------------------------------

    @property
    def stubs(self) -> Stubs:
        if self._stubs is None:
            self._stubs = Stubs(grpc.insecure_channel(self.endpoint))
        return self._stubs

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


def rpc_lines(proc: DriverProcess) -> list[dict]:
    """The driver's per-RPC JSON log lines so far, in order."""
    found = []
    for line in proc.stderr().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and "method" in entry:
            found.append(entry)
    return found


def log_lines(proc: DriverProcess, method_suffix: str, wanted: int = 1) -> list[dict]:
    """The JSON log lines for one method; waits briefly for the driver to flush them."""
    found: list[dict] = []
    for _ in range(100):
        found = [e for e in rpc_lines(proc) if str(e["method"]).endswith(method_suffix)]
        if len(found) >= wanted:
            return found
        time.sleep(0.05)
    return found


def mount_points_under(root: Path) -> list[str]:
    """Mount points at or below `root`, deepest first (from /proc/self/mountinfo)."""
    prefix = str(root.resolve()) if root.exists() else str(root)
    found: list[str] = []
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        parts = line.split()
        if len(parts) < 5:
            continue
        point = parts[4].replace("\\040", " ")
        if point == prefix or point.startswith(prefix + "/"):
            found.append(point)
    return sorted(set(found), key=len, reverse=True)


def unmount_under(root: Path) -> None:
    """Lazily unmount anything left below `root` (fixtures call this even on failure)."""
    for point in mount_points_under(root):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
