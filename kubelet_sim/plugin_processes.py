"""CSI driver processes the simulated cluster launches: one controller plugin, one node
plugin per node, each a real ``python -m csi_driver`` on its own unix socket."""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


class DriverStartError(RuntimeError):
    pass


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def die_with_parent() -> None:
    """In the child before exec: the kernel sends it SIGTERM when its parent dies, even
    by kill -9 (prctl PR_SET_PDEATHSIG outlives exec). The function pointer is looked
    up before the fork, so the child only makes the call."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _running(pid: int) -> bool:
    """The process exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class DriverProcess:
    """A running driver: its socket path, arguments and log file."""

    name: str
    socket: Path
    args: list[str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    # Stop when the simulator dies, however it dies: for a cluster whose state is not
    # kept (nothing could take the driver back after a kill -9).
    die_with_parent: bool = False

    @property
    def endpoint(self) -> str:
        return f"unix://{self.socket}"

    @property
    def pid_file(self) -> Path:
        return self.log_path.with_suffix(".pid")

    def start(self) -> None:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._stop_stale()
        env = {**os.environ, **self.extra_env, "PYTHONPATH": str(PROJECT_ROOT)}
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "csi_driver", "--endpoint", self.endpoint, *self.args],
                stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env,
                cwd=str(PROJECT_ROOT),
                # Its own session: a Ctrl-C at the terminal reaches the simulator only,
                # which then tears down in order and stops the driver last.
                start_new_session=True,
                preexec_fn=die_with_parent if self.die_with_parent else None,
            )
        self.pid_file.write_text(str(self.process.pid))

    def _stop_stale(self, timeout: float = 5.0) -> None:
        """A driver left serving this socket by a simulator that was killed (kill -9
        leaves its children running) is stopped before a new one starts."""
        try:
            pid = int(self.pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            return
        if b"csi_driver" not in cmdline or self.endpoint.encode() not in cmdline:
            return  # the pid was reused by something else
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if _running(pid):
            os.kill(pid, signal.SIGKILL)

    def _accepts(self) -> bool:
        """True when something listens on the socket (a stale file left by a killed
        driver refuses the connection)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(self.socket))
            except OSError:
                return False
        return True

    async def wait_ready(self, timeout: float = 20.0) -> None:
        """Until the driver accepts connections on its socket."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process is not None and self.process.poll() is not None:
                raise DriverStartError(
                    f"{self.name} exited with {self.process.returncode}; see {self.log_path}")
            if self.socket.exists() and self._accepts():
                return
            await asyncio.sleep(0.02)
        raise DriverStartError(f"{self.name} did not serve {self.socket} within {timeout}s")

    def kill(self) -> None:
        """kill -9, as a crash would."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM and wait (the driver stops gracefully and removes its socket)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()

    async def restart(self) -> None:
        self.stop()
        self.start()
        await self.wait_ready()
