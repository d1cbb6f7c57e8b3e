"""`up --processes`: the API server and every component as a child process of `up`,
reached over HTTPS with the kubeconfig it prints; a child that dies is started again,
and when `up` stops, no child outlives it."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from kubelet_sim.up import UpOptions
from kubelet_sim.up_processes import processes_refusal
from tests.fixtures.component_process import ComponentProcess
from tests.fixtures.up_process import KUBECTL

COMPONENTS = {"apiserver", "controller-manager", "scheduler", "sidecars", "kubelet-node-1",
              "csi-controller-plugin", "csi-node-plugin-node-1"}


def running(pid: int) -> bool:
    """True while ``pid`` is a live process (not gone, not a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def gone_within(pids: list[int], seconds: float) -> list[int]:
    """The pids still running after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while any(map(running, pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return [pid for pid in pids if running(pid)]


def test_up_processes_runs_each_component_as_a_child_restarts_one_that_dies_and_leaves_none(
) -> None:
    state = Path(tempfile.mkdtemp(prefix="ksim-upp-", dir="/tmp"))
    up = ComponentProcess(["up", "--processes", "--nodes", "1", "--state-dir", str(state)],
                          state.parent / f"{state.name}.log")
    try:
        export = up.wait_for("export KUBECONFIG=", timeout=120)
        assert up.lines[0].startswith("cluster up: 1 node(s), API server https://127.0.0.1:")
        kubeconfig = export.split("=", 1)[1]
        assert kubeconfig == str(state / "kubeconfig")
        pids = {line.split()[1].rstrip(":"): int(line.split()[3])
                for line in up.lines if line.startswith("process ")}
        assert set(pids) == COMPONENTS
        for name, pid in pids.items():
            # (the kubelet's own liveness is the end-to-end test's: here it may already
            # have ended and be waiting for its restart)
            assert not running(pid) or parent(pid) == up.proc.pid
            assert running(pid) or name.startswith("kubelet-")
        namespaces = subprocess.run([str(KUBECTL), "--kubeconfig", kubeconfig, "get", "ns",
                                     "-o", "name"], capture_output=True, text=True,
                                    check=True, timeout=30).stdout.split()
        assert "namespace/kube-system" in namespaces
        # the API server runs up's admission plugins (Priority keeps the system classes)
        subprocess.run([str(KUBECTL), "--kubeconfig", kubeconfig, "get", "priorityclass",
                        "system-node-critical"], capture_output=True, check=True, timeout=30)

        os.kill(pids["scheduler"], 9)
        up.wait_for("scheduler exited with -9; starting it again")
        again = int(up.wait_for("scheduler started again: pid").rsplit(" ", 1)[1])
        assert again != pids["scheduler"] and running(again) and parent(again) == up.proc.pid

        children = [pid for name, pid in pids.items() if name != "scheduler"] + [again]
        assert up.stop(timeout=120) == 0
        assert up.lines[-1] == "cluster down"
        # every child was waited for: none left, not even a restarted kubelet
        assert gone_within(children, 5) == []
        assert not [line for line in subprocess.run(
            ["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
            .splitlines() if str(state) in line]
    finally:
        if up.proc.poll() is None:
            up.kill9()
        shutil.rmtree(state, ignore_errors=True)
        Path(state.parent / f"{state.name}.log").unlink(missing_ok=True)


def test_up_processes_refuses_what_only_the_one_process_up_can_do() -> None:
    assert processes_refusal(UpOptions()) == ""
    assert "metrics" in processes_refusal(UpOptions(metrics_address="127.0.0.1:9100"))
    assert "faults" in processes_refusal(UpOptions(api_faults={"writeDelaySeconds": 1.0}))
    assert "emulated" in processes_refusal(UpOptions(dataplane="linux"))
    assert "controller plugin" in processes_refusal(
        UpOptions(cluster={"csi_controller_endpoint": "unix:///x.sock"}))
