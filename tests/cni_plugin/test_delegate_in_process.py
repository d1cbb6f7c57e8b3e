"""emu-bridge runs emu-host-local in-process only when CNI_PATH holds exactly our script.

The bridge delegates IPAM the way libcni's invoke does (find the plugin on CNI_PATH, run
it with our environment and the config on stdin). When the file it finds is the script
`python -m cni_plugin.install` writes for this interpreter, it runs host-local's code in
its own process: same result, same lease files, no second interpreter. Any other file of
that name (a wrapper, a changed script, the reference plugin) is exec'd as before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from cni_plugin.executables import script_text
from cni_plugin.invoke import in_process_module

from .procharness import cni_env, exec_plugin


def bin_with_host_local(base: str, directory: Path, host_local_text: str) -> str:
    """A CNI bin dir: our emu-bridge, and emu-host-local with the given text."""
    directory.mkdir()
    shutil.copy2(Path(base) / "emu-bridge", directory / "emu-bridge")
    host_local = directory / "emu-host-local"
    host_local.write_text(host_local_text)
    host_local.chmod(0o755)
    return str(directory)


def conf(tmp_path: Path, name: str) -> dict[str, object]:
    return {"cniVersion": "1.1.0", "name": "inproc", "type": "emu-bridge", "bridge": "ipbr0",
            "isGateway": True, "dataplane": "emulated", "dataplaneDir": str(tmp_path / name),
            "ipam": {"type": "emu-host-local", "subnet": "10.78.0.0/24",
                     "dataDir": str(tmp_path / f"{name}-ipam")}}


def test_only_our_exact_script_runs_in_process(cni_bin: str, tmp_path: Path) -> None:
    ours = Path(cni_bin) / "emu-host-local"
    assert in_process_module(str(ours)) == "cni_plugin.host_local"
    changed = tmp_path / "emu-host-local"
    changed.write_text(ours.read_text() + "# a local change\n")
    assert in_process_module(str(changed)) is None
    other_name = tmp_path / "host-local"
    other_name.write_text(ours.read_text())
    assert in_process_module(str(other_name)) is None
    assert in_process_module(str(tmp_path / "missing" / "emu-host-local")) is None
    assert ours.read_text() == script_text("cni_plugin.host_local")


def test_in_process_and_exec_give_the_same_result_and_leases(cni_bin: str,
                                                             tmp_path: Path,
                                                             sandbox: str) -> None:
    ours = (Path(cni_bin) / "emu-host-local").read_text()
    marker = tmp_path / "exec-ran"
    # The same script with one line more: it is exec'd (and says so by touching a file).
    wrapper = ours.replace("import sys\n", f"import sys\nopen({str(marker)!r}, 'a').close()\n",
                           1)
    answers = {}
    for name, text in (("inproc", ours), ("exec", wrapper)):
        bin_dir = bin_with_host_local(cni_bin, tmp_path / f"bin-{name}", text)
        proc = exec_plugin(f"{bin_dir}/emu-bridge",
                           cni_env("ADD", "c1", sandbox, "eth0", bin_dir), conf(tmp_path, name))
        assert proc.status == 0, proc.stdout + proc.stderr
        ran_exec = marker.exists()
        assert ran_exec == (name == "exec")
        answers[name] = json.loads(proc.stdout)
        leases = sorted(p.name for p in (tmp_path / f"{name}-ipam" / "inproc").iterdir())
        answers[name + "-leases"] = leases
        lease = tmp_path / f"{name}-ipam" / "inproc" / "10.78.0.2"
        answers[name + "-lease"] = lease.read_bytes()
        proc = exec_plugin(f"{bin_dir}/emu-bridge",
                           cni_env("DEL", "c1", sandbox, "eth0", bin_dir), conf(tmp_path, name))
        assert proc.status == 0, proc.stdout + proc.stderr
        assert not lease.exists()
    for result in (answers["inproc"], answers["exec"]):
        for iface in result["interfaces"]:  # MACs and host veth names are random
            iface.pop("mac", None)
            if iface.get("name", "").startswith("veth"):
                del iface["name"]
    assert answers["inproc"] == answers["exec"]
    assert answers["inproc-leases"] == answers["exec-leases"]
    assert answers["inproc-lease"] == answers["exec-lease"] == b"c1\r\neth0"


def test_an_ipam_error_in_process_is_the_same_cni_error(cni_bin: str, tmp_path: Path,
                                                       sandbox: str) -> None:
    bad = conf(tmp_path, "bad")
    bad["ipam"] = {"type": "emu-host-local", "subnet": "10.78.0.0/32",
                   "dataDir": str(tmp_path / "bad-ipam")}
    outs = []
    for name, text in (("inproc", None), ("exec", "x")):
        base = Path(cni_bin) / "emu-host-local"
        body = base.read_text() if text is None else base.read_text() + "# exec'd\n"
        bin_dir = bin_with_host_local(cni_bin, tmp_path / f"bin-bad-{name}", body)
        proc = exec_plugin(f"{bin_dir}/emu-bridge",
                           cni_env("ADD", "c9", sandbox, "eth0", bin_dir), bad)
        assert proc.status == 1
        outs.append(json.loads(proc.stdout))
    assert outs[0] == outs[1]
    assert outs[0]["code"] != 0


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("strace") is None,
                    reason="needs root and strace to count processes")
def test_with_our_script_no_second_interpreter_starts(cni_bin: str, tmp_path: Path,
                                                      sandbox: str) -> None:
    trace_dir = tmp_path / "trace"
    trace_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CNI_")}
    env.update(cni_env("ADD", "c2", sandbox, "eth0", cni_bin))
    proc = subprocess.run(["strace", "-ff", "-qq", "-e", "trace=execve", "-o",
                           str(trace_dir / "t"), f"{cni_bin}/emu-bridge"],
                          input=json.dumps(conf(tmp_path, "st")).encode(), env=env,
                          capture_output=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    execs = "".join(t.read_text() for t in trace_dir.iterdir())
    assert f'execve("{cni_bin}/emu-bridge"' in execs
    assert f'execve("{cni_bin}/emu-host-local"' not in execs
