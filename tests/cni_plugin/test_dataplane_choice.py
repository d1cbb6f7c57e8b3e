"""Without a "dataplane" key the plugins pick the dataplane that fits where they run: the
linux one for a real network namespace the process may enter, the emulated one for any
other path. Exec'd as a runtime execs them; the netns tests need root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from cni_plugin.dataplane.choice import may_enter_namespaces, netns_kind
from cni_plugin.dataplane.emulated import EmulatedDataplane
from tests.fixtures.netns import fresh_netns, ip_json, needs_root

from .procharness import Proc, cni_env, exec_plugin

# containerd's own loopback network, with the emulated state kept under the test's tmp dir.
CONTAINERD_LOOPBACK = {"cniVersion": "0.3.1", "name": "cni-loopback", "type": "emu-loopback"}


def loopback_conf(dp_dir: Path, **fields: Any) -> dict[str, Any]:
    return {**CONTAINERD_LOOPBACK, "dataplaneDir": str(dp_dir), **fields}


def lo_flags(netns: str) -> list[str]:
    """`ip -n NAME link show lo`: what the kernel says of the sandbox's loopback."""
    name = os.path.basename(netns)
    out = subprocess.run(["ip", "-n", name, "-j", "link", "show", "lo"], capture_output=True,
                         text=True, check=True).stdout
    flags: list[str] = json.loads(out)[0]["flags"]
    return flags


def loopback(command: str, netns: str, conf: dict[str, Any], cni_bin: str,
             container_id: str = "pod1", **env: str) -> Proc:
    return exec_plugin(f"{cni_bin}/emu-loopback",
                       cni_env(command, container_id, netns, "lo", cni_bin, **env), conf)


def test_a_plain_file_is_a_namespace_of_the_emulated_dataplane(tmp_path: Path) -> None:
    plain = tmp_path / "netns"
    plain.touch()
    assert netns_kind(str(plain)) == "file"
    assert netns_kind(str(tmp_path / "missing")) == ""
    assert netns_kind("") == ""
    assert netns_kind("/proc/self/ns/net") == "nsfs"
    assert netns_kind("/proc/self/ns/mnt") == "nsfs"


def test_may_enter_namespaces_follows_cap_sys_admin() -> None:
    status = Path("/proc/self/status").read_text()
    cap_eff = next(int(line.split()[1], 16) for line in status.splitlines()
                   if line.startswith("CapEff:"))
    assert may_enter_namespaces() == bool(cap_eff & (1 << 21))


def test_hand_run_example_with_a_plain_file_is_recorded_in_the_emulated_state(
        tmp_path: Path, cni_bin: str) -> None:
    """The README's example (state and leases under tmp_path), whoever runs it."""
    plain = tmp_path / "netns-demo"
    plain.touch()
    conf = {"cniVersion": "1.0.0", "name": "demo", "type": "emu-bridge", "bridge": "cni0",
            "isGateway": True, "dataplaneDir": str(tmp_path / "dp"),
            "ipam": {"type": "emu-host-local", "subnet": "10.22.0.0/24",
                     "dataDir": str(tmp_path / "ipam")}}
    add = exec_plugin(f"{cni_bin}/emu-bridge", cni_env("ADD", "c1", str(plain), "eth0", cni_bin),
                      conf)
    assert add.status == 0, add.stdout
    eth0 = EmulatedDataplane(str(tmp_path / "dp")).get_link(str(plain), "eth0")
    assert eth0 is not None and eth0.up and eth0.addrs == ["10.22.0.2/24"]
    lo = loopback("ADD", str(plain), loopback_conf(tmp_path / "dp"), cni_bin)
    assert lo.status == 0, lo.stdout
    lo_link = EmulatedDataplane(str(tmp_path / "dp")).get_link(str(plain), "lo")
    assert lo_link is not None and lo_link.up


@needs_root
@pytest.mark.root
def test_loopback_without_dataplane_key_brings_lo_up_in_a_real_netns(tmp_path: Path,
                                                                    cni_bin: str) -> None:
    conf = loopback_conf(tmp_path / "dp")
    with fresh_netns() as netns:
        assert "UP" not in lo_flags(netns)
        add = loopback("ADD", netns, conf, cni_bin)
        assert add.status == 0, add.stdout
        assert "UP" in lo_flags(netns)
        assert loopback("CHECK", netns, {**conf, "cniVersion": "1.0.0"}, cni_bin).status == 0
    assert not (tmp_path / "dp").exists()  # nothing emulated, nothing recorded


@needs_root
@pytest.mark.root
def test_an_explicit_dataplane_key_wins_over_a_real_netns(tmp_path: Path, cni_bin: str) -> None:
    conf = loopback_conf(tmp_path / "dp", dataplane="emulated")
    with fresh_netns() as netns:
        assert loopback("ADD", netns, conf, cni_bin).status == 0
        assert "UP" not in lo_flags(netns)
        lo = EmulatedDataplane(str(tmp_path / "dp")).get_link(netns, "lo")
        assert lo is not None and lo.up


@needs_root
@pytest.mark.root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv not installed")
def test_without_cap_sys_admin_a_real_netns_gets_the_emulated_dataplane(tmp_path: Path,
                                                                       cni_bin: str) -> None:
    conf = loopback_conf(tmp_path / "dp")
    with fresh_netns() as netns:
        env = {**os.environ, **cni_env("ADD", "pod1", netns, "lo", cni_bin)}
        proc = subprocess.run(["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin",
                               f"{cni_bin}/emu-loopback"], input=json.dumps(conf).encode(),
                              env=env, capture_output=True, check=False)
        assert proc.returncode == 0, proc.stdout
        assert "UP" not in lo_flags(netns)
        lo = EmulatedDataplane(str(tmp_path / "dp")).get_link(netns, "lo")
        assert lo is not None and lo.up


def host_local_leases(ipam_dir: Path, network: str) -> list[str]:
    directory = ipam_dir / network
    return sorted(p.name for p in directory.glob("10.*")) if directory.exists() else []


def bridge_conf(tmp_path: Path, bridge: str, **fields: Any) -> dict[str, Any]:
    return {"cniVersion": "1.0.0", "name": "ctrdnet", "type": "emu-bridge", "bridge": bridge,
            "isGateway": True, "ipMasq": True, "dataplaneDir": str(tmp_path / "dp"),
            "ipam": {"type": "emu-host-local", "subnet": "10.66.0.0/24",
                     "dataDir": str(tmp_path / "ipam")}, **fields}


def masquerade_rules_of(container_id: str) -> list[str]:
    from cni_plugin.bridge_conf import masquerade_chain

    chain = masquerade_chain("ctrdnet", container_id)
    rules = subprocess.run(["iptables", "-t", "nat", "-S"], capture_output=True, text=True,
                           check=False).stdout.splitlines()
    return [r for r in rules if chain in r]


@needs_root
@pytest.mark.root
@pytest.mark.parametrize("first_del_with_netns", [True, False],
                         ids=["containerd", "netns-lost-before-del"])
def test_containerd_teardown_on_the_linux_dataplane_leaves_nothing(
        first_del_with_netns: bool, tmp_path: Path, cni_bin: str) -> None:
    """DEL with CNI_NETNS, the netns deleted, DEL again with CNI_NETNS="" (no key set);
    or only the DEL without CNI_NETNS: the lease and the masquerade rules go all the same."""
    from tests.fixtures.netns import delete_link, unique_name

    bridge, cid = unique_name(), unique_name("ctr")
    nets = [("emu-loopback", loopback_conf(tmp_path / "dp"), "lo"),
            ("emu-bridge", bridge_conf(tmp_path, bridge), "eth0")]
    try:
        with fresh_netns() as netns:
            for plugin, conf, ifname in nets:
                add = exec_plugin(f"{cni_bin}/{plugin}",
                                  cni_env("ADD", cid, netns, ifname, cni_bin), conf)
                assert add.status == 0, add.stdout
            assert "UP" in lo_flags(netns)
            eth0 = ip_json("addr", "show", "dev", "eth0", netns=netns)[0]
            assert "10.66.0.2" in [a["local"] for a in eth0["addr_info"]]
            assert masquerade_rules_of(cid) != []
            for plugin, conf, ifname in reversed(nets if first_del_with_netns else []):
                delete = exec_plugin(f"{cni_bin}/{plugin}",
                                     cni_env("DEL", cid, netns, ifname, cni_bin), conf)
                assert (delete.status, delete.stdout) == (0, "")
        for plugin, conf, ifname in reversed(nets):
            again = exec_plugin(f"{cni_bin}/{plugin}", cni_env("DEL", cid, "", ifname, cni_bin),
                                conf)
            assert (again.status, again.stdout) == (0, "")
        assert host_local_leases(tmp_path / "ipam", "ctrdnet") == []
        assert masquerade_rules_of(cid) == []
        assert ip_json("link", "show", "master", bridge) == []
        assert not (tmp_path / "dp").exists()
    finally:
        delete_link(bridge)


@needs_root
@pytest.mark.root
def test_second_del_without_netns_after_the_netns_is_gone_succeeds_on_linux(
        tmp_path: Path, cni_bin: str) -> None:
    conf = loopback_conf(tmp_path / "dp")
    with fresh_netns() as netns:
        assert loopback("ADD", netns, conf, cni_bin).status == 0
    for path in (netns, ""):
        delete = loopback("DEL", path, conf, cni_bin)
        assert (delete.status, delete.stdout, delete.stderr) == (0, "", "")
    assert not (tmp_path / "dp").exists()


@needs_root
@pytest.mark.root
@pytest.mark.skipif(shutil.which("setpriv") is None, reason="setpriv not installed")
@pytest.mark.parametrize(("command", "version"), [("DEL", "0.3.1"), ("GC", "1.1.0")])
def test_without_cap_sys_admin_del_and_gc_of_nothing_create_no_state(
        command: str, version: str, tmp_path: Path, cni_bin: str) -> None:
    """An unprivileged runtime's DEL without CNI_NETNS, or GC, with nothing recorded: the
    emulated dataplane answers without making its state directory (the default one,
    /var/lib/cni/emu-dataplane, is not writable for such a process)."""
    conf = loopback_conf(tmp_path / "dp", cniVersion=version)
    env = {**os.environ, **cni_env(command, "pod1", "", "lo", cni_bin)}
    proc = subprocess.run(["setpriv", "--bounding-set=-sys_admin", "--inh-caps=-sys_admin",
                           f"{cni_bin}/emu-loopback"], input=json.dumps(conf).encode(),
                          env=env, capture_output=True, check=False)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert not (tmp_path / "dp").exists()
