"""The loopback plugin on the emulated dataplane (linux is covered in test_linux_dataplane)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.loopback import HANDLERS
from cni_plugin.version import ALL_VERSIONS

from .skelharness import Outcome, run_in_process


def conf(dp_dir: str, version: str = "1.0.0", **extra: Any) -> dict[str, Any]:
    return {"cniVersion": version, "name": "lo", "type": "emu-loopback",
            "dataplaneDir": dp_dir, **extra}


def run(command: str, config: dict[str, Any], netns: str) -> Outcome:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "c1", "CNI_NETNS": netns,
           "CNI_IFNAME": "lo", "CNI_PATH": "/nonexistent"}
    return run_in_process(HANDLERS, env, config)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_brings_lo_up_with_both_loopback_addresses(version: str, dataplane_dir: str,
                                                       sandbox: str) -> None:
    out = run("ADD", conf(dataplane_dir, version), sandbox)
    assert out.status == 0, out.stdout
    body = out.json()
    if version in ("0.1.0", "0.2.0"):
        assert body["ip4"] == {"ip": "127.0.0.1/8"}
        assert body["ip6"] == {"ip": "::1/128"}
    else:
        assert body["interfaces"] == [{"name": "lo", "mac": "00:00:00:00:00:00",
                                       "sandbox": sandbox}]
        assert [ip["address"] for ip in body["ips"]] == ["127.0.0.1/8", "::1/128"]
    lo = EmulatedDataplane(dataplane_dir).get_link(sandbox, "lo")
    assert lo is not None and lo.up and lo.addrs == ["127.0.0.1/8", "::1/128"]


def test_add_with_prev_result_passes_it_through(dataplane_dir: str, sandbox: str) -> None:
    prev = {"cniVersion": "1.0.0", "ips": [{"address": "10.9.0.3/24"}]}
    out = run("ADD", conf(dataplane_dir, prevResult=prev), sandbox)
    assert out.json()["ips"] == [{"address": "10.9.0.3/24"}]


def test_add_into_missing_netns_fails(dataplane_dir: str, tmp_path: Path) -> None:
    out = run("ADD", conf(dataplane_dir), str(tmp_path / "gone"))
    assert out.status == 1 and out.json()["code"] == 999
    assert "failed to Statfs" in out.json()["msg"]


def test_check_passes_while_up_and_fails_after_del(dataplane_dir: str, sandbox: str) -> None:
    run("ADD", conf(dataplane_dir), sandbox)
    assert run("CHECK", conf(dataplane_dir), sandbox).status == 0
    assert run("DEL", conf(dataplane_dir), sandbox).status == 0
    out = run("CHECK", conf(dataplane_dir), sandbox)
    assert out.json()["msg"] == "loopback interface is down"


def test_del_is_idempotent_and_tolerates_missing_netns(dataplane_dir: str,
                                                       sandbox: str) -> None:
    run("ADD", conf(dataplane_dir), sandbox)
    assert run("DEL", conf(dataplane_dir), sandbox).status == 0
    assert run("DEL", conf(dataplane_dir), sandbox).status == 0
    os.unlink(sandbox)
    out = run("DEL", conf(dataplane_dir), sandbox)
    assert (out.status, out.stdout) == (0, "")
    assert sandbox not in EmulatedDataplane(dataplane_dir).namespaces()
