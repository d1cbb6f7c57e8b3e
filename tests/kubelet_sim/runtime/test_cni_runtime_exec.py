"""The real exec boundary: plugins are found on CNI_PATH, run with env + stdin, and their
errors decoded as libcni decodes them. The plugins here are tiny shell scripts."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import conf_list_from_bytes
from kubelet_sim.runtime.libcni.invoke import RealExec, find_in_path

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs /bin/sh")


def script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_in_path_takes_the_first_directory_holding_the_plugin(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    script(second, "bridge", "exit 0\n")
    script(first, "bridge", "exit 0\n")
    assert find_in_path("bridge", [str(tmp_path / "none"), str(first), str(second)]) == str(
        first / "bridge"
    )


@pytest.mark.parametrize(
    ("plugin", "paths", "message"),
    [
        ("", ["/x"], "no plugin name provided"),
        ("../bridge", ["/x"], "invalid plugin name: ../bridge"),
        ("bridge", [], "no paths provided"),
        ("bridge", ["/x", "/y"], 'failed to find plugin "bridge" in path [/x /y]'),
    ],
)
def test_find_in_path_errors_read_as_libcnis(plugin, paths, message):
    with pytest.raises(CNIError) as info:
        find_in_path(plugin, paths)
    assert str(info.value) == message


def test_a_plugin_gets_the_cni_env_and_the_config_on_stdin(tmp_path):
    record = tmp_path / "seen"
    script(
        tmp_path,
        "recorder",
        f'env | grep "^CNI_" | sort > {record}.env\ncat > {record}.stdin\n'
        'echo \'{"cniVersion":"1.0.0","ips":[{"address":"10.9.0.2/24"}]}\'\n',
    )
    lib = LibCNI([str(tmp_path)], str(tmp_path / "cache"), RealExec())
    net = conf_list_from_bytes(
        b'{"cniVersion":"1.0.0","name":"rec","plugins":[{"type":"recorder"}]}'
    )
    rt = RuntimeConf("cid1", "/var/run/netns/x", "eth0", (("IgnoreUnknown", "1"), ("K", "v")))
    result = lib.add_network_list(net, rt)
    assert result["ips"] == [{"address": "10.9.0.2/24"}]
    env = dict(line.split("=", 1) for line in Path(f"{record}.env").read_text().splitlines())
    assert env == {
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "cid1",
        "CNI_NETNS": "/var/run/netns/x",
        "CNI_IFNAME": "eth0",
        "CNI_ARGS": "IgnoreUnknown=1;K=v",
        "CNI_PATH": str(tmp_path),
    }
    assert json.loads(Path(f"{record}.stdin").read_text()) == {
        "cniVersion": "1.0.0",
        "name": "rec",
        "type": "recorder",
    }


def test_a_plugins_error_json_becomes_its_code_msg_and_details(tmp_path):
    script(
        tmp_path,
        "failing",
        'echo \'{"cniVersion":"1.0.0","code":7,"msg":"bad","details":"why"}\'\nexit 1\n',
    )
    with pytest.raises(CNIError) as info:
        RealExec().exec_plugin(str(tmp_path / "failing"), b"{}", {"CNI_COMMAND": "ADD"})
    assert (info.value.code, info.value.msg, info.value.details) == (7, "bad", "why")
    assert info.value.summary() == "code 7: bad; why"


def test_a_plugin_failing_silently_reports_its_exit_status(tmp_path):
    script(tmp_path, "silent", "exit 3\n")
    with pytest.raises(CNIError, match="netplugin failed with no error message: exit status 3"):
        RealExec().exec_plugin(str(tmp_path / "silent"), b"{}", {})


def test_a_plugin_failing_on_stderr_only_reports_stderr(tmp_path):
    script(tmp_path, "noisy", "echo boom >&2\nexit 1\n")
    with pytest.raises(CNIError, match="netplugin failed: 'boom\\\\n': exit status 1"):
        RealExec().exec_plugin(str(tmp_path / "noisy"), b"{}", {})


def test_a_plugin_printing_garbage_on_failure_is_reported_as_such(tmp_path):
    script(tmp_path, "garbage", "echo not-json\nexit 1\n")
    with pytest.raises(CNIError, match="error parsing its diagnostic message"):
        RealExec().exec_plugin(str(tmp_path / "garbage"), b"{}", {})


def test_the_runtimes_environment_is_inherited_and_cni_vars_override_it(tmp_path):
    out = tmp_path / "env"
    script(tmp_path, "envdump", f"env > {out}\n")
    RealExec(base_env={"HOME_MARK": "1", "CNI_COMMAND": "stale"}).exec_plugin(
        str(tmp_path / "envdump"), b"", {"CNI_COMMAND": "DEL"}
    )
    lines = out.read_text().splitlines()
    assert "HOME_MARK=1" in lines and "CNI_COMMAND=DEL" in lines
    assert "CNI_COMMAND=stale" not in lines


def test_a_non_executable_plugin_fails_cleanly(tmp_path):
    path = tmp_path / "notexec"
    path.write_text("#!/bin/sh\nexit 0\n")
    os.chmod(path, 0o644)
    with pytest.raises(CNIError, match="netplugin failed"):
        RealExec().exec_plugin(str(path), b"", {})
