"""emu-bridge and emu-loopback on the linux dataplane, each test in a fresh netns (root only)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from typing import Any

import pytest

from tests.fixtures.netns import (
    delete_link,
    fresh_netns,
    host_link_exists,
    ip_json,
    needs_root,
    unique_name,
)

from .conftest import RecordingIPAM
from .procharness import cni_env, exec_plugin

pytestmark = [needs_root, pytest.mark.root]


def conf(ipam: RecordingIPAM | None, bridge: str, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"cniVersion": "1.0.0", "name": "lxnet", "type": "emu-bridge",
                           "bridge": bridge, "dataplane": "linux", **fields}
    if ipam is not None:
        out["ipam"] = ipam.ipam_conf()
    return out


def addrs(netns: str | None, dev: str) -> list[str]:
    found = ip_json("addr", "show", "dev", dev, netns=netns)
    return [f"{a['local']}/{a['prefixlen']}" for a in found[0]["addr_info"]
            if a.get("scope") != "link"]


def test_add_builds_bridge_veth_addresses_and_routes(recording_ipam: RecordingIPAM,
                                                     netns: str, bridge_name: str,
                                                     cni_bin: str) -> None:
    recording_ipam.set_result({"cniVersion": "1.0.0",
                               "ips": [{"address": "10.61.0.5/24"},
                                       {"address": "fd61::5/64"}],
                               "routes": [{"dst": "0.0.0.0/0"}, {"dst": "::/0"}]})
    c = conf(recording_ipam, bridge_name, isGateway=True, mtu=1400)
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", netns, "eth0", cni_bin), c)
    assert add.status == 0, add.stdout
    body = add.json()
    eth0 = ip_json("-d", "link", "show", "dev", "eth0", netns=netns)[0]
    assert eth0["address"] == body["interfaces"][2]["mac"]
    assert eth0["mtu"] == 1400 and "UP" in eth0["flags"]
    assert addrs(netns, "eth0") == ["10.61.0.5/24", "fd61::5/64"]
    assert sorted(addrs(None, bridge_name)) == ["10.61.0.1/24", "fd61::1/64"]
    host = ip_json("-d", "link", "show", "dev", body["interfaces"][1]["name"])[0]
    assert host["master"] == bridge_name
    routes = {(r["dst"], r.get("gateway")) for r in ip_json("route", "show", netns=netns)}
    assert ("default", "10.61.0.1") in routes
    routes6 = {(r["dst"], r.get("gateway")) for r in ip_json("-6", "route", "show",
                                                              netns=netns)}
    assert ("default", "fd61::1") in routes6

    check = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("CHECK", "c1", netns, "eth0", cni_bin),
                        {**c, "prevResult": body})
    assert (check.status, check.stdout) == (0, "")

    again = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", netns, "eth0", cni_bin),
                        c)
    assert again.json()["msg"] == "container veth name provided (eth0) already exists"

    for _ in range(2):
        delete = exec_plugin(f"{cni_bin}/emu-bridge",
                             cni_env("DEL", "c1", netns, "eth0", cni_bin), c)
        assert (delete.status, delete.stdout) == (0, "")
    assert [link["ifname"] for link in ip_json("link", "show", netns=netns)] == ["lo"]
    assert not host_link_exists(body["interfaces"][1]["name"])
    assert recording_ipam.commands() == ["ADD", "CHECK", "DEL", "DEL"]


def test_failure_after_ipam_removes_the_veth(recording_ipam: RecordingIPAM, netns: str,
                                             bridge_name: str, cni_bin: str) -> None:
    # A route through a gateway that is not on-link cannot be added: ADD must undo.
    recording_ipam.set_result({"cniVersion": "1.0.0", "ips": [{"address": "10.62.0.5/24"}],
                               "routes": [{"dst": "10.99.0.0/16", "gw": "192.0.2.1"}]})
    c = conf(recording_ipam, bridge_name)
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", netns, "eth0", cni_bin), c)
    assert add.status == 1
    assert add.json()["msg"].startswith("failed to add route '{10.99.0.0 ffff0000} via 192.0.2.1")
    assert recording_ipam.commands() == ["ADD", "DEL"]
    assert [link["ifname"] for link in ip_json("link", "show", netns=netns)] == ["lo"]
    ports = [link for link in ip_json("link", "show") if link.get("master") == bridge_name]
    assert ports == []


def test_del_of_a_deleted_netns_succeeds(recording_ipam: RecordingIPAM, bridge_name: str,
                                         cni_bin: str) -> None:
    with fresh_netns() as path:
        c = conf(recording_ipam, bridge_name)
        assert exec_plugin(f"{cni_bin}/emu-bridge",
                           cni_env("ADD", "c1", path, "eth0", cni_bin), c).status == 0
    delete = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("DEL", "c1", path, "eth0", cni_bin),
                         c)
    assert (delete.status, delete.stdout) == (0, "")
    assert recording_ipam.commands() == ["ADD", "DEL"]


def test_loopback_brings_lo_up_with_127_0_0_1_and_ipv6(netns: str, cni_bin: str) -> None:
    c = {"cniVersion": "1.0.0", "name": "lo", "type": "emu-loopback", "dataplane": "linux"}
    add = exec_plugin(f"{cni_bin}/emu-loopback", cni_env("ADD", "c1", netns, "lo", cni_bin), c)
    assert add.status == 0, add.stdout
    assert [i["address"] for i in add.json()["ips"]] == ["127.0.0.1/8", "::1/128"]
    lo = ip_json("addr", "show", "dev", "lo", netns=netns)[0]
    assert "UP" in lo["flags"]
    check = exec_plugin(f"{cni_bin}/emu-loopback", cni_env("CHECK", "c1", netns, "lo", cni_bin),
                        c)
    assert check.status == 0
    delete = exec_plugin(f"{cni_bin}/emu-loopback", cni_env("DEL", "c1", netns, "lo", cni_bin),
                         c)
    assert delete.status == 0
    assert "UP" not in ip_json("link", "show", "dev", "lo", netns=netns)[0]["flags"]


def test_without_net_admin_the_error_says_so(recording_ipam: RecordingIPAM, netns: str,
                                             bridge_name: str, cni_bin: str) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv not installed")
    c = conf(recording_ipam, bridge_name)
    env = cni_env("ADD", "c1", netns, "eth0", cni_bin)
    drop = "-net_admin,-sys_admin"
    proc = subprocess.run(["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}",
                           f"{cni_bin}/emu-bridge"], input=json.dumps(c).encode(),
                          env={**os.environ, **env}, capture_output=True, check=False)
    body = json.loads(proc.stdout)
    assert (proc.returncode, body["code"]) == (1, 999)
    assert "operation not permitted" in body["msg"]
    assert body["details"].startswith("the linux dataplane needs root")


def kernel_has_vlan_filtering() -> bool:
    if os.geteuid() != 0:
        return False
    name = unique_name()
    made = subprocess.run(["ip", "link", "add", name, "type", "bridge", "vlan_filtering", "1"],
                          capture_output=True, check=False).returncode == 0
    delete_link(name)
    return made


@pytest.mark.skipif(not kernel_has_vlan_filtering(), reason="kernel without bridge VLAN filtering")
@pytest.mark.parametrize(("preserve", "vids"), [(False, [10]), (True, [1, 10])])
def test_vlan_tags_the_host_port_and_drops_vlan_1_unless_preserved(
        preserve: bool, vids: list[int], recording_ipam: RecordingIPAM, netns: str,
        bridge_name: str, cni_bin: str) -> None:
    c = conf(recording_ipam, bridge_name, vlan=10, preserveDefaultVlan=preserve)
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", netns, "eth0", cni_bin), c)
    assert add.status == 0, add.stdout
    port = add.json()["interfaces"][1]["name"]
    shown = json.loads(subprocess.run(["bridge", "-j", "vlan", "show", "dev", port],
                                      capture_output=True, text=True, check=True).stdout)
    entries = shown[0]["vlans"]
    assert sorted(v["vlan"] for v in entries) == vids
    tagged = next(v for v in entries if v["vlan"] == 10)
    assert {"PVID", "Egress Untagged"} <= set(tagged.get("flags", []))


def test_vlan_on_a_kernel_without_vlan_filtering_fails_cleanly(
        recording_ipam: RecordingIPAM, netns: str, bridge_name: str, cni_bin: str) -> None:
    if kernel_has_vlan_filtering():
        pytest.skip("this kernel supports bridge VLAN filtering")
    c = conf(recording_ipam, bridge_name, vlan=10)
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", netns, "eth0", cni_bin), c)
    assert add.json()["msg"] == (f'failed to create bridge "{bridge_name}": could not add '
                                 f'"{bridge_name}": operation not supported')
    assert recording_ipam.commands() == []


def nft_bridge_nat() -> str:
    return subprocess.run(["nft", "list", "table", "bridge", "nat"], capture_output=True,
                          text=True, check=False).stdout


@pytest.mark.skipif(shutil.which("nft") is None, reason="nft not installed")
def test_macspoofchk_installs_nft_rules_for_the_port_and_del_removes_them(
        recording_ipam: RecordingIPAM, netns: str, bridge_name: str, cni_bin: str) -> None:
    cid = unique_name("c")
    c = conf(recording_ipam, bridge_name, macspoofchk=True)
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", cid, netns, "eth0", cni_bin), c)
    assert add.status == 0, add.stdout
    port, mac = add.json()["interfaces"][1]["name"], add.json()["interfaces"][2]["mac"]
    table = nft_bridge_nat()
    assert f'iifname "{port}" jump cni-br-iface-{cid}-eth0' in table
    assert f"ether saddr {mac} return" in table
    delete = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("DEL", cid, netns, "eth0", cni_bin),
                         c)
    assert delete.status == 0
    assert f"cni-br-iface-{cid}" not in nft_bridge_nat()
