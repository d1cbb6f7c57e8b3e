"""Differential: the reference loopback and emu-loopback, fresh netns each, every cniVersion.

emu-loopback runs without a "dataplane" key, as containerd runs its loopback network:
in a real netns it takes the linux dataplane by itself. The reference labels its
current-typed result with the config's version and prints it unconverted, so no version
carries ips[].version and 0.1.0/0.2.0 print ips, not ip4/ip6; ours must print the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.netns import REFERENCE_DIR, fresh_netns, ip_json, needs_reference, needs_root

from .procharness import cni_env, exec_plugin
from .reference_versions import ALL_VERSIONS, as_printed_at, reference_version_for

REFERENCE = f"{REFERENCE_DIR}/loopback"
pytestmark = [needs_root, needs_reference, pytest.mark.root, pytest.mark.reference]

# A prevResult in the shape of each version family, as the previous plugin printed it.
PREV_RESULTS: dict[str, dict[str, Any]] = {
    "0.1.0": {"ip4": {"ip": "10.9.0.3/24", "gateway": "10.9.0.1",
                      "routes": [{"dst": "0.0.0.0/0"}]}, "dns": {}},
    "0.4.0": {"interfaces": [{"name": "eth0", "mac": "0a:58:0a:09:00:03", "sandbox": "NETNS"}],
              "ips": [{"version": "4", "interface": 0, "address": "10.9.0.3/24",
                       "gateway": "10.9.0.1"}],
              "routes": [{"dst": "0.0.0.0/0"}], "dns": {"nameservers": ["10.9.0.10"]}},
    "1.0.0": {"interfaces": [{"name": "eth0", "mac": "0a:58:0a:09:00:03", "sandbox": "NETNS"}],
              "ips": [{"interface": 0, "address": "10.9.0.3/24", "gateway": "10.9.0.1"}],
              "routes": [{"dst": "0.0.0.0/0"}], "dns": {"nameservers": ["10.9.0.10"]}},
}
FAMILY = {"0.1.0": "0.1.0", "0.2.0": "0.1.0", "0.3.0": "0.4.0", "0.3.1": "0.4.0",
          "0.4.0": "0.4.0", "1.0.0": "1.0.0", "1.1.0": "1.0.0"}


def lo_view(netns: str) -> tuple[list[str], list[tuple[str, int]]]:
    lo = ip_json("addr", "show", "dev", "lo", netns=netns)[0]
    return sorted(lo["flags"]), [(a["local"], a["prefixlen"]) for a in lo["addr_info"]]


def conf_at(version: str, **fields: Any) -> dict[str, Any]:
    return {"cniVersion": version, "name": "lo", "type": "loopback", **fields}


def run_steps(plugin: str, version: str, steps: list[str],
              tmp_path: Path) -> list[tuple[int, str, Any]]:
    """The commands in one fresh netns: (status, output with the netns path normalised, lo
    afterwards) of each. No "dataplane" key, as containerd sends the config."""
    out = []
    conf = conf_at(version, dataplaneDir=str(tmp_path / "dp"))
    with fresh_netns() as netns:
        for command in steps:
            proc = exec_plugin(plugin, cni_env(command, "c1", netns, "lo", "/nonexistent"),
                               conf)
            out.append((proc.status, proc.stdout.replace(netns, "NETNS"), lo_view(netns)))
    return out


def assert_same_as_reference(version: str, steps: list[str], cni_bin: str,
                             tmp_path: Path) -> list[tuple[int, Any, Any]]:
    """Field by field; results byte for byte (netns path aside) where the reference knows
    `version` (errors differ in ours carrying the cniVersion the spec asks for)."""
    ref_version = reference_version_for(REFERENCE, version)
    theirs = run_steps(REFERENCE, ref_version, steps, tmp_path)
    ours = run_steps(f"{cni_bin}/emu-loopback", version, steps, tmp_path)
    if ref_version == version:
        assert [out for out in ours if out[0] == 0] == [out for out in theirs if out[0] == 0]
    parsed = [[(status, parse(text), lo) for status, text, lo in side] for side in (theirs, ours)]
    assert parsed[1] == [(status, as_printed_at(body, version), lo)
                         for status, body, lo in parsed[0]]
    assert not (tmp_path / "dp").exists()  # the linux dataplane served every step
    return parsed[1]


def parse(text: str) -> Any:
    body = json.loads(text) if text else None
    if isinstance(body, dict) and "code" in body:
        body.pop("cniVersion", None)  # the reference's errors carry no version
    return body


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_prints_what_the_reference_prints_and_brings_lo_up(version: str, cni_bin: str,
                                                               tmp_path: Path) -> None:
    ((status, body, lo),) = assert_same_as_reference(version, ["ADD"], cni_bin, tmp_path)
    assert status == 0 and "UP" in lo[0]
    assert [ip["address"] for ip in body["ips"]] == ["127.0.0.1/8", "::1/128"]
    assert all("version" not in ip for ip in body["ips"])


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_check_del_del_check_match_the_reference(version: str, cni_bin: str,
                                                      tmp_path: Path) -> None:
    steps = ["ADD", "CHECK", "DEL", "DEL", "CHECK"]
    results = assert_same_as_reference(version, steps, cni_bin, tmp_path)
    assert [status for status, _, _ in results[2:4]] == [0, 0]
    assert [body for _, body, _ in results[2:4]] == [None, None]


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_add_with_prev_result_passes_it_on_as_the_reference_does(version: str, cni_bin: str,
                                                                 tmp_path: Path) -> None:
    outputs = []
    for plugin, at in ((REFERENCE, reference_version_for(REFERENCE, version)),
                       (f"{cni_bin}/emu-loopback", version)):
        prev = {"cniVersion": at, **PREV_RESULTS[FAMILY[version]]}
        with fresh_netns() as netns:
            conf = conf_at(at, prevResult=json.loads(json.dumps(prev).replace("NETNS", netns)))
            proc = exec_plugin(plugin, cni_env("ADD", "c1", netns, "lo", "/nonexistent"), conf)
            outputs.append((proc.status, parse(proc.stdout.replace(netns, "NETNS"))))
    assert outputs[1] == (outputs[0][0], as_printed_at(outputs[0][1], version))
    assert outputs[1][0] == 0
