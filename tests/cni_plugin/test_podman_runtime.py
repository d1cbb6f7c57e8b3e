"""Our plugins as drop-ins under a real container runtime: podman on its CNI backend.

Podman (Debian's 4.x, ``network_backend = "cni"``) starts a busybox container on a
bridge + host-local network, once with emu-bridge/emu-host-local (our bin dir first in
``cni_plugin_dirs``) and once with the reference plugins from /usr/lib/cni, each in a
sandbox of its own (tests/podman_support.py) with the same subnet. Each life cycle is
observed the way a user would see it: the container's interfaces, routes and
resolv.conf, the host end of the veth, the host-local lease, libcni's cache entry;
then after stop and after rm. Our observations must equal the reference's, MACs,
veth names, netns paths and container ids aside.

Podman brings the container's lo up itself (it runs no loopback plugin), so lo being
up is checked here as what the container sees, not as emu-loopback's work.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.netns import REFERENCE_DIR, needs_reference, random_subnet_prefix
from tests.podman_support import (
    PodmanSandbox,
    RuntimeUnavailable,
    decoded_cache_config,
    podman_sandbox,
    unavailable_reason,
)

pytestmark = [pytest.mark.root,
              pytest.mark.skipif(unavailable_reason() is not None,
                                 reason=str(unavailable_reason()))]

VERSIONS = ("0.3.1", "0.4.0", "1.0.0")
NAMESERVER = "10.254.53.53"  # only written into resolv.conf files, never contacted
SEARCH = "emu.example"
CONTAINER = "web"


@dataclass(frozen=True)
class Plugins:
    """Which bridge/host-local pair a network uses, and what its conf says beyond them."""

    name: str
    bridge: str
    ipam: str
    extra: dict[str, Any] = field(default_factory=dict)


REFERENCE = Plugins("reference", "bridge", "host-local")
OURS = Plugins("ours", "emu-bridge", "emu-host-local", {"dataplane": "linux"})
# The plugins as a new user drops them in: no dataplane key (issue 9: the linux
# dataplane must then be chosen because CNI_NETNS is a real network namespace).
OURS_NO_DATAPLANE_KEY = Plugins("ours-no-dataplane-key", "emu-bridge", "emu-host-local")
SUBNET_PREFIX = random_subnet_prefix()


def conflist(plugins: Plugins, version: str, root: Path) -> dict[str, Any]:
    """The same network for every side: only the plugin types (and our extra keys) differ."""
    return {"cniVersion": version, "name": "empnet", "plugins": [{
        "type": plugins.bridge, "bridge": "empbr0", "isGateway": True, "ipMasq": False,
        "dns": {"nameservers": [NAMESERVER], "search": [SEARCH]}, **plugins.extra,
        "ipam": {"type": plugins.ipam, "ranges": [[{"subnet": f"{SUBNET_PREFIX}.0/24"}]],
                 "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(root / "ipam")}}]}


@dataclass
class Observed:
    """What a user sees of one container's network through its life cycle."""

    sandbox_root: str
    network: dict[str, Any]
    container_id: str = ""
    container_links: list[dict[str, Any]] = field(default_factory=list)
    container_routes: list[dict[str, Any]] = field(default_factory=list)
    container_resolv_conf: str = ""
    host_links: list[dict[str, Any]] = field(default_factory=list)
    leases: list[str] = field(default_factory=list)
    lease_text: str = ""
    cache: dict[str, dict[str, Any]] = field(default_factory=dict)
    host_links_after_stop: list[dict[str, Any]] = field(default_factory=list)
    leases_after_stop: list[str] = field(default_factory=list)
    cache_after_rm: dict[str, dict[str, Any]] = field(default_factory=dict)
    var_lib_cni_after_rm: list[str] = field(default_factory=list)


def lease_files(sandbox: PodmanSandbox, network: str) -> list[str]:
    """host-local's reservations: one file per address (its lock and last-reserved
    bookkeeping files aside)."""
    return [name for name in sandbox.files_under(sandbox.path("ipam") / network)
            if name != "lock" and not name.startswith("last_reserved_ip")]


def observe_life_cycle(plugins: Plugins, version: str, cni_bin: str) -> Observed:
    with podman_sandbox(lambda root: conflist(plugins, version, root),
                        [cni_bin, REFERENCE_DIR]) as sandbox:
        seen = Observed(str(sandbox.root), sandbox.conflist)
        seen.container_id = sandbox.start_container(CONTAINER)
        seen.container_links = sandbox.container_ip(CONTAINER, "addr")
        seen.container_routes = sandbox.container_ip(CONTAINER, "-4", "route")
        seen.container_resolv_conf = sandbox.container_exec(CONTAINER, "cat", "/etc/resolv.conf")
        seen.host_links = sandbox.host_links()
        seen.leases = lease_files(sandbox, "empnet")
        if seen.leases:
            seen.lease_text = (sandbox.path("ipam") / "empnet" / seen.leases[0]).read_text()
        seen.cache = sandbox.cache_entries()
        sandbox.stop_container(CONTAINER)
        seen.host_links_after_stop = sandbox.host_links()
        seen.leases_after_stop = lease_files(sandbox, "empnet")
        sandbox.remove_container(CONTAINER)
        seen.cache_after_rm = sandbox.cache_entries()
        seen.var_lib_cni_after_rm = sandbox.files_under(sandbox.path("var-lib") / "cni")
        return seen


class LifeCycles:
    """One life cycle per (plugins, version), run when a test first asks for it and
    shared by the tests of this module (each only reads it)."""

    def __init__(self, cni_bin: str) -> None:
        self.cni_bin = cni_bin
        self.seen: dict[tuple[str, str], Observed] = {}

    def of(self, plugins: Plugins, version: str = "1.0.0") -> Observed:
        key = (plugins.name, version)
        if key not in self.seen:
            try:
                self.seen[key] = observe_life_cycle(plugins, version, self.cni_bin)
            except RuntimeUnavailable as e:
                pytest.skip(str(e))
        return self.seen[key]


@pytest.fixture(scope="module")
def life_cycles(cni_bin: str) -> LifeCycles:
    return LifeCycles(cni_bin)


SIDES = [pytest.param(OURS, id="ours"),
         pytest.param(REFERENCE, id="reference", marks=[needs_reference,
                                                        pytest.mark.reference])]


@pytest.fixture(params=SIDES)
def side(request: pytest.FixtureRequest, life_cycles: LifeCycles) -> Observed:
    return life_cycles.of(request.param)


def link(links: list[dict[str, Any]], name: str) -> dict[str, Any]:
    found = [entry for entry in links if entry["ifname"] == name]
    assert found, f"no {name} among {[entry['ifname'] for entry in links]}"
    return found[0]


def ipv4(link_entry: dict[str, Any]) -> list[str]:
    return [f"{a['local']}/{a['prefixlen']}" for a in link_entry.get("addr_info", [])
            if a["family"] == "inet"]


def cache_entry(seen: Observed) -> dict[str, Any]:
    assert list(seen.cache) == [f"empnet-{seen.container_id}-eth0"]
    return seen.cache[f"empnet-{seen.container_id}-eth0"]


def veths(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in links if entry.get("linkinfo", {}).get("info_kind") == "veth"]


# --- each side on its own ----------------------------------------------------------

def test_container_sees_eth0_with_the_leased_address(side: Observed) -> None:
    eth0 = link(side.container_links, "eth0")
    assert "UP" in eth0["flags"]
    assert ipv4(eth0) == [f"{SUBNET_PREFIX}.2/24"]
    assert side.leases == [f"{SUBNET_PREFIX}.2"]
    assert side.lease_text.split()[0] == side.container_id


def test_container_sees_lo_up_with_the_loopback_address(side: Observed) -> None:
    lo = link(side.container_links, "lo")
    assert "UP" in lo["flags"]
    assert ipv4(lo) == ["127.0.0.1/8"]


def test_container_routes_go_through_the_bridge_gateway(side: Observed) -> None:
    routes = {(r["dst"], r.get("gateway"), r["dev"]) for r in side.container_routes}
    assert routes == {("default", f"{SUBNET_PREFIX}.1", "eth0"),
                      (f"{SUBNET_PREFIX}.0/24", None, "eth0")}


def test_container_resolv_conf_carries_the_result_dns(side: Observed) -> None:
    lines = side.container_resolv_conf.splitlines()
    assert f"nameserver {NAMESERVER}" in lines
    assert f"search {SEARCH}" in lines


def test_host_end_of_the_veth_is_a_port_of_the_bridge(side: Observed) -> None:
    host_veths = veths(side.host_links)
    assert [v.get("master") for v in host_veths] == ["empbr0"]
    names = [i["name"] for i in cache_entry(side)["result"]["interfaces"]]
    assert host_veths[0]["ifname"] in names


def test_stop_releases_the_lease_and_removes_the_veth(side: Observed) -> None:
    assert side.leases_after_stop == []
    assert veths(side.host_links_after_stop) == []
    assert "empbr0" in [entry["ifname"] for entry in side.host_links_after_stop]


def test_rm_leaves_no_cache_entry_and_no_plugin_state(side: Observed) -> None:
    assert side.cache_after_rm == {}
    assert side.var_lib_cni_after_rm == []


def test_cache_entry_keeps_the_network_podman_was_given(side: Observed) -> None:
    entry = cache_entry(side)
    assert entry["kind"] == "cniCacheV1"
    assert entry["containerId"] == side.container_id
    assert decoded_cache_config(entry) == side.network
    assert entry["result"]["cniVersion"] == "1.0.0"


# --- ours against the reference ----------------------------------------------------

def normalised_entry(seen: Observed) -> dict[str, Any]:
    """A cache entry with what legitimately differs per run replaced by placeholders:
    the container id, the MACs, the veth name, the netns path and the sandbox's temp
    dir (config is checked on its own above)."""
    text = json.dumps(cache_entry(seen))
    text = text.replace(seen.container_id, "CID").replace(seen.container_id[:12], "CID12")
    text = text.replace(seen.sandbox_root, "ROOT")
    entry = json.loads(text)
    entry.pop("config")
    result = entry["result"]
    for interface in result.get("interfaces", []):
        interface["mac"] = "MAC"
        if interface["name"].startswith("veth"):
            interface["name"] = "VETH"
        if "sandbox" in interface:
            assert interface["sandbox"].startswith("/run/netns/")
            interface["sandbox"] = "NETNS"
    return entry


def container_view(seen: Observed) -> dict[str, Any]:
    return {"links": {entry["ifname"]: (sorted(entry["flags"]), entry["mtu"], ipv4(entry))
                      for entry in seen.container_links},
            "routes": sorted(json.dumps(route, sort_keys=True)
                             for route in seen.container_routes),
            "resolv.conf": seen.container_resolv_conf}


@needs_reference
@pytest.mark.reference
@pytest.mark.parametrize("version", VERSIONS)
def test_our_cache_entry_equals_the_reference_entry(version: str,
                                                   life_cycles: LifeCycles) -> None:
    ours = life_cycles.of(OURS, version)
    reference = life_cycles.of(REFERENCE, version)
    assert normalised_entry(ours) == normalised_entry(reference)
    assert cache_entry(ours)["result"]["cniVersion"] == version


@needs_reference
@pytest.mark.reference
@pytest.mark.parametrize("version", VERSIONS)
def test_container_sees_the_same_network_with_ours_as_with_the_reference(
        version: str, life_cycles: LifeCycles) -> None:
    ours = life_cycles.of(OURS, version)
    reference = life_cycles.of(REFERENCE, version)
    assert container_view(ours) == container_view(reference)
    assert (ours.leases, ours.leases_after_stop) == (reference.leases, reference.leases_after_stop)
    assert ours.var_lib_cni_after_rm == reference.var_lib_cni_after_rm == []


def test_our_plugins_without_a_dataplane_key_configure_the_real_netns(
        life_cycles: LifeCycles) -> None:
    seen = life_cycles.of(OURS_NO_DATAPLANE_KEY)
    assert ipv4(link(seen.container_links, "eth0")) == [f"{SUBNET_PREFIX}.2/24"]
    assert seen.var_lib_cni_after_rm == []
