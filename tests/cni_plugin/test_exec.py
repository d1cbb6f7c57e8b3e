"""Our executables run as real processes: as installed in a bin dir and as console scripts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.install import EXECUTABLES, PROJECT_ROOT, install
from cni_spec.version import ALL_VERSIONS

from .conftest import RecordingIPAM
from .procharness import cni_env, exec_plugin

OURS = ("emu-bridge", "emu-loopback", "emu-noop")
VERSION_REPLY = ('{"cniVersion":"1.1.0","supportedVersions":["0.1.0","0.2.0","0.3.0","0.3.1",'
                 '"0.4.0","1.0.0","1.1.0"]}\n')


def bridge_conf(ipam: RecordingIPAM, dp_dir: str, version: str = "1.0.0") -> dict[str, Any]:
    return {"cniVersion": version, "name": "exnet", "type": "emu-bridge", "bridge": "emtbrx",
            "dataplaneDir": dp_dir, "ipam": ipam.ipam_conf()}


def test_installed_scripts_start_the_venv_interpreter_isolated_without_site(
        cni_bin: str) -> None:
    for name in OURS:
        first = Path(cni_bin, name).read_text().splitlines()[0]
        assert first == f"#!{sys.executable} -IS"
        assert os.access(Path(cni_bin, name), os.X_OK)


def test_install_lays_only_our_names_and_can_be_repeated(tmp_path: Path) -> None:
    first = install(str(tmp_path))
    second = install(str(tmp_path))
    assert first == second
    assert {os.path.basename(p) for p in first} <= set(EXECUTABLES)
    assert set(OURS) <= set(os.listdir(tmp_path))


@pytest.mark.parametrize("name", OURS)
def test_version_answers_from_the_installed_executable(name: str, cni_bin: str) -> None:
    proc = exec_plugin(f"{cni_bin}/{name}", {"CNI_COMMAND": "VERSION"}, b"")
    assert (proc.status, proc.stdout) == (0, VERSION_REPLY)


@pytest.mark.parametrize("name", OURS)
def test_console_script_answers_version(name: str) -> None:
    script = Path(sys.executable).parent / name
    if not script.exists():
        pytest.skip(f"{name} console script not installed (pip install -e .)")
    proc = exec_plugin(str(script), {"CNI_COMMAND": "VERSION"}, b"")
    assert (proc.status, proc.stdout) == (0, VERSION_REPLY)


def test_run_by_hand_without_command_describes_itself(cni_bin: str) -> None:
    proc = exec_plugin(f"{cni_bin}/emu-bridge", {}, b"")
    assert (proc.status, proc.stdout) == (0, "")
    assert proc.stderr.startswith("CNI bridge plugin")
    assert "CNI protocol versions supported: 0.1.0, 0.2.0" in proc.stderr


def test_error_is_json_on_stdout_with_exit_status_1(cni_bin: str) -> None:
    proc = exec_plugin(f"{cni_bin}/emu-loopback", {"CNI_COMMAND": "ADD"},
                       {"cniVersion": "1.0.0", "name": "n"})
    assert proc.status == 1
    assert proc.json()["code"] == 4
    # env is checked before stdin is read, so the reply carries our newest version
    assert proc.stdout.startswith('{\n    "cniVersion": "1.1.0",\n    "code": 4,')


def test_exec_path_imports_nothing_heavy() -> None:
    code = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r}); "
            "import cni_plugin.bridge, cni_plugin.loopback, cni_plugin.noop, "
            "cni_plugin.dataplane.emulated, cni_plugin.bridge_check; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-IS", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    heavy = [m for m in out if m.split(".")[0] in ("grpc", "google", "yaml", "pyroute2",
                                                   "asyncio", "kubelet_sim", "csi_driver")]
    assert heavy == []


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_bridge_add_check_del_as_processes(version: str, recording_ipam: RecordingIPAM,
                                           dataplane_dir: str, sandbox: str,
                                           cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir, version)
    exe = f"{cni_bin}/emu-bridge"
    add = exec_plugin(exe, cni_env("ADD", "c1", sandbox, "eth0", cni_bin), conf)
    assert add.status == 0, add.stdout
    assert add.json()["cniVersion"] == version
    expected = ["ADD"]
    if version in ("0.4.0", "1.0.0", "1.1.0"):
        check = exec_plugin(exe, cni_env("CHECK", "c1", sandbox, "eth0", cni_bin),
                            {**conf, "prevResult": add.json()})
        assert (check.status, check.stdout) == (0, "")
        expected.append("CHECK")
    delete = exec_plugin(exe, cni_env("DEL", "c1", sandbox, "eth0", cni_bin), conf)
    assert (delete.status, delete.stdout) == (0, "")
    assert recording_ipam.commands() == [*expected, "DEL"]
    assert EmulatedDataplane(dataplane_dir).links(sandbox) == []


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_loopback_add_as_a_process(version: str, dataplane_dir: str, sandbox: str,
                                   cni_bin: str) -> None:
    conf = {"cniVersion": version, "name": "lo", "dataplaneDir": dataplane_dir}
    proc = exec_plugin(f"{cni_bin}/emu-loopback", cni_env("ADD", "c", sandbox, "lo", cni_bin),
                       conf)
    assert proc.status == 0
    assert proc.json()["cniVersion"] == version


def test_bridge_killed_mid_add_leaves_nothing_del_cannot_clean(
        recording_ipam: RecordingIPAM, dataplane_dir: str, sandbox: str, cni_bin: str) -> None:
    recording_ipam.set_plan(sleepSeconds=30)  # IPAM hangs: the veth exists by then
    conf = bridge_conf(recording_ipam, dataplane_dir)
    env = {**os.environ, **cni_env("ADD", "c1", sandbox, "eth0", cni_bin)}
    proc = subprocess.Popen([f"{cni_bin}/emu-bridge"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env, start_new_session=True)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(conf).encode())
    proc.stdin.close()
    dp = EmulatedDataplane(dataplane_dir)
    deadline = time.monotonic() + 20
    while recording_ipam.commands() != ["ADD"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert dp.get_link(sandbox, "eth0") is not None
    os.killpg(proc.pid, signal.SIGKILL)  # the bridge and its IPAM child
    proc.wait()
    recording_ipam.set_plan(sleepSeconds=0)
    delete = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("DEL", "c1", sandbox, "eth0", cni_bin),
                         conf)
    assert delete.status == 0, delete.stdout
    assert dp.links(sandbox) == []
    assert [link.name for link in dp.links(None)] == ["emtbrx"]
    assert recording_ipam.commands() == ["ADD", "DEL"]


def test_concurrent_adds_on_one_bridge_all_get_recorded(recording_ipam: RecordingIPAM,
                                                        dataplane_dir: str, tmp_path: Path,
                                                        cni_bin: str) -> None:
    conf = bridge_conf(recording_ipam, dataplane_dir)
    sandboxes = []
    for i in range(12):
        path = tmp_path / f"ns{i}"
        path.touch()
        sandboxes.append(str(path))

    def add(i: int) -> int:
        env = cni_env("ADD", f"c{i}", sandboxes[i], "eth0", cni_bin)
        return exec_plugin(f"{cni_bin}/emu-bridge", env, conf).status

    with ThreadPoolExecutor(max_workers=6) as pool:
        assert list(pool.map(add, range(12))) == [0] * 12
    dp = EmulatedDataplane(dataplane_dir)
    assert all(dp.get_link(ns, "eth0") is not None for ns in sandboxes)
    ports = [link for link in dp.links(None) if link.master == "emtbrx"]
    assert len(ports) == 12


def test_fifty_concurrent_adds_with_emu_host_local_never_share_an_address(
        dataplane_dir: str, tmp_path: Path, cni_bin: str) -> None:
    if not os.path.exists(f"{cni_bin}/emu-host-local"):
        pytest.skip("emu-host-local is not built yet")
    conf = {"cniVersion": "1.0.0", "name": "fifty", "type": "emu-bridge", "bridge": "emtb50",
            "dataplaneDir": dataplane_dir,
            "ipam": {"type": "emu-host-local", "dataDir": str(tmp_path / "ipam"),
                     "subnet": "10.50.0.0/24"}}
    sandboxes = []
    for i in range(50):
        path = tmp_path / f"ns{i}"
        path.touch()
        sandboxes.append(str(path))

    def add(i: int) -> str:
        out = exec_plugin(f"{cni_bin}/emu-bridge",
                          cni_env("ADD", f"c{i}", sandboxes[i], "eth0", cni_bin), conf)
        assert out.status == 0, out.stdout
        return str(out.json()["ips"][0]["address"])

    with ThreadPoolExecutor(max_workers=50) as pool:
        addresses = list(pool.map(add, range(50)))
    assert len(set(addresses)) == 50
    dp = EmulatedDataplane(dataplane_dir)
    recorded = sorted(a["addrs"][0] for a in dp.attachments())
    assert recorded == sorted(addresses)
