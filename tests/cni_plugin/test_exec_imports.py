"""The exec path imports only what a CNI command needs: each start pays for every import.

These assert which modules are loaded, not how long anything takes (timings live in
bench/cni_bench.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cni_plugin.install import EXECUTABLES, PROJECT_ROOT

from .procharness import cni_env, exec_plugin

# Stdlib modules that cost a plugin start more than its own work; each is imported only on
# the branch that needs it (linux dataplane, error formatting, a config json cannot read).
COSTLY_STDLIB = ("os", "json", "ipaddress", "re", "typing", "dataclasses", "collections", "enum",
                 "functools", "subprocess", "traceback", "contextlib", "hashlib", "shlex",
                 "shutil", "ctypes", "pathlib", "tempfile", "uuid", "inspect", "random")
FOREIGN = ("grpc", "google", "yaml", "pyroute2", "asyncio", "kubelet_sim", "csi_driver")
# A C extension loaded from disk; IPv4 is parsed and printed without it.
ONLY_FOR_IPV6 = ("_socket",)


def _costly(modules: list[str]) -> list[str]:
    return [m for m in modules if m.split(".")[0] in COSTLY_STDLIB + FOREIGN + ONLY_FOR_IPV6]


# cni_spec is on every exec path too (the plugins' types, versions, errors and JSON).
CNI_SPEC_MODULES = ("cni_spec.errors", "cni_spec.gojson", "cni_spec.ipnet", "cni_spec.names",
                    "cni_spec.types", "cni_spec.version")


@pytest.mark.parametrize("module", sorted(EXECUTABLES.values()) + list(CNI_SPEC_MODULES))
def test_plugin_module_imports_no_costly_module(module: str) -> None:
    code = (f"import sys; sys.path.insert(0, {PROJECT_ROOT!r}); import {module}; "
            "print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-IS", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert module in out
    assert _costly(out) == []


def _recording_bin(directory: Path, record_dir: Path) -> str:
    """Our executables, each writing the modules it had loaded when it exited."""
    for name, module in EXECUTABLES.items():
        script = directory / name
        script.write_text(
            f"#!{sys.executable} -IS\n"
            "import atexit, posix, sys\n"  # not os: whether the plugin loads it is checked
            f"sys.path.insert(0, {PROJECT_ROOT!r})\n"
            "def _record():\n"
            f"    path = {str(record_dir)!r} + '/' + {name!r} + '.' + "
            "posix.environ[b'CNI_COMMAND'].decode() + '.' + str(posix.getpid())\n"
            "    with open(path, 'w') as f:\n"
            "        f.write(' '.join(sorted(sys.modules)))\n"
            "atexit.register(_record)\n"
            f"from {module} import main\n"
            "main()\n")
        script.chmod(0o755)
    return str(directory)


def test_bridge_and_host_local_add_and_del_load_no_costly_module(tmp_path: Path,
                                                                   sandbox: str) -> None:
    records = tmp_path / "records"
    records.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    path = _recording_bin(bin_dir, records)
    conf = {"cniVersion": "1.1.0", "name": "impnet", "type": "emu-bridge", "bridge": "impbr0",
            "isGateway": True, "ipMasq": True, "dataplaneDir": str(tmp_path / "dp"),
            "ipam": {"type": "emu-host-local", "subnet": "10.77.0.0/24",
                     "dataDir": str(tmp_path / "ipam")}}
    for command in ("ADD", "DEL"):
        proc = exec_plugin(f"{path}/emu-bridge", cni_env(command, "c1", sandbox, "eth0", path),
                           conf)
        assert proc.status == 0, proc.stdout
    recorded = sorted(os.listdir(records))
    assert [r.rsplit(".", 1)[0] for r in recorded] == [
        "emu-bridge.ADD", "emu-bridge.DEL", "emu-host-local.ADD", "emu-host-local.DEL"]
    for name in recorded:
        modules = (records / name).read_text().split()
        assert _costly(modules) == [], name
