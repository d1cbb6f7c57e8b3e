"""The real dataplane: a Linux bridge, a veth pair into the sandbox netns, addresses, routes.

All of it is rtnetlink spoken by the plugin itself (netlink); no `ip`, `nsenter` or
`sysctl` runs:

- the host side (the bridge, our end of the veth, the bridge's address) over our own
  socket, the host's sysctls written under /proc/sys;
- the veth pair made from our side, its sandbox end placed there by the namespace's fd;
- the sandbox's links and addresses read over our socket too, naming the sandbox by
  the id our namespace knows it by;
- every change inside the sandbox (addresses, routes, link state) and its sysctls
  through a forked child that entered it (netns_agent), started as soon as the sandbox
  is known, so that it is ready when needed.

No thread of ours ever switches network namespace. Masquerading and the MAC spoof
check use iptables/nft as the reference does (linux_firewall).
"""

from __future__ import annotations

import atexit
import posix
import time

from cni_plugin.dataplane import netlink, netlink_wire
from cni_plugin.dataplane.base import (
    Dataplane,
    Link,
    LinkExists,
    NetnsNotFound,
    RouteEntry,
    conflict_error,
    ensure_addr_conflicts,
    random_veth_name,
)
from cni_plugin.dataplane.linux_errors import fs_magic, go_ipnet, refused
from cni_plugin.dataplane.netlink_wire import NetlinkError
from cni_plugin.dataplane.netns_agent import NetnsAgent, ensure_sysctl, write_sysctl_best_effort
from cni_spec.errors import internal
from cni_spec.types import IPConfig, Route

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import ModuleType

ENODEV, EEXIST = 19, 17


class LinuxDataplane(Dataplane):
    def __init__(self) -> None:
        self._host: netlink_wire.Socket | None = None
        self._agents: dict[str, NetnsAgent] = {}
        self._nsids: dict[str, int] = {}
        self._read_across = True  # cleared once the kernel shows it cannot
        atexit.register(self.close)

    def close(self) -> None:
        """Stop the sandbox helpers and close our socket."""
        for agent in self._agents.values():
            agent.close()
        self._agents.clear()
        if self._host is not None:
            self._host.close()
            self._host = None

    def _host_sock(self) -> netlink_wire.Socket:
        """A netlink socket in the plugin's own namespace (the host's)."""
        if self._host is None:
            self._host = netlink_wire.Socket()
        return self._host

    def _agent(self, netns: str) -> NetnsAgent:
        """The helper in the sandbox, started now if it is not running (not waited for)."""
        agent = self._agents.get(netns)
        if agent is None:
            agent = self._agents[netns] = NetnsAgent(netns)
        return agent

    def _in_sandbox(self, netns: str) -> netlink_wire.Socket:
        """A netlink socket inside the sandbox: every change there goes through it."""
        try:
            return self._agent(netns).netlink
        except OSError as e:
            self._agents.pop(netns).close()
            raise refused(f'failed to Set netns "{netns}"', e) from e

    def _reader(self, netns: str | None) -> tuple[netlink_wire.Socket, int]:
        """Where a namespace's links and addresses are read: our own socket naming the
        sandbox by its id when it has one (it does once our veth spans the two) and the
        kernel reads across, else the helper's socket inside. (socket, nsid or -1)"""
        host = self._host_sock()
        if netns is None:
            return host, -1
        nsid = self._nsids.get(netns, -1)
        if nsid < 0 and self._read_across and host.strict:
            fd = posix.open(netns, posix.O_RDONLY | posix.O_CLOEXEC)
            try:
                nsid = self._nsids[netns] = netlink.netns_id(host, fd)
            except NetlinkError:
                nsid = -1
            finally:
                posix.close(fd)
        if nsid >= 0 and self._read_across:
            return host, nsid
        return self._in_sandbox(netns), -1

    def require_netns(self, netns: str) -> None:
        """The path must be a network namespace (an nsfs or proc file), as the reference's
        ns.GetNS requires."""
        try:
            st = posix.stat(netns)
        except FileNotFoundError:
            raise NetnsNotFound(netns) from None
        except OSError as e:
            raise internal(f'failed to open netns "{netns}": failed to Statfs "{netns}": '
                           f"{e.strerror.lower() if e.strerror else e}") from e
        if st.st_dev != posix.stat(f"/proc/{posix.getpid()}/ns/net").st_dev:
            raise internal(f'failed to open netns "{netns}": unknown FS magic on "{netns}": '
                           f"{fs_magic(netns):x}")

    def _to_link(self, sock: netlink_wire.Socket, info: netlink_wire.LinkInfo, addrs: list[str],
                 nsid: int = -1, names: dict[int, str] | None = None) -> Link:
        master = ""
        if info.master_index:
            master = names[info.master_index] if names and info.master_index in names \
                else netlink.get_link(sock, index=info.master_index, nsid=nsid).name
        return Link(name=info.name, kind=info.kind, mac=info.mac, mtu=info.mtu,
                    up=bool(info.flags & netlink_wire.IFF_UP), promisc=info.promiscuity > 0,
                    master=master, hairpin=info.hairpin, addrs=addrs, ifindex=info.index,
                    peer_ifindex=info.peer_index)

    def get_link(self, netns: str | None, name: str) -> Link | None:
        sock, nsid = self._reader(netns)
        try:
            info = netlink.get_link(sock, name, nsid=nsid)
            addrs = [a.cidr for a in netlink.addrs(sock, info.index, nsid)]
            return self._to_link(sock, info, addrs, nsid)
        except netlink.TargetIgnored:
            self._read_across = False
            return self.get_link(netns, name)
        except NetlinkError as e:
            if e.errno == ENODEV:
                return None
            raise refused(f'failed to lookup "{name}"', e) from e

    def links(self, netns: str | None) -> list[Link]:
        sock = self._host_sock() if netns is None else self._in_sandbox(netns)
        infos = netlink.links(sock)
        names = {info.index: info.name for info in infos}
        addrs: dict[int, list[str]] = {}
        for a in netlink.addrs(sock):
            addrs.setdefault(a.index, []).append(a.cidr)
        return [self._to_link(sock, info, addrs.get(info.index, []), names=names)
                for info in infos]

    def routes(self, netns: str | None) -> list[RouteEntry]:
        sock = self._host_sock() if netns is None else self._in_sandbox(netns)
        names = {info.index: info.name for info in netlink.links(sock)}
        return [RouteEntry(dst=r.dst, gw=r.gateway, dev=names.get(r.oif, ""))
                for family in (netlink_wire.AF_INET, netlink_wire.AF_INET6)
                for r in netlink.routes(sock, family)]

    def ensure_bridge(self, name: str, mtu: int, promisc: bool, vlan_filtering: bool) -> Link:
        sock = self._host_sock()
        what = f'failed to create bridge "{name}"'
        try:
            netlink.add_bridge(sock, name, mtu, vlan_filtering)
        except NetlinkError as e:
            if e.errno != EEXIST:
                raise refused(f'{what}: could not add "{name}"', e) from e
        if promisc:
            try:
                netlink.set_link(sock, name, promisc=True)
            except NetlinkError as e:
                raise refused(f'{what}: could not set promiscuous mode on "{name}"', e) from e
        link = self.get_link(None, name)
        if link is None or link.kind != "bridge":
            raise internal(f'{what}: "{name}" already exists but is not a bridge')
        write_sysctl_best_effort(f"net/ipv6/conf/{name}/accept_ra", "0")
        try:
            netlink.set_link(sock, name, up=True)
        except NetlinkError as e:
            raise refused(what, e) from e
        link.up = True
        return link

    def wait_port_up(self, name: str) -> None:
        state = "unknown"
        for pause in (0, 0.05, 0.5, 1, 1):
            time.sleep(pause)
            try:
                state = netlink.get_link(self._host_sock(), name).operstate
            except NetlinkError:
                state = "unknown"
            if state == "UP":
                return
        raise internal(f"bridge port in error state: {state.lower()}")

    def set_up(self, netns: str | None, name: str) -> None:
        sock = self._host_sock() if netns is None else self._in_sandbox(netns)
        try:
            netlink.set_link(sock, name, up=True)
        except NetlinkError as e:
            if e.errno == ENODEV:
                raise internal("failed to retrieve link: Link not found") from e
            raise refused(f'failed to set "{name}" up', e) from e

    def add_veth(self, netns: str, ifname: str, mtu: int, mac: str, bridge: str,
                 hairpin: bool, vlan: int,
                 preserve_default_vlan: bool = False) -> tuple[Link, Link]:
        self.require_netns(netns)
        # Addresses, routes and sysctls inside need the helper there: it starts now and
        # is ready by the time they are due (after IPAM), nothing waits for it here.
        self._agent(netns)
        peer = self._make_veth(netns, ifname, mtu, mac)
        host = self._host_sock()
        try:
            netlink.set_link(host, peer, up=True)
            netlink.set_link(host, peer, master=netlink.get_link(host, bridge).index)
            if hairpin:
                netlink.set_hairpin(host, peer)
            write_sysctl_best_effort(f"net/ipv6/conf/{peer}/accept_ra", "0")
            if vlan:
                index = netlink.get_link(host, peer).index
                if not preserve_default_vlan:
                    netlink.bridge_vlan(host, index, 1, add=False, pvid_untagged=False)
                netlink.bridge_vlan(host, index, vlan, add=True, pvid_untagged=True)
        except NetlinkError as e:
            self.delete_host_link(peer)
            raise refused(f'failed to connect "{peer}" to bridge {bridge}', e) from e
        host_end, container_end = self.get_link(None, peer), self.get_link(netns, ifname)
        if host_end is None or container_end is None:
            self.delete_host_link(peer)
            raise internal(f'failed to lookup "{peer}": Link not found')
        return host_end, container_end

    def _make_veth(self, netns: str, ifname: str, mtu: int, mac: str) -> str:
        """A veth pair: a fresh random name here, `ifname` in the sandbox; its name here.

        Made from our side with the sandbox end placed by the namespace's fd, so nothing
        waits for the helper; the kernel ends up as when the reference makes the pair
        inside and moves its peer out."""
        sandbox = posix.open(netns, posix.O_RDONLY | posix.O_CLOEXEC)
        try:
            for _ in range(10):
                peer = random_veth_name()
                try:
                    netlink.add_veth(self._host_sock(), peer, ifname, sandbox, mtu, mac)
                    return peer
                except NetlinkError as e:
                    if e.errno != EEXIST:
                        raise refused("failed to make veth pair", e) from e
                    if self.get_link(None, peer) is None:
                        raise LinkExists(ifname) from e
        finally:
            posix.close(sandbox)
        raise internal("failed to find a unique veth name")

    def configure_iface(self, netns: str, ifname: str, ips: list[IPConfig],
                        routes: list[Route], enable_dad: bool) -> None:
        self.require_netns(netns)
        sock = self._in_sandbox(netns)
        sysctls = {f"net/ipv4/conf/{ifname}/arp_notify": "1"}
        if enable_dad:
            sysctls[f"net/ipv6/conf/{ifname}/enhanced_dad"] = "1"
            sysctls[f"net/ipv6/conf/{ifname}/accept_dad"] = "1"
        else:
            sysctls[f"net/ipv6/conf/{ifname}/accept_dad"] = "0"
        if any(ip.version == "6" for ip in ips):
            sysctls["net/ipv6/conf/lo/disable_ipv6"] = "0"
            sysctls[f"net/ipv6/conf/{ifname}/disable_ipv6"] = "0"
        self._agents[netns].write_sysctls(sysctls)
        try:
            index = netlink.get_link(sock, ifname).index
        except NetlinkError as e:
            raise refused(f'failed to lookup "{ifname}"', e) from e
        for ip in ips:
            try:
                netlink.add_addr(sock, ip.address, index)
            except NetlinkError as e:
                raise refused(f'failed to add IP addr {ip.address} to "{ifname}"', e) from e
        try:
            netlink.set_link(sock, ifname, up=True)
        except NetlinkError as e:
            raise refused(f'failed to set "{ifname}" UP', e) from e
        v4gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "4"), "")
        v6gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "6"), "")
        for r in routes:
            gw = r.gw or (v6gw if ":" in r.dst else v4gw)
            try:
                netlink.add_route(sock, r.dst, gw, index)
            except NetlinkError as e:
                raise refused(f"failed to add route '{go_ipnet(r)} via {gw or '<nil>'} dev "
                              f"{ifname}'", e) from e

    def ensure_addr(self, name: str, cidr: str, force: bool) -> None:
        link = self.get_link(None, name)
        if link is None:
            raise internal(f'could not lookup "{name}": Link not found')
        conflicts = ensure_addr_conflicts(link.addrs, cidr)
        if conflicts and not force:
            raise conflict_error(name, cidr)
        sock = self._host_sock()
        try:
            for old in conflicts:
                netlink.delete_addr(sock, old, link.ifindex)
        except NetlinkError as e:
            raise refused(f'failed to remove IP address from "{name}"', e) from e
        if cidr not in link.addrs:
            try:
                netlink.add_addr(sock, cidr, link.ifindex)
            except NetlinkError as e:
                if e.errno != EEXIST:
                    raise refused(f'could not add IP address to "{name}"', e) from e
        # Pin the bridge MAC so it no longer follows its lowest-numbered port.
        try:
            netlink.set_link(sock, name, mac=link.mac)
        except NetlinkError as e:
            raise refused(f'could not set bridge\'s mac on "{name}"', e) from e

    def enable_forwarding(self, ipv6: bool) -> None:
        path = "net/ipv6/conf/all/forwarding" if ipv6 else "net/ipv4/ip_forward"
        try:
            ensure_sysctl(path, "1")
        except OSError as e:
            raise refused("failed to enable forwarding", e) from e

    def setup_masquerade(self, cidr: str, chain: str, comment: str) -> None:
        _firewall().setup_masquerade(cidr, chain, comment)

    def teardown_masquerade(self, chain: str) -> None:
        _firewall().teardown_masquerade(chain)

    def setup_macspoofchk(self, host_iface: str, mac: str, ref_id: str) -> None:
        _firewall().setup_macspoofchk(host_iface, mac, ref_id)

    def teardown_macspoofchk(self, ref_id: str) -> None:
        _firewall().teardown_macspoofchk(ref_id)

    def delete_link(self, netns: str, ifname: str) -> list[str] | None:
        self.require_netns(netns)
        link = self.get_link(netns, ifname)
        if link is None:
            return None
        try:
            our_end = self._our_end_of(netns, link)
            if our_end:  # deleting either end of a veth pair deletes both
                netlink.delete_link(self._host_sock(), index=our_end)
            else:
                netlink.delete_link(self._in_sandbox(netns), ifname)
        except NetlinkError as e:
            raise refused(f'failed to delete "{ifname}"', e) from e
        return [a for a in link.addrs if not a.startswith(("fe80:", "127.", "::1/"))]

    def _our_end_of(self, netns: str, link: Link) -> int:
        """The index of the veth here whose peer is `link` in the sandbox; 0 if it is not
        such a pair (or its ends cannot be told from here)."""
        host, nsid = self._reader(netns)
        if nsid < 0 or link.kind != "veth" or not link.peer_ifindex:
            return 0
        try:
            here = netlink.get_link(host, index=link.peer_ifindex)
        except NetlinkError:
            return 0
        paired = here.kind == "veth" and here.peer_index == link.ifindex and \
            here.peer_nsid == nsid
        return here.index if paired else 0

    def delete_host_link(self, name: str) -> None:
        try:  # noqa: SIM105 - not there: nothing to undo
            netlink.delete_link(self._host_sock(), name)
        except NetlinkError:
            pass

    def loopback_up(self, netns: str, ifname: str = "lo") -> list[str]:
        self.require_netns(netns)
        self.set_up(netns, "lo")
        lo = self.get_link(netns, "lo")
        addrs = lo.addrs if lo else []
        for a in addrs:
            if not (a.startswith("127.") or a == "::1/128"):
                raise internal("loopback interface found with non-loopback address "
                               f'"{a.split("/")[0]}"')
        return addrs

    def loopback_down(self, netns: str) -> None:
        self.require_netns(netns)
        try:
            netlink.set_link(self._in_sandbox(netns), "lo", up=False)
        except NetlinkError as e:
            raise refused('failed to set "lo" down', e) from e


def _firewall() -> ModuleType:
    """linux_firewall runs tools (iptables, nft): imported only by the commands using it."""
    from cni_plugin.dataplane import linux_firewall

    return linux_firewall
