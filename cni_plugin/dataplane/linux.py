"""The real dataplane: a Linux bridge, a veth pair into the sandbox netns, addresses, routes.

Everything is done by `ip` (and `nsenter --net=PATH ip ...` inside the sandbox)
in child processes, so no thread of ours ever switches network namespace.
Masquerading uses iptables/ip6tables when present, as the reference does.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import sys
import time
from typing import Any

from cni_plugin.dataplane import linux_firewall
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
from cni_plugin.dataplane.commands import CommandFailed, ip_json, run, write_sysctl
from cni_plugin.errors import internal
from cni_plugin.types import DefaultGatewayRoute, IPConfig, Route


def _go_ipnet(route: Route) -> str:
    """A route's dst as the reference prints it in messages (Go's %v of a net.IPNet)."""
    net = ipaddress.ip_interface(route.dst)
    if isinstance(route, DefaultGatewayRoute):
        mask = bytes(16) if net.version == 6 else bytes(10) + b"\xff\xff" + bytes(4)
    else:
        mask = net.netmask.packed
    return f"{{{net.ip} {mask.hex()}}}"


def _brd(cidr: str) -> str:
    """IPv4 addresses get their broadcast address, as netlink's AddrAdd sets it."""
    return "" if ":" in cidr else " broadcast +"


def _to_link(d: dict[str, Any]) -> Link:
    info = d.get("linkinfo", {})
    kind = info.get("info_kind") or ("loopback" if d.get("link_type") == "loopback" else "")
    slave = info.get("info_slave_data", {})
    addrs = [f"{a['local']}/{a['prefixlen']}" for a in d.get("addr_info", [])]
    return Link(name=d["ifname"], kind=kind, mac=d.get("address", ""), mtu=d.get("mtu", 0),
                up="UP" in d.get("flags", []), promisc=d.get("promiscuity", 0) > 0,
                master=d.get("master", ""), hairpin=bool(slave.get("hairpin", False)),
                addrs=addrs, ifindex=d.get("ifindex", 0), peer_ifindex=d.get("link_index", 0))


def _fs_magic(path: str) -> int:
    """statfs(2) f_type, only needed to word an error (Python has no os.statfs)."""
    import ctypes

    buf = ctypes.create_string_buffer(256)  # struct statfs; f_type is its first field
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.statfs(path.encode(), buf) != 0:
        return 0
    return int.from_bytes(buf.raw[:8], sys.byteorder)


class LinuxDataplane(Dataplane):
    def require_netns(self, netns: str) -> None:
        """The path must be a network namespace (an nsfs or proc file), as the reference's
        ns.GetNS requires."""
        try:
            st = os.stat(netns)
        except FileNotFoundError:
            raise NetnsNotFound(netns) from None
        except OSError as e:
            raise internal(f'failed to open netns "{netns}": failed to Statfs "{netns}": '
                           f"{e.strerror.lower() if e.strerror else e}") from e
        if st.st_dev != os.stat(f"/proc/{os.getpid()}/ns/net").st_dev:
            raise internal(f'failed to open netns "{netns}": unknown FS magic on "{netns}": '
                           f"{_fs_magic(netns):x}")

    def get_link(self, netns: str | None, name: str) -> Link | None:
        try:
            found = ip_json(["-d", "addr", "show", "dev", name], netns)
        except CommandFailed as e:
            if "does not exist" in e.stderr:
                return None
            raise internal(f'failed to lookup "{name}": {e.reason()}') from e
        return _to_link(found[0]) if found else None

    def links(self, netns: str | None) -> list[Link]:
        return [_to_link(d) for d in ip_json(["-d", "addr", "show"], netns)]

    def routes(self, netns: str | None) -> list[RouteEntry]:
        out = []
        for family in ("-4", "-6"):
            for r in ip_json([family, "route", "show"], netns):
                dst = r.get("dst", "")
                if dst == "default":
                    dst = "0.0.0.0/0" if family == "-4" else "::/0"
                out.append(RouteEntry(dst=dst, gw=r.get("gateway", ""), dev=r.get("dev", "")))
        return out

    def ensure_bridge(self, name: str, mtu: int, promisc: bool, vlan_filtering: bool) -> Link:
        argv = ["ip", "link", "add", "name", name]
        if mtu:
            argv += ["mtu", str(mtu)]
        argv += ["type", "bridge"] + (["vlan_filtering", "1"] if vlan_filtering else [])
        try:
            run(argv)
        except CommandFailed as e:
            if "File exists" not in e.stderr:
                raise internal(f'failed to create bridge "{name}": could not add "{name}": '
                               f"{e.reason()}") from e
        if promisc:
            run(["ip", "link", "set", name, "promisc", "on"])
        link = self.get_link(None, name)
        if link is None or link.kind != "bridge":
            raise internal(f'failed to create bridge "{name}": '
                           f'"{name}" already exists but is not a bridge')
        write_sysctl(f"net.ipv6.conf.{name}.accept_ra", "0")
        run(["ip", "link", "set", name, "up"])
        link.up = True
        return link

    def wait_port_up(self, name: str) -> None:
        state = "unknown"
        for pause in (0, 0.05, 0.5, 1, 1):
            time.sleep(pause)
            found = ip_json(["link", "show", "dev", name])
            state = found[0].get("operstate", "unknown") if found else "unknown"
            if state == "UP":
                return
        raise internal(f"bridge port in error state: {state.lower()}")

    def set_up(self, netns: str | None, name: str) -> None:
        try:
            run(["ip", "link", "set", name, "up"], netns)
        except CommandFailed as e:
            raise internal(f"failed to retrieve link: {e.reason()}") from e

    def add_veth(self, netns: str, ifname: str, mtu: int, mac: str, bridge: str,
                 hairpin: bool, vlan: int,
                 preserve_default_vlan: bool = False) -> tuple[Link, Link]:
        self.require_netns(netns)
        mtu_args = ["mtu", str(mtu)] if mtu else []
        peer = ""
        for _ in range(10):
            peer = random_veth_name()
            argv = ["ip", "link", "add", ifname, *mtu_args,
                    *(["address", mac] if mac else []),
                    "type", "veth", "peer", "name", peer, *mtu_args,
                    "netns", f"/proc/{os.getpid()}/ns/net"]
            try:
                run(argv, netns)
                break
            except CommandFailed as e:
                if "File exists" not in e.stderr:
                    raise internal(f"failed to make veth pair: {e.reason()}") from e
                if self.get_link(None, peer) is None:
                    raise LinkExists(ifname) from e
        else:
            raise internal("failed to find a unique veth name")
        script = [f"link set {peer} up", f"link set {peer} master {bridge}"]
        if hairpin:
            script.append(f"link set {peer} type bridge_slave hairpin on")
        try:
            run(["ip", "-batch", "-"], stdin="\n".join(script) + "\n")
            write_sysctl(f"net.ipv6.conf.{peer}.accept_ra", "0")
            if vlan:
                if not preserve_default_vlan:
                    run(["bridge", "vlan", "del", "dev", peer, "vid", "1"])
                run(["bridge", "vlan", "add", "dev", peer, "vid", str(vlan), "pvid",
                      "untagged"])
        except CommandFailed as e:
            self.delete_host_link(peer)
            raise internal(f'failed to connect "{peer}" to bridge {bridge}: {e.reason()}') from e
        host, container = self.get_link(None, peer), self.get_link(netns, ifname)
        if host is None or container is None:
            self.delete_host_link(peer)
            raise internal(f'failed to lookup "{peer}": Link not found')
        return host, container

    def configure_iface(self, netns: str, ifname: str, ips: list[IPConfig],
                        routes: list[Route], enable_dad: bool) -> None:
        self.require_netns(netns)
        sysctls = [f"net.ipv4.conf.{ifname}.arp_notify=1"]
        if enable_dad:
            sysctls += [f"net.ipv6.conf.{ifname}.enhanced_dad=1",
                        f"net.ipv6.conf.{ifname}.accept_dad=1"]
        else:
            sysctls.append(f"net.ipv6.conf.{ifname}.accept_dad=0")
        if any(ip.version == "6" for ip in ips):
            sysctls += ["net.ipv6.conf.lo.disable_ipv6=0",
                        f"net.ipv6.conf.{ifname}.disable_ipv6=0"]
        with contextlib.suppress(CommandFailed):  # the reference ignores these failures too
            run(["sysctl", "-q", "-w", *sysctls], netns)
        v4gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "4"), "")
        v6gw = next((ip.gateway for ip in ips if ip.gateway and ip.version == "6"), "")
        lines: list[tuple[str, str]] = [
            (f"addr add {ip.address}{_brd(ip.address)} dev {ifname}",
             f'failed to add IP addr {ip.address} to "{ifname}"') for ip in ips]
        lines.append((f"link set {ifname} up", f'failed to set "{ifname}" UP'))
        for r in routes:
            gw = r.gw or (v6gw if ":" in r.dst else v4gw)
            via = f" via {gw}" if gw else ""
            lines.append((f"route add {r.dst}{via} dev {ifname}",
                          f"failed to add route '{_go_ipnet(r)} via {gw or '<nil>'} dev "
                          f"{ifname}'"))
        try:
            run(["ip", "-batch", "-"], netns, "\n".join(c for c, _ in lines) + "\n")
        except CommandFailed as e:
            n = e.failed_line()
            what = lines[n - 1][1] if n and 0 < n <= len(lines) else "failed to configure"
            raise internal(f"{what}: {e.reason()}") from e

    def ensure_addr(self, name: str, cidr: str, force: bool) -> None:
        link = self.get_link(None, name)
        if link is None:
            raise internal(f'could not lookup "{name}": Link not found')
        conflicts = ensure_addr_conflicts(link.addrs, cidr)
        if conflicts and not force:
            raise conflict_error(name, cidr)
        for old in conflicts:
            run(["ip", "addr", "del", old, "dev", name])
        if cidr not in link.addrs:
            try:
                run(["ip", "addr", "add", cidr, *_brd(cidr).split(), "dev", name])
            except CommandFailed as e:
                if "File exists" not in e.stderr and "already assigned" not in e.stderr:
                    raise internal(f'could not add IP address to "{name}": {e.reason()}') from e
        # Pin the bridge MAC so it no longer follows its lowest-numbered port.
        run(["ip", "link", "set", name, "address", link.mac])

    def enable_forwarding(self, ipv6: bool) -> None:
        key = "net.ipv6.conf.all.forwarding" if ipv6 else "net.ipv4.ip_forward"
        try:
            run(["sysctl", "-q", "-w", f"{key}=1"])
        except CommandFailed as e:
            raise internal(f"failed to enable forwarding: {e.reason()}") from e

    def setup_masquerade(self, cidr: str, chain: str, comment: str) -> None:
        linux_firewall.setup_masquerade(cidr, chain, comment)

    def teardown_masquerade(self, chain: str) -> None:
        linux_firewall.teardown_masquerade(chain)

    def setup_macspoofchk(self, host_iface: str, mac: str, ref_id: str) -> None:
        linux_firewall.setup_macspoofchk(host_iface, mac, ref_id)

    def teardown_macspoofchk(self, ref_id: str) -> None:
        linux_firewall.teardown_macspoofchk(ref_id)

    def delete_link(self, netns: str, ifname: str) -> list[str] | None:
        self.require_netns(netns)
        link = self.get_link(netns, ifname)
        if link is None:
            return None
        try:
            run(["ip", "link", "del", ifname], netns)
        except CommandFailed as e:
            raise internal(f'failed to delete "{ifname}": {e.reason()}') from e
        return [a for a in link.addrs if not a.startswith(("fe80:", "127.", "::1/"))]

    def delete_host_link(self, name: str) -> None:
        with contextlib.suppress(CommandFailed):  # not there: nothing to undo
            run(["ip", "link", "del", name])

    def loopback_up(self, netns: str) -> list[str]:
        self.require_netns(netns)
        run(["ip", "link", "set", "lo", "up"], netns)
        lo = self.get_link(netns, "lo")
        addrs = lo.addrs if lo else []
        for a in addrs:
            if not (a.startswith("127.") or a == "::1/128"):
                raise internal("loopback interface found with non-loopback address "
                               f'"{a.split("/")[0]}"')
        return addrs

    def loopback_down(self, netns: str) -> None:
        self.require_netns(netns)
        run(["ip", "link", "set", "lo", "down"], netns)
