"""`up` starts once per state dir, refuses what it cannot do in one line with exit 2 and
nothing left behind, keeps its state private, and its driver processes end with it when
nothing could take them back."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.fixtures.up_process import PROJECT_ROOT, running_up, wait_for

from .test_state_dir import driver_processes


def run_up(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelet_sim", "up", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def temp_dirs() -> set[str]:
    return {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("kubelet-sim-")}


def test_a_second_up_on_a_state_dir_in_use_is_refused_and_touches_nothing() -> None:
    with running_up() as first:
        drivers = sorted(driver_processes(first.state))
        # what a second `up` would write first: the port, the CA, the token, the kubeconfig
        kept = {p: p.read_bytes() for p in (first.state / "apiserver").iterdir()
                if p.is_file() and not p.name.startswith("objects.db")}
        kept[Path(first.kubeconfig)] = Path(first.kubeconfig).read_bytes()
        second = run_up("--state-dir", str(first.state))
        assert second.returncode == 2
        assert second.stderr.strip() == (
            f"kubelet_sim: {first.state} is in use by PID {first.proc.pid}")
        assert sorted(driver_processes(first.state)) == drivers  # not stopped, not doubled
        assert {p: p.read_bytes() for p in kept} == kept
        first.kubectl("get", "nodes")  # the first still serves


def test_a_port_in_use_is_one_line_exit_2_and_leaves_nothing() -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    before = temp_dirs()
    try:
        done = run_up("--port", str(port))
    finally:
        taken.close()
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines == [f"kubelet_sim: cannot listen on 127.0.0.1:{port}: Address already in use"]
    assert temp_dirs() == before


def test_metrics_off_loopback_need_an_explicit_flag() -> None:
    done = run_up("--metrics-address", "0.0.0.0:19100")
    assert done.returncode == 2
    assert "not a loopback address" in done.stderr and "--metrics-bind-any" in done.stderr


def test_without_a_state_dir_a_killed_up_takes_its_drivers_with_it() -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kubelet_sim", "up"], cwd=PROJECT_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    line = ""
    while not line.startswith("export KUBECONFIG="):
        line = proc.stdout.readline()
        assert line, "up ended before printing the kubeconfig"
    state = Path(line.strip().split("=", 1)[1]).parent
    assert len(driver_processes(state)) == 2
    proc.kill()
    proc.wait()
    wait_for(lambda: not driver_processes(state), "the drivers to end with up", timeout=20)
    subprocess.run(["rm", "-rf", str(state)], check=False)


def test_the_api_objects_are_readable_by_their_owner_only() -> None:
    with running_up() as up:
        up.kubectl("create", "configmap", "x", "--dry-run=client", "-o", "name")
        data = up.state / "apiserver"
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
        files = [p for p in data.iterdir() if p.name.startswith("objects.db")]
        assert files
        for path in files:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
