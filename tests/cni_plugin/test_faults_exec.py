"""Fault injection in our CNI executables, exec'd as a runtime execs them: an error code
from the network config's "faults" file, the same rules for every plugin through
CNI_MINI_FAULTS, a crash after half the work (what DEL must then clean up), a delay, and
counts kept across executions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from .procharness import Proc, cni_env, exec_plugin


@pytest.fixture
def conf(tmp_path: Path, dataplane_dir: str) -> dict[str, Any]:
    return {"cniVersion": "1.1.0", "name": "faulty", "type": "emu-bridge", "bridge": "fbr0",
            "isGateway": True, "dataplane": "emulated", "dataplaneDir": dataplane_dir,
            "ipam": {"type": "emu-host-local", "ranges": [[{"subnet": "10.30.0.0/24"}]],
                     "dataDir": str(tmp_path / "ipam")}}


def run(cni_bin: str, command: str, conf: dict[str, Any], sandbox: str, cid: str = "c1",
        **env: str) -> Proc:
    return exec_plugin(os.path.join(cni_bin, "emu-bridge"),
                       cni_env(command, cid, sandbox, "eth0", cni_bin, **env), conf)


def rules(path: Path, *items: dict[str, Any]) -> str:
    path.write_text(json.dumps(list(items)))
    return str(path)


def leases(tmp_path: Path) -> list[str]:
    directory = tmp_path / "ipam" / "faulty"
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("10.")) \
        if directory.exists() else []


def test_a_rule_in_the_network_config_answers_its_cni_error_then_lets_add_through(
    cni_bin: str, conf: dict[str, Any], sandbox: str, tmp_path: Path,
) -> None:
    conf["faults"] = rules(tmp_path / "f.json", {"method": "emu-bridge/ADD", "code": 11,
                                                 "message": "injected: try again", "times": 1})
    failed = run(cni_bin, "ADD", conf, sandbox)
    assert failed.status == 1
    assert failed.json() == {"cniVersion": "1.1.0", "code": 11, "msg": "injected: try again"}
    assert leases(tmp_path) == []  # failed before any work
    added = run(cni_bin, "ADD", conf, sandbox)
    assert added.status == 0, added.stdout
    assert added.json()["ips"][0]["address"] == "10.30.0.2/24"
    state = json.loads((tmp_path / "f.json.state").read_text())
    assert state["0"] == [2, 1]  # matched twice (across processes), acted once


def test_the_env_var_reaches_every_plugin_and_a_crash_leaves_half_the_work_for_del(
    cni_bin: str, conf: dict[str, Any], sandbox: str, tmp_path: Path,
) -> None:
    faults = rules(tmp_path / "f.json",
                   {"method": "emu-host-local/ADD", "crash": True, "times": 1})
    crashed = run(cni_bin, "ADD", conf, sandbox, CNI_MINI_FAULTS=faults)
    # IPAM died after writing its lease; the bridge reports its delegate's failure and
    # undoes its veth, but the lease stays: only a DEL releases it.
    assert crashed.status == 1
    assert leases(tmp_path) == ["10.30.0.2"]
    deleted = run(cni_bin, "DEL", conf, sandbox, CNI_MINI_FAULTS=faults)
    assert deleted.status == 0, deleted.stdout
    assert leases(tmp_path) == []
    again = run(cni_bin, "ADD", conf, sandbox, CNI_MINI_FAULTS=faults)
    assert again.status == 0, again.stdout
    assert leases(tmp_path) == [again.json()["ips"][0]["address"].split("/")[0]]


def test_a_bridge_crash_mid_add_answers_nothing_and_del_then_add_recover(
    cni_bin: str, conf: dict[str, Any], sandbox: str, tmp_path: Path,
) -> None:
    conf["faults"] = rules(tmp_path / "f.json", {"method": "emu-bridge/ADD", "crash": True,
                                                 "times": 1})
    crashed = run(cni_bin, "ADD", conf, sandbox)
    assert (crashed.status, crashed.stdout) == (2, "")
    assert "panic: injected crash" in crashed.stderr
    assert leases(tmp_path) == []  # it died with the veth made, before IPAM
    assert run(cni_bin, "DEL", conf, sandbox).status == 0  # finds and removes the veth
    added = run(cni_bin, "ADD", conf, sandbox)
    assert added.status == 0, added.stdout
    assert [i["name"] for i in added.json()["interfaces"]][2] == "eth0"


def test_a_delay_rule_slows_the_command_but_it_succeeds(
    cni_bin: str, conf: dict[str, Any], sandbox: str, tmp_path: Path,
) -> None:
    conf["faults"] = rules(tmp_path / "f.json", {"method": "STATUS", "delay": 0.2})
    assert run(cni_bin, "STATUS", conf, sandbox).status == 0
    # the bridge and its IPAM (which gets the same config) both matched and waited
    assert json.loads((tmp_path / "f.json.state").read_text()) == {"0": [2, 2]}


def test_a_broken_rules_file_is_an_invalid_network_config(
    cni_bin: str, conf: dict[str, Any], sandbox: str, tmp_path: Path,
) -> None:
    conf["faults"] = rules(tmp_path / "f.json", {"method": "ADD", "code": 11, "delay": 1})
    out = run(cni_bin, "ADD", conf, sandbox)
    assert out.status == 1
    assert out.json()["code"] == 7 and "exactly one of code, delay, hang, crash" in \
        out.json()["msg"]
