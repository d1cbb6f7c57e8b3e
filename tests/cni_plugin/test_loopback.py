"""The loopback plugin on the emulated dataplane (linux is covered in test_linux_dataplane)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.loopback import HANDLERS
from cni_spec.version import ALL_VERSIONS

from .skelharness import Outcome, run_in_process


def conf(dp_dir: str, version: str = "1.0.0", **extra: Any) -> dict[str, Any]:
    return {"cniVersion": version, "name": "lo", "type": "emu-loopback",
            "dataplaneDir": dp_dir, **extra}


def run(command: str, config: dict[str, Any], netns: str) -> Outcome:
    env = {"CNI_COMMAND": command, "CNI_CONTAINERID": "c1", "CNI_NETNS": netns,
           "CNI_IFNAME": "lo", "CNI_PATH": "/nonexistent"}
    return run_in_process(HANDLERS, env, config)


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_brings_lo_up_and_prints_the_current_shape_labelled_with_the_config_version(
        version: str, dataplane_dir: str, sandbox: str) -> None:
    """As the reference loopback: its result is never converted, so no version prints
    ips[].version or ip4/ip6 (test_reference_loopback compares the two)."""
    out = run("ADD", conf(dataplane_dir, version), sandbox)
    assert out.status == 0, out.stdout
    expected: dict[str, Any] = {"cniVersion": version,
                "interfaces": [{"name": "lo", "mac": "00:00:00:00:00:00", "sandbox": sandbox}],
                "ips": [{"interface": 0, "address": "127.0.0.1/8"},
                        {"interface": 0, "address": "::1/128"}]}
    if version != "1.1.0":
        expected["dns"] = {}
    assert out.json() == expected
    lo = EmulatedDataplane(dataplane_dir).get_link(sandbox, "lo")
    assert lo is not None and lo.up and lo.addrs == ["127.0.0.1/8", "::1/128"]


@pytest.mark.parametrize("version", ["0.2.0", "0.3.1", "0.4.0"])
def test_add_with_prev_result_prints_it_in_the_shape_of_the_config_version(
        version: str, dataplane_dir: str, sandbox: str) -> None:
    prev = ({"cniVersion": version, "ip4": {"ip": "10.9.0.3/24"}} if version == "0.2.0" else
            {"cniVersion": version, "ips": [{"version": "4", "address": "10.9.0.3/24"}]})
    out = run("ADD", conf(dataplane_dir, version, prevResult=prev), sandbox)
    assert out.json() == {**prev, "dns": {}}


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
