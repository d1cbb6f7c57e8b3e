"""How many helper processes a command on the linux dataplane starts (root, strace).

The plugins speak netlink themselves and reach inside a sandbox through at most one
forked child, so a command starts at most three processes besides the CNI plugins
themselves (the plugin and its delegated IPAM plugin). Each command runs under
`strace -ff`, which writes one trace per process: a process whose trace shows no
exec of a plugin from the CNI bin dir is a helper (`ip`, `nsenter`, `sysctl`,
`iptables`, or a forked child). These count processes; they time nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.netns import needs_root, unique_name

from .conftest import RecordingIPAM
from .procharness import ALL_CNI_VARS, cni_env

MAX_HELPERS = 3


def _strace_works() -> bool:
    if os.geteuid() != 0 or shutil.which("strace") is None:
        return False
    return subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"],
                          capture_output=True, check=False).returncode == 0


pytestmark = [needs_root, pytest.mark.root,
              pytest.mark.skipif(not _strace_works(), reason="needs strace (and ptrace)")]

EXEC_OK = re.compile(r'^execve\("([^"]+)".*= 0$', re.MULTILINE)


def run_traced(plugin: str, env: dict[str, str], conf: dict[str, Any],
               trace_dir: Path) -> tuple[subprocess.CompletedProcess[bytes], list[str]]:
    """Run the plugin under strace; (its outcome, one entry per helper process: what it
    exec'd last, or "fork" for a child that exec'd nothing)."""
    trace_dir.mkdir()
    full_env = {k: v for k, v in os.environ.items() if k not in ALL_CNI_VARS}
    full_env.update(env)
    proc = subprocess.run(["strace", "-ff", "-qq", "-e", "trace=execve",
                           "-o", str(trace_dir / "trace"), plugin],
                          input=json.dumps(conf).encode(), env=full_env,
                          capture_output=True, timeout=60, check=False)
    cni_bin = os.path.dirname(plugin)
    helpers = []
    for trace in sorted(trace_dir.iterdir()):
        execs = EXEC_OK.findall(trace.read_text())
        if any(os.path.dirname(path) == cni_bin for path in execs):
            continue  # our plugin, or the IPAM plugin it delegated to
        helpers.append(os.path.basename(execs[-1]) if execs else "fork")
    return proc, helpers


def bridge_conf(ipam: RecordingIPAM, bridge: str, **fields: Any) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "helpers", "type": "emu-bridge", "bridge": bridge,
            "dataplane": "linux", "ipam": ipam.ipam_conf(), **fields}


@pytest.mark.parametrize("fields", [{"isGateway": True},
                                    {"isGateway": True, "ipMasq": True}],
                         ids=["gateway", "gateway-masquerade"])
def test_bridge_add_check_and_del_each_start_at_most_three_helpers(
        fields: dict[str, Any], recording_ipam: RecordingIPAM, netns: str, bridge_name: str,
        cni_bin: str, tmp_path: Path) -> None:
    recording_ipam.set_result({"cniVersion": "1.0.0",
                               "ips": [{"address": "10.63.0.5/24"}],
                               "routes": [{"dst": "0.0.0.0/0"}]})
    conf = bridge_conf(recording_ipam, bridge_name, **fields)
    cid = unique_name("c")
    plugin = f"{cni_bin}/emu-bridge"
    add, add_helpers = run_traced(plugin, cni_env("ADD", cid, netns, "eth0", cni_bin), conf,
                                  tmp_path / "add")
    assert add.returncode == 0, add.stdout
    check, check_helpers = run_traced(plugin, cni_env("CHECK", cid, netns, "eth0", cni_bin),
                                      {**conf, "prevResult": json.loads(add.stdout)},
                                      tmp_path / "check")
    assert check.returncode == 0, check.stdout
    delete, del_helpers = run_traced(plugin, cni_env("DEL", cid, netns, "eth0", cni_bin), conf,
                                     tmp_path / "del")
    assert delete.returncode == 0, delete.stdout
    assert recording_ipam.commands() == ["ADD", "CHECK", "DEL"]  # the IPAM plugin ran
    assert len(add_helpers) <= MAX_HELPERS, add_helpers
    assert len(check_helpers) <= MAX_HELPERS, check_helpers
    assert len(del_helpers) <= MAX_HELPERS, del_helpers
    assert not {"ip", "nsenter", "sysctl"} & set(add_helpers + check_helpers + del_helpers)


def test_loopback_add_check_and_del_each_start_at_most_one_helper(
        netns: str, cni_bin: str, tmp_path: Path) -> None:
    conf = {"cniVersion": "1.0.0", "name": "lo", "type": "emu-loopback", "dataplane": "linux"}
    plugin = f"{cni_bin}/emu-loopback"
    for command in ("ADD", "CHECK", "DEL"):
        proc, helpers = run_traced(plugin, cni_env(command, "c1", netns, "lo", cni_bin), conf,
                                   tmp_path / command)
        assert proc.returncode == 0, proc.stdout
        assert len(helpers) <= 1, (command, helpers)
