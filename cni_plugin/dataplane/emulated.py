"""A dataplane recorded in a state directory: no root, CNI_NETNS may be any existing path.

Links, MACs, addresses and routes of every namespace make one JSON document, kept
as small files (cni_plugin.dataplane.shards: one per sandbox namespace, with the host
ends of its veths) changed under flock and replaced atomically, so CHECK, DEL and a
simulator's connectivity queries see exactly what ADD did, and a command reads and
writes only the files of the namespaces it names. The host namespace is the key "".

Every record an ADD writes (a sandbox link and its veth peer, a masquerade chain, a
spoof check) names the attachment that made it (network, container id), so DEL finds
it when CNI_NETNS is empty or the namespace is gone (containerd's second DEL), and GC
when the runtime no longer lists the attachment: the state does not grow with pods
that no longer exist.

Each change is a step, a function of the state document, with its scope (the files it
reads). Alone, a step is one transaction. Inside ``with dataplane.batch():`` steps
are tried on a view when asked for (so each fails where, and as, it would alone) and
written again on the fresh files in ONE transaction when the block ends: a bridge ADD
pays one fsynced write per file per block (the veth before IPAM, then what IPAM's answer
configures) instead of one per step; a plugin killed inside a block has
written nothing of it, one killed while the block's files are written leaves each file
old or new (a veth's two ends live in one file; a masquerade chain in another may be
left behind, for DEL and GC, which tolerate missing pieces, to clear); an ADD answered
success has written everything.
"""

from __future__ import annotations

from cni_plugin import posix_shim as posix_shim
from cni_plugin.dataplane.base import (
    Dataplane,
    Link,
    LinkExists,
    NetnsNotFound,
    RouteEntry,
    StepGroup,
    conflict_error,
    ensure_addr_conflicts,
    random_mac,
    random_veth_name,
)
from cni_plugin.dataplane.emulated_batch import Batch
from cni_plugin.dataplane.emulated_records import (
    HOST,
    drop_link,
    drop_namespace,
    idle_loopback,
    namespace_of,
    netns_key,
    to_link,
)
from cni_plugin.dataplane.shards import ShardedState
from cni_spec import ipnet
from cni_spec.errors import ERR_TRY_AGAIN_LATER, CNIError, internal
from cni_spec.types import IPConfig, Route

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from cni_plugin.dataplane.shards import Scope

    T = TypeVar("T")


def ns_scope(netns: str | None, name: str = "") -> Scope:
    """The files holding `netns` (the host's link `name` when netns is None)."""
    return [("link", name)] if netns is None else [("ns", netns_key(netns))]


class EmulatedDataplane(Dataplane):
    def __init__(self, state_dir: str, network: str = "", container_id: str = "") -> None:
        """network, container_id: the attachment this command acts for; its records say so."""
        self.state = ShardedState(state_dir)
        self.network = network
        self.container_id = container_id
        self._batch: Batch | None = None

    def _owns(self, record: dict[str, Any], container_id: str | None = None) -> bool:
        """Whether a record was made by this network's attachment `container_id` (by this
        command's container id when None; by any of the network's when "")."""
        wanted = self.container_id if container_id is None else container_id
        return record.get("network") == self.network and \
            (wanted == "" or record.get("container_id") == wanted)

    def batch(self) -> StepGroup:
        return Batch(self)

    def _change(self, step: Callable[[dict[str, Any]], T], scope: Scope) -> T:
        """Apply one step: its own transaction, or its part of the open batch."""
        batch = self._batch
        if batch is None:
            with self.state.transaction(scope) as state:
                return step(state)
        return batch.apply(step, scope)

    # --- queries -----------------------------------------------------------------------
    def require_netns(self, netns: str) -> None:
        if not posix_shim.exists(netns):
            raise NetnsNotFound(netns)

    def get_link(self, netns: str | None, name: str) -> Link | None:
        doc = self.state.snapshot(ns_scope(netns, name))
        space = doc.get("namespaces", {}).get(netns_key(netns), {})
        found = space.get("links", {}).get(name)
        if found:
            return to_link(found)
        if netns is not None and name == "lo" and posix_shim.exists(netns):
            return idle_loopback()  # every namespace has one; it is recorded once up
        return None

    def links(self, netns: str | None) -> list[Link]:
        # the host's links: every shard (its veth ends are beside their sandbox ends)
        doc = self.state.snapshot(None if netns is None else ns_scope(netns))
        space = doc.get("namespaces", {}).get(netns_key(netns), {})
        return [to_link(d) for d in space.get("links", {}).values()]

    def routes(self, netns: str | None) -> list[RouteEntry]:
        """Explicit routes plus the connected route of every address on an up link."""
        doc = self.state.snapshot(None if netns is None else ns_scope(netns))
        space = doc.get("namespaces", {}).get(netns_key(netns), {})
        out: list[RouteEntry] = []
        for link in space.get("links", {}).values():
            if not link["up"]:
                continue
            for cidr in link["addrs"]:
                if not ipnet.is_link_local_or_loopback(cidr):
                    out.append(RouteEntry(dst=ipnet.network_of(cidr), dev=link["name"]))
        out.extend(RouteEntry(**r) for r in space.get("routes", []))
        return out

    def namespaces(self) -> list[str]:
        return sorted(self.state.snapshot().get("namespaces", {}))

    def attachments(self) -> list[dict[str, Any]]:
        """Every sandbox interface plugged into a bridge: netns, ifname, mac, addrs, bridge
        (what a simulator needs to decide reachability: same bridge, same L2 segment)."""
        spaces = self.state.snapshot().get("namespaces", {})
        host = spaces.get(HOST, {}).get("links", {})
        out = []
        for netns, space in spaces.items():
            if netns == HOST:
                continue
            for link in space.get("links", {}).values():
                peer = host.get(link["peer_name"]) if link["kind"] == "veth" else None
                if peer is not None and peer["master"]:
                    out.append({"netns": netns, "ifname": link["name"], "mac": link["mac"],
                                "up": link["up"], "addrs": list(link["addrs"]),
                                "bridge": peer["master"]})
        return out

    def holds_records(self) -> bool:
        """Whether the state records anything of this attachment (of any of the network's
        attachments when the container id is "")."""
        state = self.state.read_unlocked()  # no lock, nothing created: files replaced whole
        for key, space in state.get("namespaces", {}).items():
            if key != HOST and any(self._owns(link) for link in space["links"].values()):
                return True
        return any(self._owns(entry) for kind in ("masquerade", "macspoofchk")
                   for entry in state.get(kind, {}).values())

    def _has_link(self, ifname: str) -> bool:
        """Whether this attachment has a link named `ifname` anywhere (lock-free read)."""
        spaces = self.state.read_unlocked().get("namespaces", {})
        return any(key != HOST and self._owns(space["links"].get(ifname) or {})
                   for key, space in spaces.items())

    def forget_attachment(self, ifname: str) -> None:
        if not self._has_link(ifname):
            return  # nothing to write (and no state directory to create)
        with self.state.transaction() as state:
            for key, space in list(state.get("namespaces", {}).items()):
                link = space["links"].get(ifname)
                if key == HOST or link is None or not self._owns(link):
                    continue
                if posix_shim.exists(key):
                    drop_link(state, key, ifname)
                else:
                    drop_namespace(state, key)

    def collect_garbage(self, valid: list[tuple[str, str]]) -> None:
        if not self.state.exists():
            return  # nothing recorded (and no state directory to create)
        attachments = set(valid)
        container_ids = {container_id for container_id, _ in valid}
        with self.state.transaction() as state:
            for key, space in list(state.get("namespaces", {}).items()):
                if key == HOST:
                    continue
                if not posix_shim.exists(key):
                    drop_namespace(state, key)
                    continue
                for name, link in list(space["links"].items()):
                    if self._owns(link, "") and (link["container_id"], link.get(
                            "attachment") or name) not in attachments:  # lo: CNI_IFNAME
                        drop_link(state, key, name)
            chains = state.get("masquerade", {})
            for chain, entry in list(chains.items()):
                if self._owns(entry, "") and entry["container_id"] not in container_ids:
                    del chains[chain]
            checks = state.get("macspoofchk", {})
            for ref_id, entry in list(checks.items()):
                if self._owns(entry, "") and \
                        (entry["container_id"], entry["ifname"]) not in attachments:
                    del checks[ref_id]

    def _host_link_taken(self, host: dict[str, Any], name: str) -> bool:
        return name in host or self.state.host_link_taken(name)

    # --- host side ---------------------------------------------------------------------
    def ensure_bridge(self, name: str, mtu: int, promisc: bool, vlan_filtering: bool) -> Link:
        with self.state.transaction(ns_scope(None, name)) as state:
            links = namespace_of(state, None)["links"]
            existing = links.get(name)
            if existing is not None and existing["kind"] != "bridge":
                raise internal(f'failed to create bridge "{name}": '
                               f'"{name}" already exists but is not a bridge')
            if existing is None:
                existing = Link(name=name, kind="bridge", mac=random_mac(),
                                       mtu=mtu or 1500, vlan=1 if vlan_filtering else 0).to_dict()
                links[name] = existing
            if promisc:
                existing["promisc"] = True
            existing["up"] = True
            return to_link(existing)

    def set_up(self, netns: str | None, name: str) -> None:
        def step(state: dict[str, Any]) -> None:
            link = namespace_of(state, netns)["links"].get(name)
            if link is None:
                raise internal(f"failed to retrieve link: Link not found: {name}")
            link["up"] = True

        self._change(step, ns_scope(netns, name))

    def ensure_addr(self, name: str, cidr: str, force: bool) -> None:
        def step(state: dict[str, Any]) -> None:
            link = namespace_of(state, None)["links"].get(name)
            if link is None:
                raise internal(f'could not lookup "{name}": Link not found')
            conflicts = ensure_addr_conflicts(link["addrs"], cidr)
            if conflicts and not force:
                raise conflict_error(name, cidr)
            link["addrs"] = [a for a in link["addrs"] if a not in conflicts]
            if cidr not in link["addrs"]:
                link["addrs"].append(cidr)

        self._change(step, ns_scope(None, name))

    def enable_forwarding(self, ipv6: bool) -> None:
        def step(state: dict[str, Any]) -> None:
            state.setdefault("forwarding", {})["ipv6" if ipv6 else "ipv4"] = True

        self._change(step, [])

    def setup_masquerade(self, cidr: str, chain: str, comment: str) -> None:
        def step(state: dict[str, Any]) -> None:
            entry = state.setdefault("masquerade", {}).setdefault(
                chain, {"comment": comment, "sources": [], "network": self.network,
                        "container_id": self.container_id})
            if cidr not in entry["sources"]:
                entry["sources"].append(cidr)

        self._change(step, [("masq", chain)])

    def teardown_masquerade(self, chain: str) -> None:
        with self.state.transaction([("masq", chain)]) as state:
            state.get("masquerade", {}).pop(chain, None)

    def setup_macspoofchk(self, host_iface: str, mac: str, ref_id: str) -> None:
        def step(state: dict[str, Any]) -> None:
            # its peer: the ifname
            host_end = namespace_of(state, None)["links"].get(host_iface, {})
            state.setdefault("macspoofchk", {})[ref_id] = {
                "iface": host_iface, "mac": mac, "network": self.network,
                "container_id": self.container_id, "ifname": host_end.get("peer_name", "")}

        self._change(step, [("link", host_iface), ("spoof", ref_id)])

    def teardown_macspoofchk(self, ref_id: str) -> None:
        with self.state.transaction([("spoof", ref_id)]) as state:
            state.get("macspoofchk", {}).pop(ref_id, None)

    def delete_host_link(self, name: str) -> None:
        with self.state.transaction(ns_scope(None, name)) as state:
            link = namespace_of(state, None)["links"].get(name)
            if link is None:
                return
            if link["kind"] == "veth" and link["peer_netns"] in state["namespaces"]:
                drop_link(state, link["peer_netns"], link["peer_name"])
            namespace_of(state, None)["links"].pop(name, None)

    # --- sandbox side ------------------------------------------------------------------
    def add_veth(self, netns: str, ifname: str, mtu: int, mac: str, bridge: str,
                 hairpin: bool, vlan: int,
                 preserve_default_vlan: bool = False) -> tuple[Link, Link]:
        self.require_netns(netns)
        # Drawn once: a step written again (batch) must write what it returned.
        container_mac, host_mac = mac or random_mac(), random_mac()
        drawn: list[str] = []

        def step(state: dict[str, Any]) -> tuple[Link, Link]:
            inside = namespace_of(state, netns)["links"]
            host = namespace_of(state, None)["links"]
            if ifname in inside:
                raise LinkExists(ifname)
            if bridge not in host:
                raise internal(f'could not lookup "{bridge}": Link not found')
            if drawn:
                host_name = drawn[0]
                if self._host_link_taken(host, host_name):  # a concurrent ADD drew it too
                    raise CNIError(ERR_TRY_AGAIN_LATER,
                                   f'failed to create veth: "{host_name}" already exists')
            else:
                host_name = random_veth_name()
                while self._host_link_taken(host, host_name):
                    host_name = random_veth_name()
                drawn.append(host_name)
            container = Link(name=ifname, kind="veth", mac=container_mac, mtu=mtu or 1500,
                             peer_netns=HOST, peer_name=host_name, network=self.network,
                             container_id=self.container_id)
            host_end = Link(name=host_name, kind="veth", mac=host_mac, mtu=mtu or 1500,
                            up=True, master=bridge, hairpin=hairpin, vlan=vlan,
                            peer_netns=netns_key(netns), peer_name=ifname, network=self.network,
                            container_id=self.container_id)
            inside[ifname] = container.to_dict()
            host[host_name] = host_end.to_dict()
            return host_end, container

        return self._change(step, ns_scope(netns))

    def configure_iface(self, netns: str, ifname: str, ips: list[IPConfig],
                        routes: list[Route], enable_dad: bool) -> None:
        self.require_netns(netns)

        def step(state: dict[str, Any]) -> None:
            space = namespace_of(state, netns)
            link = space["links"].get(ifname)
            if link is None:
                raise internal(f'failed to lookup "{ifname}": Link not found')
            v4gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "4"), "")
            v6gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "6"), "")
            for ip in ips:
                if ip.address in link["addrs"]:
                    raise internal(f'failed to add IP addr {ip.address} to "{ifname}": '
                                   "file exists")
                link["addrs"].append(ip.address)
            link["up"] = True
            for r in routes:
                gw = r.gw or (v4gw if ":" not in r.dst else v6gw)
                entry = {"dst": r.dst, "gw": gw, "dev": ifname}
                if entry in space["routes"]:
                    raise internal(f"failed to add route '{r.dst} via {gw or '<nil>'} dev "
                                   f"{ifname}': file exists")
                space["routes"].append(entry)

        self._change(step, ns_scope(netns))

    def delete_link(self, netns: str, ifname: str) -> list[str] | None:
        if not posix_shim.exists(netns):
            self._forget_netns(netns)
            raise NetnsNotFound(netns)
        with self.state.transaction(ns_scope(netns)) as state:
            link = drop_link(state, netns_key(netns), ifname)
            if link is None:
                return None
            return [a for a in link["addrs"] if not ipnet.is_link_local_or_loopback(a)]

    def loopback_up(self, netns: str, ifname: str = "lo") -> list[str]:
        self.require_netns(netns)
        with self.state.transaction(ns_scope(netns)) as state:
            links = namespace_of(state, netns)["links"]
            lo = links.setdefault("lo", idle_loopback().to_dict())
            lo.update(up=True, network=self.network, container_id=self.container_id,
                      attachment=ifname)
            return list(lo["addrs"])

    def _forget_netns(self, netns: str) -> None:
        with self.state.transaction(ns_scope(netns)) as state:
            drop_namespace(state, netns_key(netns))

    def loopback_down(self, netns: str) -> None:
        """A loopback that is down is what every namespace has: its record goes."""
        if not posix_shim.exists(netns):
            self._forget_netns(netns)
            raise NetnsNotFound(netns)
        with self.state.transaction(ns_scope(netns)) as state:
            drop_link(state, netns_key(netns), "lo")
