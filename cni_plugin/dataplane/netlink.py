"""rtnetlink spoken in-process: the few link, address and route messages the linux
dataplane sends, each a request the kernel answers with an ack or a dump.

Stdlib only (``_socket`` and ``struct``; the ``socket`` module would pull in ``enum``
and ``selectors``), so the plugin pays no heavy import and starts no ``ip``. The
requests carry what iproute2 sends for the same command (``ip link add ... type
bridge``, ``ip addr add ... broadcast +``), so the kernel ends up in the same state.

A socket works in the network namespace it was opened in (see netns_agent). Reads
of a link, and address dumps, can also name another namespace by the id the
socket's namespace knows it by (``nsid``; IFLA_TARGET_NETNSID, IFA_TARGET_NETNSID):
a kernel that honours it says so in its answer. No change is ever sent that way: in
a link change that attribute once meant "move the link there", and an older kernel
would act on the socket's own namespace.
"""

from __future__ import annotations

from struct import pack, unpack_from

from cni_plugin.dataplane.netlink_wire import (
    AF_BRIDGE,
    AF_INET,
    AF_UNSPEC,
    BRIDGE_VLAN_INFO_PVID,
    BRIDGE_VLAN_INFO_UNTAGGED,
    EINVAL,
    IFA_ADDRESS,
    IFA_BROADCAST,
    IFA_LOCAL,
    IFA_TARGET_NETNSID,
    IFF_PROMISC,
    IFF_UP,
    IFLA_ADDRESS,
    IFLA_AF_SPEC,
    IFLA_BR_VLAN_FILTERING,
    IFLA_BRIDGE_VLAN_INFO,
    IFLA_BRPORT_MODE,
    IFLA_IFNAME,
    IFLA_INFO_DATA,
    IFLA_INFO_KIND,
    IFLA_INFO_SLAVE_DATA,
    IFLA_INFO_SLAVE_KIND,
    IFLA_LINKINFO,
    IFLA_MASTER,
    IFLA_MTU,
    IFLA_NET_NS_FD,
    IFLA_TARGET_NETNSID,
    NETNSA_FD,
    NETNSA_NSID,
    NLM_F_CREATE,
    NLM_F_EXCL,
    RT_SCOPE_HOST,
    RT_SCOPE_UNIVERSE,
    RT_TABLE_MAIN,
    RTA_DST,
    RTA_GATEWAY,
    RTA_OIF,
    RTM_DELADDR,
    RTM_DELLINK,
    RTM_F_CLONED,
    RTM_GETADDR,
    RTM_GETLINK,
    RTM_GETNSID,
    RTM_GETROUTE,
    RTM_NEWADDR,
    RTM_NEWLINK,
    RTM_NEWROUTE,
    RTM_SETLINK,
    RTMSG,
    VETH_INFO_PEER,
    AddrInfo,
    LinkInfo,
    NetlinkError,
    RouteInfo,
    Socket,
    attr,
    attr_str,
    attr_u32,
    ifaddrmsg,
    ifinfomsg,
    ip_bytes,
    parse_attrs,
    rtmsg,
)


def _in(nsid: int, kind: int = IFLA_TARGET_NETNSID) -> bytes:
    """The attribute naming the namespace a read is about; nothing for the socket's own
    (-1). Only ever in reads."""
    return attr(kind, pack("=i", nsid)) if nsid >= 0 else b""




def netns_id(sock: Socket, netns_fd: int) -> int:
    """The id the socket's namespace knows the one of `netns_fd` by, -1 if none (the
    kernel gives one once a veth pair spans the two)."""
    query = pack("=Bxxx", AF_UNSPEC) + attr_u32(NETNSA_FD, netns_fd)
    raw = parse_attrs(sock.get(RTM_GETNSID, query), 4).get(NETNSA_NSID)
    return int(unpack_from("=i", raw)[0]) if raw is not None else -1


class TargetIgnored(NetlinkError):
    """The kernel answered a read about another namespace without naming it: it read
    the socket's own namespace instead (a kernel older than Linux 4.15)."""


def get_link(sock: Socket, name: str = "", index: int = 0, nsid: int = -1) -> LinkInfo:
    body = ifinfomsg(index) + (attr_str(IFLA_IFNAME, name) if name else b"") + _in(nsid)
    info = LinkInfo(sock.get(RTM_GETLINK, body))
    if nsid >= 0 and info.target_nsid != nsid:
        raise TargetIgnored(EINVAL, f"the kernel did not read namespace {nsid}")
    return info


def links(sock: Socket) -> list[LinkInfo]:
    return [LinkInfo(p) for p in sock.dump(RTM_GETLINK, ifinfomsg())]


def addrs(sock: Socket, index: int = 0, nsid: int = -1) -> list[AddrInfo]:
    """Addresses (IPv4 first, as `ip addr` lists them), of one link when index is set.
    A strict socket lets the kernel filter (and is needed to name another namespace)."""
    if nsid >= 0 and not sock.strict:  # it would dump the socket's own namespace
        raise TargetIgnored(EINVAL, "address dumps of another namespace need Linux 4.20")
    body = ifaddrmsg(AF_UNSPEC, 0, 0, index if sock.strict else 0) + _in(
        nsid, IFA_TARGET_NETNSID)
    found = [AddrInfo(p) for p in sock.dump(RTM_GETADDR, body)]
    return [a for a in found if not index or a.index == index]


def routes(sock: Socket, family: int) -> list[RouteInfo]:
    """The main table, without cached clones (what `ip route show` lists)."""
    body = RTMSG.pack(family, 0, 0, 0, 0, 0, 0, 0, 0)  # a strict dump takes these as filters
    found = [RouteInfo(p) for p in sock.dump(RTM_GETROUTE, body)]
    return [r for r in found if r.table == RT_TABLE_MAIN and not r.flags & RTM_F_CLONED]


def add_bridge(sock: Socket, name: str, mtu: int, vlan_filtering: bool) -> None:
    data = attr(IFLA_BR_VLAN_FILTERING, b"\x01") if vlan_filtering else b""
    info = attr_str(IFLA_INFO_KIND, "bridge") + (attr(IFLA_INFO_DATA, data) if data else b"")
    body = (ifinfomsg() + attr_str(IFLA_IFNAME, name) +
            (attr_u32(IFLA_MTU, mtu) if mtu else b"") + attr(IFLA_LINKINFO, info))
    sock.request(RTM_NEWLINK, body, NLM_F_CREATE | NLM_F_EXCL)


def add_veth(sock: Socket, name: str, peer: str, peer_netns_fd: int, mtu: int,
             peer_mac: str) -> None:
    """A veth pair: `name` where the socket lives, `peer` (with `peer_mac` if given) in
    the namespace of the fd (`ip link add NAME type veth peer name PEER netns FD`)."""
    mtu_attr = attr_u32(IFLA_MTU, mtu) if mtu else b""
    peer_msg = (ifinfomsg() + attr_str(IFLA_IFNAME, peer) + mtu_attr +
                (attr(IFLA_ADDRESS, bytes.fromhex(peer_mac.replace(":", ""))) if peer_mac
                 else b"") + attr_u32(IFLA_NET_NS_FD, peer_netns_fd))
    info = attr_str(IFLA_INFO_KIND, "veth") + attr(IFLA_INFO_DATA,
                                                    attr(VETH_INFO_PEER, peer_msg))
    body = ifinfomsg() + attr_str(IFLA_IFNAME, name) + mtu_attr + attr(IFLA_LINKINFO, info)
    sock.request(RTM_NEWLINK, body, NLM_F_CREATE | NLM_F_EXCL)


def set_link(sock: Socket, name: str, *, up: bool | None = None, promisc: bool | None = None,
             master: int | None = None, mac: str = "") -> None:
    flags = change = 0
    if up is not None:
        change |= IFF_UP
        flags |= IFF_UP if up else 0
    if promisc is not None:
        change |= IFF_PROMISC
        flags |= IFF_PROMISC if promisc else 0
    body = ifinfomsg(0, flags, change) + attr_str(IFLA_IFNAME, name)
    if master is not None:
        body += attr_u32(IFLA_MASTER, master)
    if mac:
        body += attr(IFLA_ADDRESS, bytes.fromhex(mac.replace(":", "")))
    sock.request(RTM_NEWLINK, body)


def set_hairpin(sock: Socket, name: str) -> None:
    """Hairpin on for a bridge port (`ip link set NAME type bridge_slave hairpin on`)."""
    info = attr_str(IFLA_INFO_SLAVE_KIND, "bridge") + attr(
        IFLA_INFO_SLAVE_DATA, attr(IFLA_BRPORT_MODE, b"\x01"))
    sock.request(RTM_NEWLINK, ifinfomsg() + attr_str(IFLA_IFNAME, name) +
                 attr(IFLA_LINKINFO, info))


def bridge_vlan(sock: Socket, index: int, vid: int, add: bool, pvid_untagged: bool) -> None:
    """`bridge vlan add|del dev PORT vid VID [pvid untagged]`."""
    flags = BRIDGE_VLAN_INFO_PVID | BRIDGE_VLAN_INFO_UNTAGGED if pvid_untagged else 0
    spec = attr(IFLA_AF_SPEC, attr(IFLA_BRIDGE_VLAN_INFO, pack("=HH", flags, vid)))
    sock.request(RTM_SETLINK if add else RTM_DELLINK, ifinfomsg(index, family=AF_BRIDGE) + spec)


def delete_link(sock: Socket, name: str = "", index: int = 0) -> None:
    sock.request(RTM_DELLINK, ifinfomsg(index) + (attr_str(IFLA_IFNAME, name) if name else b""))


def _addr_body(cidr: str, index: int, broadcast: bool) -> bytes:
    address, prefix = cidr.split("/")
    family, raw = ip_bytes(address)
    prefixlen = int(prefix)
    scope = RT_SCOPE_HOST if address.startswith("127.") else RT_SCOPE_UNIVERSE
    body = (ifaddrmsg(family, prefixlen, scope, index) + attr(IFA_LOCAL, raw) +
            attr(IFA_ADDRESS, raw))
    if broadcast and family == AF_INET and prefixlen <= 30:
        host_bits = (1 << (32 - prefixlen)) - 1
        body += attr(IFA_BROADCAST, pack("!I", unpack_from("!I", raw)[0] | host_bits))
    return body


def add_addr(sock: Socket, cidr: str, index: int) -> None:
    """`ip addr add CIDR [broadcast +] dev`: IPv4 gets its subnet's broadcast address."""
    sock.request(RTM_NEWADDR, _addr_body(cidr, index, True), NLM_F_CREATE | NLM_F_EXCL)


def delete_addr(sock: Socket, cidr: str, index: int) -> None:
    sock.request(RTM_DELADDR, _addr_body(cidr, index, False))


def add_route(sock: Socket, dst: str, gateway: str, index: int) -> None:
    """A main-table unicast route through `index` (scope universe, as the reference's
    netlink.RouteAdd; iproute2 would make a gateway-less one scope link)."""
    address, prefix = dst.split("/")
    family, raw = ip_bytes(address)
    body = rtmsg(family, int(prefix), RT_SCOPE_UNIVERSE) + attr(RTA_DST, raw)
    if gateway:
        body += attr(RTA_GATEWAY, ip_bytes(gateway)[1])
    body += attr_u32(RTA_OIF, index)
    sock.request(RTM_NEWROUTE, body, NLM_F_CREATE | NLM_F_EXCL)
