"""Differential tests: emu-host-local against the reference host-local (/usr/lib/cni).

Same inputs to both (each with its own dataDir) must give the same exit
status, error code and message, result JSON and the same files, bytes and
modes in the dataDir, at every cniVersion (one the installed reference does not
know is compared with its answer at its newest, see reference_versions). Then
both share one dataDir at once.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cni_plugin.reference_versions import ALL_VERSIONS, as_printed_at, reference_version_for
from tests.cni_plugin.test_host_local_exec import (
    PLUGIN,
    Run,
    addresses_of,
    leases_in,
    run_plugin,
    start_plugin,
)

REFERENCE = "/usr/lib/cni/host-local"
pytestmark = [
    pytest.mark.reference,
    pytest.mark.skipif(not os.access(REFERENCE, os.X_OK), reason="reference host-local absent"),
]
VERSIONS = ("", *ALL_VERSIONS)  # "": a config without cniVersion (0.1.0)

Step = tuple[str, dict[str, Any], str, str]  # command, ipam, container id, CNI_ARGS
DUAL = {"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "fd00::/64"}]],
        "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0", "gw": "fd00::1"}]}
V4 = {"subnet": "10.1.2.0/24"}

LIFECYCLE: list[Step] = [
    ("ADD", DUAL, "c1", ""),
    ("ADD", DUAL, "c1", ""),
    ("ADD", V4, "c2", "IP=10.1.2.9"),
    ("ADD", V4, "c3", "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.1.2.9"),
    ("ADD", DUAL, "c3", ""),
    ("DEL", V4, "nobody", ""),
    ("DEL", DUAL, "c1", ""),
    ("ADD", DUAL, "c4", ""),
    ("CHECK", DUAL, "c4", ""),
    ("DEL", V4, "c2", ""),
    ("CHECK", V4, "c2", ""),
]

ERRORS_AND_EDGES: list[Step] = [
    ("ADD", V4, "c1", "IP=10.1.2.1"),
    ("ADD", V4, "c1", "IP=10.9.9.9"),
    ("ADD", V4, "c1", "IP=10.1.2.9,10.1.2.10"),
    ("ADD", V4, "c1", "IP"),
    ("ADD", V4, "c1", "X=1;Y=2"),
    ("ADD", V4, "c1", "IgnoreUnknown=TRUE;X=1;IP=10.1.2.9/8"),
    ("ADD", {"subnet": "10.1.2.0/24", "gateway": "10.1.2.254", "rangeStart": "10.1.2.252"},
     "c2", ""),
    ("ADD", {"subnet": "10.1.2.0/24", "gateway": "10.1.2.254", "rangeStart": "10.1.2.252"},
     "c3", ""),
    ("ADD", {"subnet": "10.1.2.0/31"}, "c4", ""),
    ("ADD", {"subnet": "fd00::/127"}, "c4", ""),
    ("ADD", {"subnet": "10.1.2.5/24"}, "c4", ""),
    ("ADD", {"subnet": "bad"}, "c4", ""),
    ("ADD", {"subnet": "10.1.2.0/24", "rangeStart": "10.1.3.1"}, "c4", ""),
    ("ADD", {"subnet": "10.1.2.0/24", "rangeEnd": "x"}, "c4", ""),
    ("ADD", {"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "10.1.2.0/25"}]]}, "c4", ""),
    ("ADD", {"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.2.128/25"}]]}, "c4", ""),
    ("ADD", {"ranges": [[{"subnet": "10.1.2.0/24"}, {"subnet": "fd00::/64"}]]}, "c4", ""),
    ("ADD", {"ranges": [[]]}, "c4", ""),
    ("ADD", {}, "c4", ""),
    ("ADD", {"subnet": "10.1.2.0/24", "routes": [{"dst": "bad"}]}, "c4", ""),
    ("ADD", {"subnet": "10.1.2.0/24", "resolvConf": "/nonexistent/resolv.conf"}, "c4", ""),
    ("ADD", {"subnet": "10.1.3.0/30"}, "c5", ""),
    ("ADD", {"subnet": "10.1.3.0/30"}, "c6", ""),
    ("CHECK", V4, "c1", ""),
    ("CHECK", V4, "zz", ""),
    ("DEL", V4, "c5", "X=1"),
]

MULTI = {"ranges": [[{"subnet": "10.3.0.0/30"}, {"subnet": "10.3.1.0/30"}],
                    [{"subnet": "fd01::/126"}]]}
MID_GATEWAY = {"subnet": "10.2.0.0/16", "gateway": "10.2.0.5", "rangeStart": "10.2.0.4",
               "rangeEnd": "10.2.0.6"}
ALLOCATION_ORDER: list[Step] = [
    ("ADD", {"ranges": [[{"subnet": "fd00:0:0:1::/64", "rangeStart": "fd00:0:0:1:0:0:1:1"}]]},
     "c1", ""),
    ("ADD", MID_GATEWAY, "c2", ""),
    ("ADD", MID_GATEWAY, "c3", ""),
    ("ADD", MID_GATEWAY, "c4", ""),
    ("ADD", MULTI, "c5", ""),
    ("ADD", MULTI, "c6", ""),
    ("ADD", MULTI, "c7", ""),
    ("ADD", {"subnet": "10.4.0.0/24", "ranges": [[{"subnet": "10.5.0.0/24"}]]}, "c8",
     "IP=10.5.0.9"),
    ("ADD", V4, "c9", "IP=::ffff:10.1.2.7"),
    ("ADD", {"subnet": "::ffff:10.6.0.0/120"}, "c10", ""),
    ("ADD", V4, "c11", "IP="),
]
DECODE_ERRORS: list[Step] = [
    ("DEL", {"subnet": ""}, "c1", ""),
    ("DEL", {"dataDir": 5, "subnet": "10.0.0.0/8"}, "c1", ""),
    ("DEL", {"subnet": "10.0.0.0/8", "rangeStart": 5}, "c1", ""),
    ("DEL", {"ranges": [[{"subnet": 5}]]}, "c1", ""),
    ("DEL", {"ranges": [[{"subnet": None}]]}, "c1", ""),
    ("DEL", {"ranges": [[5]]}, "c1", ""),
    ("DEL", {"subnet": "10.0.0.0/8", "routes": [5]}, "c1", ""),
    ("DEL", {"subnet": "10.0.0.0/8", "routes": [{"dst": "10.0.0.0/8", "gw": 5}]}, "c1", ""),
    ("DEL", {"ranges": [[{"subnet": "10.2.0.0/24", "rangeStart": 5, "gateway": "q"}]]}, "c1",
     ""),
    ("ADD", {"SUBNET": "10.0.0.0/8", "type": True}, "c1", ""),
]

def conf_for(data_dir: Path, version: str, ipam: dict[str, Any]) -> dict[str, Any]:
    conf: dict[str, Any] = {"name": "net1", "type": "bridge",
                            "ipam": {"type": "host-local", "dataDir": str(data_dir), **ipam}}
    if version:
        conf["cniVersion"] = version
    return conf


def normalised(run: Run, data_dir: Path) -> tuple[int, Any]:
    text = run.stdout.replace(str(data_dir), "<dataDir>")
    if not text:
        return run.returncode, None
    body = json.loads(text)
    if "code" in body:
        body.pop("cniVersion", None)  # the reference's errors carry no version
    return run.returncode, body


def data_dir_files(data_dir: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(data_dir)): (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
            for p in sorted(data_dir.rglob("*")) if p.is_file()}


def play(steps: list[Step], version: str, tmp_path: Path) -> None:
    ref_dir, our_dir = tmp_path / "ref", tmp_path / "ours"
    old_umask = os.umask(0o022)
    try:
        for command, ipam, container_id, cni_args in steps:
            theirs = run_plugin(REFERENCE, command,
                                conf_for(ref_dir, reference_version_for(REFERENCE, version),
                                         ipam), container_id, cni_args=cni_args)
            ours = run_plugin(PLUGIN, command, conf_for(our_dir, version, ipam),
                              container_id, cni_args=cni_args)
            step = f"{command} {container_id} {ipam} {cni_args}"
            status, body = normalised(theirs, ref_dir)
            assert normalised(ours, our_dir) == (status, as_printed_at(body, version)), step
            assert data_dir_files(our_dir) == data_dir_files(ref_dir), step
    finally:
        os.umask(old_umask)


@pytest.mark.parametrize("version", VERSIONS)
def test_lifecycle_matches_the_reference_output_and_files(tmp_path: Path, version: str) -> None:
    play(LIFECYCLE, version, tmp_path)


@pytest.mark.parametrize("version", ["1.1.0", "1.0.0", "0.2.0"])
def test_errors_and_edge_cases_match_the_reference(tmp_path: Path, version: str) -> None:
    play(ERRORS_AND_EDGES, version, tmp_path)


def test_config_decode_errors_read_as_the_references(tmp_path: Path) -> None:
    play(DECODE_ERRORS, "1.0.0", tmp_path)


def test_allocation_order_and_address_names_match_the_reference(tmp_path: Path) -> None:
    play(ALLOCATION_ORDER, "1.0.0", tmp_path)


def test_resolv_conf_is_read_as_the_reference_reads_it(tmp_path: Path) -> None:
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("nameserver 1.1.1.1\n; note\nnameserver 8.8.8.8 extra\nsearch a b\n"
                      "domain x.example\noptions ndots:5 rotate\n  search  c\nnameserver\n")
    play([("ADD", {**V4, "resolvConf": str(resolv)}, "c1", "")], "1.0.0", tmp_path)


def shared_conf(data_dir: Path) -> dict[str, Any]:
    return conf_for(data_dir, "1.0.0", {"ranges": [[{"subnet": "10.7.0.0/24"}],
                                                   [{"subnet": "fd07::/64"}]]})


def test_alternating_plugins_continue_one_round_robin(tmp_path: Path) -> None:
    conf = shared_conf(tmp_path)
    got = [addresses_of(run_plugin(plugin, "ADD", conf, f"c{i}").json())[0]
           for i, plugin in enumerate([REFERENCE, PLUGIN, REFERENCE, PLUGIN])]
    assert got == ["10.7.0.2/24", "10.7.0.3/24", "10.7.0.4/24", "10.7.0.5/24"]


def test_both_plugins_adding_at_once_on_one_data_dir_never_share_an_address(
        tmp_path: Path) -> None:
    conf = shared_conf(tmp_path)
    procs = [start_plugin(REFERENCE, "ADD", conf, f"ref{i}") for i in range(25)]
    procs += [start_plugin(PLUGIN, "ADD", conf, f"emu{i}") for i in range(25)]
    addresses: list[str] = []
    for proc in procs:
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.stdout.close()
        assert proc.wait(timeout=120) == 0, out
        addresses += addresses_of(json.loads(out))
    assert len(addresses) == 100 and len(set(addresses)) == 100
    assert len(leases_in(tmp_path)) == 100


def test_each_plugin_deletes_the_others_leases_by_container_id(tmp_path: Path) -> None:
    conf = shared_conf(tmp_path)
    for i in range(3):
        assert run_plugin(REFERENCE, "ADD", conf, f"ref{i}").returncode == 0
        assert run_plugin(PLUGIN, "ADD", conf, f"emu{i}").returncode == 0
    procs = [start_plugin(PLUGIN, "DEL", conf, f"ref{i}") for i in range(3)]
    procs += [start_plugin(REFERENCE, "DEL", conf, f"emu{i}") for i in range(3)]
    for proc in procs:
        assert proc.wait(timeout=60) == 0
    assert leases_in(tmp_path) == {}


def test_reference_check_sees_our_lease_and_ours_sees_theirs(tmp_path: Path) -> None:
    conf = shared_conf(tmp_path)
    run_plugin(PLUGIN, "ADD", conf, "emu")
    run_plugin(REFERENCE, "ADD", conf, "ref")
    assert run_plugin(REFERENCE, "CHECK", conf, "emu").returncode == 0
    assert run_plugin(PLUGIN, "CHECK", conf, "ref").returncode == 0


def test_legacy_id_only_lease_is_released_by_both_plugins(tmp_path: Path) -> None:
    conf = shared_conf(tmp_path)
    (tmp_path / "net1").mkdir()
    (tmp_path / "net1" / "10.7.0.50").write_bytes(b"old-a\n")
    (tmp_path / "net1" / "10.7.0.51").write_bytes(b"old-b")
    assert run_plugin(PLUGIN, "DEL", conf, "old-a").returncode == 0
    assert run_plugin(REFERENCE, "DEL", conf, "old-b").returncode == 0
    assert leases_in(tmp_path) == {}


REFERENCE_BRIDGE = "/usr/lib/cni/bridge"


@pytest.mark.root
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a network namespace")
@pytest.mark.skipif(not os.access(REFERENCE_BRIDGE, os.X_OK), reason="reference bridge absent")
def test_reference_bridge_delegates_to_emu_host_local_in_a_real_netns(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    subprocess.run([sys.executable, "-m", "cni_plugin.install", str(bin_dir)], check=True,
                   capture_output=True)
    netns, bridge = f"emuhl{os.getpid()}", f"emuhlbr{os.getpid() % 100000}"
    conf = {"cniVersion": "1.0.0", "name": "mixnet", "type": "bridge", "bridge": bridge,
            "isGateway": True,
            "ipam": {"type": "emu-host-local", "subnet": "10.77.0.0/24",
                     "dataDir": str(tmp_path / "ipam"), "routes": [{"dst": "0.0.0.0/0"}]}}
    env = {"CNI_CONTAINERID": "mix1", "CNI_NETNS": f"/var/run/netns/{netns}",
           "CNI_IFNAME": "eth0", "CNI_PATH": f"{bin_dir}:/usr/lib/cni"}
    subprocess.run(["ip", "netns", "add", netns], check=True)
    try:
        add = subprocess.run([REFERENCE_BRIDGE], input=json.dumps(conf).encode(),
                             env={**env, "CNI_COMMAND": "ADD"}, capture_output=True, check=False)
        assert add.returncode == 0, add.stdout
        assert [ip["address"] for ip in json.loads(add.stdout)["ips"]] == ["10.77.0.2/24"]
        assert leases_in(tmp_path / "ipam", "mixnet") == {"10.77.0.2": b"mix1\r\neth0"}
        shown = subprocess.run(["ip", "-n", netns, "-4", "addr", "show", "eth0"],
                               capture_output=True, check=True).stdout.decode()
        assert "inet 10.77.0.2/24" in shown
        delete = subprocess.run([REFERENCE_BRIDGE], input=json.dumps(conf).encode(),
                                env={**env, "CNI_COMMAND": "DEL"}, capture_output=True,
                                check=False)
        assert delete.returncode == 0, delete.stdout
        assert leases_in(tmp_path / "ipam", "mixnet") == {}
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", bridge], check=False, capture_output=True)
