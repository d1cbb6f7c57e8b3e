"""Differential: the reference bridge and emu-bridge (linux dataplane) given the same inputs.

Each side runs in its own fresh netns with its own bridge and IPAM dataDir; the
exit status, error code and message, result JSON (MACs, names and paths
normalised) and the interfaces, addresses and routes in the netns must match.
Also mixed chains: emu-bridge over the reference host-local and the reference
bridge over emu-host-local. Every cniVersion is compared; where the installed
reference does not know one (Debian's stops at 1.0.0), it answers at its newest and
its answer is read as a plugin built for that version prints it (reference_versions),
and emu-host-local stands in for the reference host-local under emu-bridge.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.netns import (
    REFERENCE_DIR,
    delete_link,
    fresh_netns,
    host_link_exists,
    ip_json,
    needs_reference,
    needs_root,
    unique_name,
)

from .procharness import Proc, cni_env, exec_plugin
from .reference_versions import ALL_VERSIONS, as_printed_at, reference_version_for

pytestmark = [needs_root, needs_reference, pytest.mark.root, pytest.mark.reference]
MAC = re.compile(r"\b[0-9a-f]{2}(:[0-9a-f]{2}){5}\b")
VETH = re.compile(r"\bveth[0-9a-f]{8}\b")


@dataclass
class Side:
    bridge_plugin: str      # path of the bridge executable
    ipam_type: str          # host-local or emu-host-local
    cni_path: str
    netns: str
    bridge: str
    data_dir: str
    container_id: str  # distinct per side: iptables chains are named after network + id

    def conf(self, version: str, **fields: Any) -> dict[str, Any]:
        """The config at `version`, or at the newest version a reference plugin knows."""
        version = reference_version_for(self.bridge_plugin, version)
        ipam = fields.pop("ipam", {"subnet": "10.71.0.0/24", "routes": [{"dst": "0.0.0.0/0"}]})
        conf: dict[str, Any] = {"cniVersion": version, "name": "refnet",
                                "type": os.path.basename(self.bridge_plugin),
                                "bridge": self.bridge, "dataplane": "linux", **fields}
        ipam_type = self.ipam_type
        if not ipam_type.startswith("emu-") and \
                reference_version_for(f"{REFERENCE_DIR}/{ipam_type}", version) != version:
            ipam_type = f"emu-{ipam_type}"  # under emu-bridge only: ours at every version
        if ipam is not None:
            conf["ipam"] = {"type": ipam_type, "dataDir": self.data_dir, **ipam}
        return conf

    def run(self, command: str, conf: dict[str, Any], netns: str | None = None,
            ifname: str = "eth0", cid: str = "", **extra_env: str) -> Proc:
        env = cni_env(command, cid or self.container_id, self.netns if netns is None else netns,
                      ifname, self.cni_path, **extra_env)
        return exec_plugin(self.bridge_plugin, env, conf)

    def normalise(self, text: str) -> str:
        text = text.replace(self.netns, "NETNS").replace(self.data_dir, "DATADIR")
        text = re.sub(rf"\b{self.bridge}\b", "BRIDGE", text)
        return MAC.sub("MAC", VETH.sub("VETH", text))

    def netns_view(self) -> dict[str, Any]:
        """Links, addresses (without MAC-derived link-local ones) and routes in the netns."""
        links = []
        for link in ip_json("addr", "show", netns=self.netns):
            links.append({
                "ifname": link["ifname"], "flags": sorted(link["flags"]), "mtu": link["mtu"],
                "operstate": link["operstate"], "link_type": link.get("link_type"),
                "addrs": [(a["family"], a["local"], a["prefixlen"], a.get("scope"),
                           a.get("broadcast")) for a in link["addr_info"]
                          if not a["local"].startswith("fe80:")]})
        routes = [{k: r.get(k) for k in ("dst", "gateway", "dev", "protocol", "scope",
                                          "prefsrc", "metric")}
                  for family in ("-4", "-6") for r in ip_json(family, "route", "show",
                                                              netns=self.netns)
                  if not str(r.get("dst", "")).startswith("fe80:")]
        return {"links": links, "routes": routes}

    def bridge_addrs(self) -> list[tuple[str, int]]:
        if not host_link_exists(self.bridge):
            return []
        found = ip_json("addr", "show", "dev", self.bridge)
        return sorted((a["local"], a["prefixlen"]) for a in found[0]["addr_info"]
                      if not a["local"].startswith("fe80:")) if found else []


@contextlib.contextmanager
def make_side(plugin: str, ipam_type: str, cni_path: str, tmp: Path) -> Iterator[Side]:
    bridge = unique_name()
    with fresh_netns() as netns:
        side = Side(plugin, ipam_type, cni_path, netns, bridge, str(tmp / unique_name("ipam")),
                    unique_name("ctr"))
        try:
            yield side
        finally:
            delete_link(bridge)


@pytest.fixture
def sides(cni_bin: str, tmp_path: Path) -> Iterator[tuple[Side, Side]]:
    """(reference bridge + reference host-local, emu-bridge + reference host-local)."""
    path = f"{cni_bin}:{REFERENCE_DIR}"
    with make_side(f"{REFERENCE_DIR}/bridge", "host-local", path, tmp_path) as ref, \
            make_side(f"{cni_bin}/emu-bridge", "host-local", path, tmp_path) as emu:
        yield ref, emu


def assert_same(ref: Side, ref_out: Proc, emu: Side, emu_out: Proc,
                version: str = "1.0.0") -> None:
    """Same status; same error code and message; the same result byte for byte (names
    normalised), or field by field where the reference answered at another version."""
    assert emu_out.status == ref_out.status, (ref_out.stdout, emu_out.stdout)
    if ref_out.status != 0:
        ref_err, emu_err = ref_out.json(), emu_out.json()
        assert emu_err["code"] == ref_err["code"]
        assert emu.normalise(emu_err["msg"]) == ref.normalise(ref_err["msg"])
    elif reference_version_for(ref.bridge_plugin, version) == version or not ref_out.stdout:
        assert emu.normalise(emu_out.stdout) == ref.normalise(ref_out.stdout)
    else:
        theirs = as_printed_at(json.loads(ref.normalise(ref_out.stdout)), version)
        assert json.loads(emu.normalise(emu_out.stdout)) == theirs


def add_both(ref: Side, emu: Side, version: str, **fields: Any) -> tuple[Proc, Proc]:
    ref_out = ref.run("ADD", ref.conf(version, **fields))
    emu_out = emu.run("ADD", emu.conf(version, **fields))
    assert_same(ref, ref_out, emu, emu_out, version)
    return ref_out, emu_out


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_gateway_bridge_add_and_del_match_reference(version: str,
                                                    sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    add_both(ref, emu, version, isGateway=True)
    assert emu.netns_view() == ref.netns_view()
    assert emu.bridge_addrs() == ref.bridge_addrs() == [("10.71.0.1", 24)]
    for _ in range(2):
        ref_del = ref.run("DEL", ref.conf(version, isGateway=True))
        emu_del = emu.run("DEL", emu.conf(version, isGateway=True))
        assert_same(ref, ref_del, emu, emu_del, version)
        assert (emu_del.status, emu_del.stdout) == (0, "")
    assert emu.netns_view() == ref.netns_view()


@pytest.mark.parametrize("fields", [
    {"isDefaultGateway": True, "mtu": 1400, "hairpinMode": True,
     "ipam": {"ranges": [[{"subnet": "10.72.0.0/24"}], [{"subnet": "fd72::/64"}]]}},
    {"isGateway": True, "ipMasq": True, "promiscMode": True,
     "ipam": {"subnet": "10.73.0.0/16", "rangeStart": "10.73.5.10",
              "routes": [{"dst": "10.99.0.0/16"}, {"dst": "0.0.0.0/0", "gw": "10.73.0.1"}]}},
    {"ipam": None},
    {"vlan": 10, "isGateway": True},  # fails alike where the kernel lacks VLAN filtering
], ids=["dual-stack-default-gw-mtu-hairpin", "masq-promisc-routes", "layer2", "vlan"])
def test_configurations_match_reference_and_del_cleans_up(fields: dict[str, Any],
                                                          sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    add_both(ref, emu, "1.0.0", **fields)
    assert emu.netns_view() == ref.netns_view()
    assert emu.bridge_addrs() == ref.bridge_addrs()
    for _ in range(2):  # DEL twice: both succeed, both leave only lo
        ref_del = ref.run("DEL", ref.conf("1.0.0", **fields))
        emu_del = emu.run("DEL", emu.conf("1.0.0", **fields))
        assert_same(ref, ref_del, emu, emu_del)
    assert emu.netns_view() == ref.netns_view()
    nat = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True,
                         check=False).stdout
    assert 'name: \\"refnet\\"' not in nat


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_check_after_add_matches_reference(version: str, sides: tuple[Side, Side]) -> None:
    """Before 0.4.0 both refuse CHECK (code 1); from 0.4.0 on both pass."""
    ref, emu = sides
    ref_add, emu_add = add_both(ref, emu, version, isGateway=True)
    ref_check = ref.run("CHECK", {**ref.conf(version, isGateway=True),
                                  "prevResult": ref_add.json()})
    emu_check = emu.run("CHECK", {**emu.conf(version, isGateway=True),
                                  "prevResult": emu_add.json()})
    assert_same(ref, ref_check, emu, emu_check, version)
    assert emu_check.status == (0 if version >= "0.4.0" else 1)


def test_add_twice_fails_the_same_way(sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    add_both(ref, emu, "1.0.0")
    ref_again = ref.run("ADD", ref.conf("1.0.0"))
    emu_again = emu.run("ADD", emu.conf("1.0.0"))
    assert_same(ref, ref_again, emu, emu_again)
    assert emu_again.status == 1


@pytest.mark.parametrize(("fields", "netns"), [
    ({"vlan": 5000}, None),
    ({"hairpinMode": True, "promiscMode": True}, None),
    ({}, "/var/run/netns/emt-does-not-exist"),
    ({}, "REGULAR_FILE"),
], ids=["bad-vlan", "hairpin-and-promisc", "missing-netns", "netns-not-a-namespace"])
def test_errors_match_reference(fields: dict[str, Any], netns: str | None,
                                sides: tuple[Side, Side], tmp_path: Path) -> None:
    ref, emu = sides
    if netns == "REGULAR_FILE":
        netns = str(tmp_path / "not-a-netns")
        Path(netns).touch()
    ref_out = ref.run("ADD", ref.conf("1.0.0", **fields), netns=netns)
    emu_out = emu.run("ADD", emu.conf("1.0.0", **fields), netns=netns)
    assert ref_out.status == 1
    assert_same(ref, ref_out, emu, emu_out)


def test_del_of_missing_netns_and_unknown_container_succeeds_alike(
        sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    for netns in ("/var/run/netns/emt-does-not-exist", None):
        ref_out = ref.run("DEL", ref.conf("1.0.0"), netns=netns, cid="never-added")
        emu_out = emu.run("DEL", emu.conf("1.0.0"), netns=netns, cid="never-added")
        assert_same(ref, ref_out, emu, emu_out)
        assert (emu_out.status, emu_out.stdout) == (0, "")


def test_reference_bridge_over_emu_host_local(cni_bin: str, tmp_path: Path) -> None:
    if not os.path.exists(f"{cni_bin}/emu-host-local"):
        pytest.skip("emu-host-local is not built yet")
    path = f"{cni_bin}:{REFERENCE_DIR}"
    with make_side(f"{REFERENCE_DIR}/bridge", "host-local", path, tmp_path) as ref, \
            make_side(f"{REFERENCE_DIR}/bridge", "emu-host-local", path, tmp_path) as mixed:
        add_both(ref, mixed, "1.0.0", isGateway=True)
        assert mixed.netns_view() == ref.netns_view()
        assert sorted(os.listdir(Path(mixed.data_dir, "refnet"))) == \
            sorted(os.listdir(Path(ref.data_dir, "refnet")))
        mixed_del = mixed.run("DEL", mixed.conf("1.0.0", isGateway=True))
        assert (mixed_del.status, mixed_del.stdout) == (0, "")
        assert not Path(mixed.data_dir, "refnet", "10.71.0.2").exists()


def test_emu_bridge_over_emu_host_local_matches_reference_pair(cni_bin: str,
                                                              tmp_path: Path) -> None:
    if not os.path.exists(f"{cni_bin}/emu-host-local"):
        pytest.skip("emu-host-local is not built yet")
    path = f"{cni_bin}:{REFERENCE_DIR}"
    with make_side(f"{REFERENCE_DIR}/bridge", "host-local", path, tmp_path) as ref, \
            make_side(f"{cni_bin}/emu-bridge", "emu-host-local", path, tmp_path) as ours:
        dual = {"ranges": [[{"subnet": "10.74.0.0/24"}], [{"subnet": "fd74::/64"}]]}
        add_both(ref, ours, "1.0.0", isDefaultGateway=True, ipam=dual)
        assert ours.netns_view() == ref.netns_view()
        delete = ours.run("DEL", ours.conf("1.0.0", isDefaultGateway=True, ipam=dual))
        assert (delete.status, delete.stdout) == (0, "")
        assert sorted(os.listdir(Path(ours.data_dir, "refnet"))) == \
            ["last_reserved_ip.0", "last_reserved_ip.1", "lock"]


def test_failed_add_same_error_but_only_ours_undoes_the_veth(sides: tuple[Side, Side]) -> None:
    """A deliberate difference: the reference (1.1.1) leaves the veth behind after a
    failure past IPAM; emu-bridge removes it (and releases the lease, as both do)."""
    ref, emu = sides
    clash = {"isDefaultGateway": True}  # IPAM's gateway-less default route + the gateway's
    _, emu_out = add_both(ref, emu, "1.0.0", **clash)
    assert emu_out.status == 1
    assert emu_out.json()["msg"] == ("failed to add route '{0.0.0.0 "
                                     "00000000000000000000ffff00000000} via 10.71.0.1 dev "
                                     "eth0': file exists")
    assert [link["ifname"] for link in ref.netns_view()["links"]] == ["lo", "eth0"]
    assert [link["ifname"] for link in emu.netns_view()["links"]] == ["lo"]
    assert sorted(os.listdir(Path(emu.data_dir, "refnet"))) == ["last_reserved_ip.0", "lock"]


@pytest.mark.parametrize(("cni_args", "ifname"), [
    ("FOO=bar", "eth0"),
    ("FOO", "eth0"),
    ("IgnoreUnknown=maybe", "eth0"),
    ("", "a" * 16),
    ("", "e:0"),
], ids=["unknown-arg", "malformed-arg", "bad-ignore-unknown", "long-ifname", "colon-ifname"])
def test_bad_cni_args_and_ifnames_fail_as_the_reference(cni_args: str, ifname: str,
                                                        sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    ref_out = ref.run("ADD", ref.conf("1.0.0"), ifname=ifname, CNI_ARGS=cni_args)
    emu_out = emu.run("ADD", emu.conf("1.0.0"), ifname=ifname, CNI_ARGS=cni_args)
    assert ref_out.status == 1
    assert_same(ref, ref_out, emu, emu_out)


@pytest.mark.parametrize("damage", ["delete-eth0", "flush-addresses", "bridge-promisc"])
def test_check_of_a_damaged_attachment_fails_alike(damage: str,
                                                   sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    ref_add, emu_add = add_both(ref, emu, "1.0.0", isGateway=True)
    for side in (ref, emu):
        if damage == "delete-eth0":
            subprocess.run(["ip", "netns", "exec", os.path.basename(side.netns), "ip", "link",
                            "del", "eth0"], check=True)
        elif damage == "flush-addresses":
            subprocess.run(["ip", "netns", "exec", os.path.basename(side.netns), "ip", "addr",
                            "flush", "dev", "eth0", "scope", "global"], check=True)
        else:
            subprocess.run(["ip", "link", "set", side.bridge, "promisc", "on"], check=True)
    ref_check = ref.run("CHECK", {**ref.conf("1.0.0", isGateway=True),
                                  "prevResult": ref_add.json()})
    emu_check = emu.run("CHECK", {**emu.conf("1.0.0", isGateway=True),
                                  "prevResult": emu_add.json()})
    assert ref_check.status == 1
    assert_same(ref, ref_check, emu, emu_check)


def nat_rules_of(side: Side) -> list[str]:
    """iptables NAT rules that mention this side's container id, with names normalised."""
    from cni_plugin.bridge_conf import masquerade_chain

    chain = masquerade_chain("refnet", side.container_id)
    rules = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    return sorted(r.replace(chain, "CHAIN").replace(side.container_id, "CID")
                  for r in rules if chain in r)


def test_ip_masq_sets_the_same_iptables_rules_and_del_removes_them(
        sides: tuple[Side, Side]) -> None:
    ref, emu = sides
    add_both(ref, emu, "1.0.0", isGateway=True, ipMasq=True)
    assert nat_rules_of(emu) == nat_rules_of(ref)
    assert len(nat_rules_of(emu)) == 4  # chain, ACCEPT own subnet, MASQUERADE, POSTROUTING jump
    for side in (ref, emu):
        assert side.run("DEL", side.conf("1.0.0", isGateway=True, ipMasq=True)).status == 0
        assert nat_rules_of(side) == []
