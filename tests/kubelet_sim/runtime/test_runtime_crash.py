"""A runtime killed with SIGKILL in the middle of RunPodSandbox leaves nothing that a
restarted runtime's garbage collection cannot release. Plugins are shell scripts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubelet_sim.runtime.containerd import SANDBOX_NOTREADY, ContainerRuntime
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork

REPO = Path(__file__).resolve().parents[3]

LO_RESULT = {
    "cniVersion": "1.0.0",
    "interfaces": [{"name": "lo"}],
    "ips": [{"interface": 0, "address": "127.0.0.1/8"}],
}
LOOPBACK = """#!/bin/sh
echo "$CNI_COMMAND loopback $CNI_CONTAINERID $CNI_IFNAME" >> {log}
if [ "$CNI_COMMAND" = ADD ]; then
  echo '{result}'
fi
"""

# ADD announces itself, then hangs until killed; DEL just records that it ran.
SLOW_BRIDGE = """#!/bin/sh
echo "$CNI_COMMAND bridge $CNI_CONTAINERID $CNI_IFNAME" >> {log}
if [ "$CNI_COMMAND" = ADD ]; then
  touch {marker}
  sleep 30
fi
"""

CHILD = """
import sys
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.containerd import ContainerRuntime, PodSandboxConfig
root = sys.argv[1]
libcni = LibCNI([root + "/bin"], root + "/cache", RealExec())
runtime = ContainerRuntime(root + "/state", PodNetwork(libcni, root + "/net.d"))
runtime.run_pod_sandbox(PodSandboxConfig(name="web", namespace="default", uid="u1"))
"""


def install(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "net.d").mkdir()
    log, marker = tmp_path / "calls.log", tmp_path / "add-started"
    install(tmp_path / "bin" / "loopback", LOOPBACK.format(log=log, result=json.dumps(LO_RESULT)))
    install(tmp_path / "bin" / "bridge", SLOW_BRIDGE.format(log=log, marker=marker))
    conflist = {"cniVersion": "1.0.0", "name": "podnet", "plugins": [{"type": "bridge"}]}
    (tmp_path / "net.d" / "10-podnet.conflist").write_text(json.dumps(conflist))
    return tmp_path


def kill_runtime_during_pod_add(root: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root)],
        cwd=REPO,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not (root / "add-started").exists():
            assert child.poll() is None, "the runtime exited before the pod network ADD"
            assert time.monotonic() < deadline, "the pod network ADD never started"
            time.sleep(0.02)
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the runtime and the plugin it is waiting on
        child.wait()


def test_a_runtime_killed_during_add_is_cleaned_up_by_the_next_ones_gc(root):
    kill_runtime_during_pod_add(root)
    libcni = LibCNI([str(root / "bin")], str(root / "cache"), RealExec())
    runtime = ContainerRuntime(str(root / "state"), PodNetwork(libcni, str(root / "net.d")))
    [sandbox] = runtime.list_pod_sandboxes()
    assert sandbox.state == SANDBOX_NOTREADY and sandbox.network_attached
    assert os.path.exists(sandbox.netns)
    assert [a.ifname for a in libcni.cached_attachments()] == ["lo"]  # eth0 never got cached

    runtime.garbage_collect()

    calls = (root / "calls.log").read_text().splitlines()
    assert calls[-2:] == [f"DEL bridge {sandbox.id} eth0", f"DEL loopback {sandbox.id} lo"]
    assert libcni.cached_attachments() == []
    assert runtime.pod_sandbox_status(sandbox.id).network_attached is False
    runtime.remove_pod_sandbox(sandbox.id)
    assert not os.path.exists(sandbox.netns)
    assert runtime.list_pod_sandboxes() == []
