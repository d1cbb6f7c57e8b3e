"""The noop test plugin: told by its debug file what to answer, it records every call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.noop import HANDLERS, KNOWN_ARGS
from cni_spec.version import ALL_VERSIONS

from .procharness import cni_env, exec_plugin
from .skelharness import Outcome, run_in_process

RESULT = {"cniVersion": "0.4.0",
          "ips": [{"version": "4", "address": "10.5.0.2/24", "gateway": "10.5.0.1"}]}


def run(command: str, debug: Path, version: str = "1.1.0", **env: str) -> Outcome:
    conf = {"cniVersion": version, "name": "n", "type": "emu-noop", "debugFile": str(debug)}
    return run_in_process(HANDLERS, cni_env(command, "c1", "/ns", "eth0", "/bin", **env), conf,
                          known_args=KNOWN_ARGS)


def write(debug: Path, **plan: Any) -> None:
    debug.write_text(json.dumps(plan))


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_reports_the_configured_result_in_the_config_version(version: str,
                                                             tmp_path: Path) -> None:
    debug = tmp_path / "debug.json"
    write(debug, reportResult=RESULT)
    body = run("ADD", debug, version).json()
    assert body["cniVersion"] == version
    if version in ("0.1.0", "0.2.0"):
        assert body["ip4"]["ip"] == "10.5.0.2/24"
    else:
        assert body["ips"][0]["address"] == "10.5.0.2/24"


def test_records_command_env_and_stdin_of_every_call(tmp_path: Path) -> None:
    debug = tmp_path / "debug.json"
    write(debug, reportResult=RESULT)
    run("ADD", debug, CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=p")
    run("DEL", debug)
    calls = json.loads(debug.read_text())["calls"]
    assert [c["command"] for c in calls] == ["ADD", "DEL"]
    assert calls[0]["env"]["CNI_ARGS"] == "IgnoreUnknown=1;K8S_POD_NAME=p"
    assert calls[0]["env"]["CNI_CONTAINERID"] == "c1"
    assert json.loads(calls[0]["stdin"])["debugFile"] == str(debug)


def test_debug_file_named_in_cni_args_wins(tmp_path: Path) -> None:
    named = tmp_path / "named.json"
    write(named, reportError="from args", reportErrorCode=7)
    out = run("DEL", tmp_path / "conf.json", CNI_ARGS=f"DEBUG={named}")
    assert (out.json()["code"], out.json()["msg"]) == (7, "from args")


def test_reports_the_configured_error_only_for_the_named_command(tmp_path: Path) -> None:
    debug = tmp_path / "debug.json"
    write(debug, reportResult=RESULT,
          commands={"DEL": {"reportError": "cannot", "reportErrorCode": 11,
                            "reportErrorDetails": "busy"}})
    assert run("ADD", debug).status == 0
    out = run("DEL", debug)
    assert out.json() == {"cniVersion": "1.1.0", "code": 11, "msg": "cannot",
                          "details": "busy"}


def test_exit_code_and_stderr_as_a_crashing_plugin(tmp_path: Path, cni_bin: str) -> None:
    debug = tmp_path / "debug.json"
    write(debug, exitWithCode=3, reportStderr="boom")
    conf = {"cniVersion": "1.0.0", "name": "n", "debugFile": str(debug)}
    proc = exec_plugin(f"{cni_bin}/emu-noop", cni_env("ADD", "c1", "/ns", "eth0", cni_bin),
                       conf)
    assert (proc.status, proc.stdout, proc.stderr) == (3, "", "boom")
    assert [c["command"] for c in json.loads(debug.read_text())["calls"]] == ["ADD"]


def test_without_instructions_add_passes_prev_result_through(tmp_path: Path) -> None:
    debug = tmp_path / "debug.json"
    conf = {"cniVersion": "1.0.0", "name": "n", "debugFile": str(debug),
            "prevResult": {"cniVersion": "1.0.0", "ips": [{"address": "10.1.1.1/32"}]}}
    out = run_in_process(HANDLERS, cni_env("ADD", "c1", "/ns", "eth0", "/bin"), conf,
                         known_args=KNOWN_ARGS)
    assert out.json()["ips"] == [{"address": "10.1.1.1/32"}]


def test_version_claims_the_versions_named_in_the_debug_file(tmp_path: Path,
                                                             cni_bin: str) -> None:
    debug = tmp_path / "debug.json"
    write(debug, reportVersionSupport=["0.3.1", "0.4.0"])
    proc = exec_plugin(f"{cni_bin}/emu-noop",
                       {"CNI_COMMAND": "VERSION", "CNI_ARGS": f"DEBUG={debug}"}, b"")
    assert proc.json() == {"cniVersion": "1.1.0", "supportedVersions": ["0.3.1", "0.4.0"]}
    conf = {"cniVersion": "1.0.0", "name": "n"}
    add = exec_plugin(f"{cni_bin}/emu-noop",
                      cni_env("ADD", "c1", "/ns", "eth0", cni_bin, CNI_ARGS=f"DEBUG={debug}"),
                      conf)
    assert (add.json()["code"], add.json()["msg"]) == (1, "incompatible CNI versions")
