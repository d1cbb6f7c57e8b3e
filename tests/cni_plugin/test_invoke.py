"""Delegating to another plugin through CNI_PATH, as libcni's invoke does."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from cni_plugin.invoke import delegate_add, delegate_del, find_in_path
from cni_plugin.skel import CmdArgs
from cni_spec.errors import CNIError

CONF = b'{"cniVersion":"0.4.0","name":"n","ipam":{"type":"fake"}}'


def make_plugin(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!{sys.executable} -IS\nimport os, sys\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def cmd(tmp_path: Path, **kw: object) -> CmdArgs:
    base: dict = {"command": "ADD", "container_id": "c1", "netns": "/ns", "ifname": "eth0",
                  "args": {}, "path": [str(tmp_path / "empty"), str(tmp_path)],
                  "stdin_data": CONF, "args_raw": "IgnoreUnknown=1;IP=10.0.0.9"}
    base.update(kw)
    return CmdArgs(**base)


def test_find_in_path_takes_the_first_directory_holding_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    make_plugin(tmp_path / "b", "p", "")
    assert find_in_path("p", [str(tmp_path / "a"), str(tmp_path / "b")]) == \
        str(tmp_path / "b" / "p")


@pytest.mark.parametrize(("name", "paths", "msg"), [
    ("", ["/x"], "no plugin name provided"),
    ("../p", ["/x"], "invalid plugin name: ../p"),
    ("p", [], "no paths provided"),
    ("p", ["/nonexistent-a", "/nonexistent-b"],
     'failed to find plugin "p" in path [/nonexistent-a /nonexistent-b]'),
])
def test_find_in_path_errors_read_as_the_reference(name: str, paths: list[str], msg: str) -> None:
    with pytest.raises(CNIError) as e:
        find_in_path(name, paths)
    assert (e.value.code, e.value.msg) == (999, msg)


def test_delegate_add_passes_env_and_config_and_reads_the_result(tmp_path: Path) -> None:
    record = tmp_path / "record"
    make_plugin(tmp_path, "fake", f"""
data = sys.stdin.buffer.read()
keys = ["CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_ARGS", "CNI_PATH"]
open({str(record)!r}, "w").write(repr([os.environ.get(k) for k in keys] + [data]))
print('{{"ips":[{{"version":"4","address":"10.0.0.9/24","gateway":"10.0.0.1"}}]}}')
""")
    result = delegate_add("fake", CONF, cmd(tmp_path))
    assert [ip.address for ip in result.ips] == ["10.0.0.9/24"]
    assert result.cni_version == "1.1.0"
    seen = eval(record.read_text())
    assert seen[:5] == ["ADD", "c1", "/ns", "eth0", "IgnoreUnknown=1;IP=10.0.0.9"]
    assert seen[5] == os.pathsep.join([str(tmp_path / "empty"), str(tmp_path)])
    assert seen[6] == CONF


def test_delegated_error_keeps_its_code_msg_and_details(tmp_path: Path) -> None:
    make_plugin(tmp_path, "fake",
                'print(\'{"code": 11, "msg": "busy", "details": "d"}\'); sys.exit(1)')
    with pytest.raises(CNIError) as e:
        delegate_del("fake", CONF, cmd(tmp_path, command="DEL"))
    assert (e.value.code, e.value.msg, e.value.details) == (11, "busy", "d")


def test_delegated_failure_without_output_is_described(tmp_path: Path) -> None:
    make_plugin(tmp_path, "fake", "sys.exit(3)")
    with pytest.raises(CNIError) as e:
        delegate_del("fake", CONF, cmd(tmp_path, command="DEL"))
    assert e.value.msg == "netplugin failed with no error message: exit status 3"


def test_delegated_garbage_error_is_described(tmp_path: Path) -> None:
    make_plugin(tmp_path, "fake", "print('oops'); sys.exit(1)")
    with pytest.raises(CNIError) as e:
        delegate_del("fake", CONF, cmd(tmp_path, command="DEL"))
    assert e.value.msg.startswith("netplugin failed but error parsing its diagnostic message")


def test_delegated_result_without_version_is_read_in_the_config_version(tmp_path: Path) -> None:
    make_plugin(tmp_path, "fake", 'print(\'{"ip4": {"ip": "10.0.0.7/24"}}\')')
    legacy = b'{"cniVersion":"0.2.0","name":"n"}'
    result = delegate_add("fake", legacy, cmd(tmp_path, stdin_data=legacy))
    assert [ip.address for ip in result.ips] == ["10.0.0.7/24"]


@pytest.mark.skipif(not os.path.exists("/usr/lib/cni/host-local"),
                    reason="reference host-local not installed")
def test_delegate_add_to_reference_host_local(tmp_path: Path) -> None:
    conf = ('{"cniVersion":"1.0.0","name":"n","ipam":{"type":"host-local",'
            f'"dataDir":"{tmp_path}/ipam","subnet":"10.44.0.0/24"}}}}').encode()
    args = cmd(tmp_path, path=["/usr/lib/cni"], stdin_data=conf, args_raw="")
    result = delegate_add("host-local", conf, args)
    assert [(ip.address, ip.gateway) for ip in result.ips] == [("10.44.0.2/24", "10.44.0.1")]
    delegate_del("host-local", conf, cmd(tmp_path, command="DEL", path=["/usr/lib/cni"],
                                         stdin_data=conf, args_raw=""))
    assert not (tmp_path / "ipam" / "n" / "10.44.0.2").exists()
