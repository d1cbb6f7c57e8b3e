"""The rtnetlink wire format and socket: message and attribute encoding, the parsed
answers (links, addresses, routes) and a request/ack/dump socket.

Stdlib only (``_socket`` and ``struct``; the ``socket`` module would pull in ``enum``
and ``selectors``): every CNI exec on the linux dataplane imports it.
"""

from __future__ import annotations

import _socket
import posix
from struct import Struct, pack, unpack_from

NETLINK_ROUTE = 0
SOL_NETLINK, NETLINK_GET_STRICT_CHK = 270, 12
AF_UNSPEC, AF_BRIDGE = 0, 7
AF_INET = _socket.AF_INET
AF_INET6 = _socket.AF_INET6

NLMSG_ERROR, NLMSG_DONE = 2, 3
NLM_F_REQUEST, NLM_F_MULTI, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x2, 0x4, 0x300
NLM_F_EXCL, NLM_F_CREATE = 0x200, 0x400
NLA_F_NESTED = 0x8000

RTM_NEWLINK, RTM_DELLINK, RTM_GETLINK, RTM_SETLINK = 16, 17, 18, 19
RTM_NEWADDR, RTM_DELADDR, RTM_GETADDR = 20, 21, 22
RTM_NEWROUTE, RTM_GETROUTE = 24, 26
RTM_GETNSID = 90
NETNSA_NSID, NETNSA_FD = 1, 3

IFF_UP, IFF_PROMISC = 0x1, 0x100
ARPHRD_LOOPBACK = 772

IFLA_ADDRESS, IFLA_IFNAME, IFLA_MTU, IFLA_LINK, IFLA_MASTER = 1, 3, 4, 5, 10
IFLA_OPERSTATE, IFLA_LINKINFO, IFLA_AF_SPEC, IFLA_NET_NS_FD, IFLA_PROMISCUITY = 16, 18, 26, 28, 30
IFLA_LINK_NETNSID, IFLA_TARGET_NETNSID = 37, 46
IFLA_INFO_KIND, IFLA_INFO_DATA, IFLA_INFO_SLAVE_KIND, IFLA_INFO_SLAVE_DATA = 1, 2, 4, 5
VETH_INFO_PEER = 1
IFLA_BR_VLAN_FILTERING = 7
IFLA_BRPORT_MODE = 4  # hairpin
IFLA_BRIDGE_VLAN_INFO = 2
BRIDGE_VLAN_INFO_PVID, BRIDGE_VLAN_INFO_UNTAGGED = 0x2, 0x4

IFA_ADDRESS, IFA_LOCAL, IFA_BROADCAST, IFA_TARGET_NETNSID = 1, 2, 4, 10

RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_TABLE = 1, 4, 5, 15
RT_TABLE_MAIN, RTPROT_BOOT, RT_SCOPE_UNIVERSE, RT_SCOPE_HOST, RTN_UNICAST = 254, 3, 0, 254, 1
RTM_F_CLONED = 0x200

EINVAL = 22

OPERSTATES = ("UNKNOWN", "NOTPRESENT", "DOWN", "LOWERLAYERDOWN", "TESTING", "DORMANT", "UP")

_NLMSGHDR = Struct("=IHHII")      # length, type, flags, sequence, port id
_IFINFOMSG = Struct("=BxHiII")    # family, device type, index, flags, change mask
_IFADDRMSG = Struct("=BBBBi")     # family, prefix length, flags, scope, index
RTMSG = Struct("=BBBBBBBBI")     # family, dst len, src len, tos, table, protocol, scope,
#                                   type, flags
_RTATTR = Struct("=HH")           # length, type


class NetlinkError(OSError):
    """The kernel refused a request; ``reason`` words the errno as Go prints it."""

    @property
    def reason(self) -> str:
        text = self.strerror or f"errno {self.errno}"
        return text[:1].lower() + text[1:]


def attr(kind: int, payload: bytes) -> bytes:
    length = _RTATTR.size + len(payload)
    return _RTATTR.pack(length, kind) + payload + bytes(-length % 4)


def attr_str(kind: int, text: str) -> bytes:
    return attr(kind, text.encode() + b"\0")


def attr_u32(kind: int, value: int) -> bytes:
    return attr(kind, pack("=I", value))


def parse_attrs(data: bytes | memoryview, offset: int = 0,
                end: int | None = None) -> dict[int, memoryview]:
    """Attributes by type (the nested flag dropped); a repeated type keeps the last."""
    view = memoryview(data)
    end = len(view) if end is None else end
    out: dict[int, memoryview] = {}
    while offset + _RTATTR.size <= end:
        length, kind = _RTATTR.unpack_from(view, offset)
        if length < _RTATTR.size:
            break
        out[kind & ~NLA_F_NESTED] = view[offset + _RTATTR.size:offset + length]
        offset += (length + 3) & ~3
    return out


def as_str(raw: memoryview | None) -> str:
    return "" if raw is None else bytes(raw).split(b"\0", 1)[0].decode()


def as_u32(raw: memoryview | None) -> int:
    return 0 if raw is None else int(unpack_from("=I", raw)[0])


def as_s32(raw: memoryview | None) -> int | None:
    return None if raw is None else int(unpack_from("=i", raw)[0])


def as_u8(raw: memoryview | None) -> int:
    return 0 if raw is None or len(raw) < 1 else int(raw[0])


def ip_bytes(text: str) -> tuple[int, bytes]:
    """(family, packed address) of an IP in text form."""
    family = AF_INET6 if ":" in text else AF_INET
    return family, _socket.inet_pton(family, text)


def ip_text(family: int, raw: memoryview | bytes) -> str:
    return _socket.inet_ntop(family, bytes(raw))


class Socket:
    """A NETLINK_ROUTE socket; ``fileno`` adopts one opened elsewhere (another netns).

    ``strict`` tells whether the kernel checks dump requests strictly, which is what
    makes it honour filters (an address dump's index and target namespace) at all.
    """

    def __init__(self, fileno: int | None = None) -> None:
        if fileno is None:
            self._sock = _socket.socket(_socket.AF_NETLINK,
                                        _socket.SOCK_RAW | _socket.SOCK_CLOEXEC, NETLINK_ROUTE)
            self._sock.bind((0, 0))
        else:  # bound already by whoever opened it
            self._sock = _socket.socket(_socket.AF_NETLINK, _socket.SOCK_RAW, NETLINK_ROUTE,
                                        fileno)
        try:
            self._sock.setsockopt(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1)
            self.strict = True
        except OSError:  # before Linux 4.20
            self.strict = False
        self._seq = 0

    def fileno(self) -> int:
        return int(self._sock.fileno())

    def close(self) -> None:
        self._sock.close()

    def _send(self, kind: int, flags: int, body: bytes) -> int:
        self._seq += 1
        header = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), kind, flags | NLM_F_REQUEST,
                                self._seq, 0)
        self._sock.sendto(header + body, (0, 0))
        return self._seq

    def _replies(self, seq: int) -> list[memoryview]:
        """The payloads answering `seq`, until the ack or the end of the dump."""
        out: list[memoryview] = []
        while True:
            data = memoryview(self._sock.recv(1 << 17))
            offset = 0
            while offset + _NLMSGHDR.size <= len(data):
                length, kind, flags, msg_seq, _ = _NLMSGHDR.unpack_from(data, offset)
                if length < _NLMSGHDR.size:
                    break
                payload = data[offset + _NLMSGHDR.size:offset + length]
                offset += (length + 3) & ~3
                if msg_seq != seq:
                    continue  # an answer to an earlier request we stopped waiting for
                if kind == NLMSG_ERROR:
                    error = -int(unpack_from("=i", payload)[0])
                    if error:
                        raise NetlinkError(error, posix.strerror(error))
                    return out
                if kind == NLMSG_DONE:
                    return out
                out.append(payload)
                if not flags & NLM_F_MULTI:
                    return out

    def request(self, kind: int, body: bytes, flags: int = 0) -> None:
        """Send one change and wait for the kernel's ack (NetlinkError if refused)."""
        self._replies(self._send(kind, flags | NLM_F_ACK, body))

    def get(self, kind: int, body: bytes) -> memoryview:
        """One object (a link by name or index); NetlinkError if there is none."""
        return self._replies(self._send(kind, 0, body))[0]

    def dump(self, kind: int, body: bytes) -> list[memoryview]:
        return self._replies(self._send(kind, NLM_F_DUMP, body))


def ifinfomsg(index: int = 0, flags: int = 0, change: int = 0, family: int = 0) -> bytes:
    return _IFINFOMSG.pack(family, 0, index, flags, change)


def ifaddrmsg(family: int, prefixlen: int, scope: int, index: int) -> bytes:
    return _IFADDRMSG.pack(family, prefixlen, 0, scope, index)


def rtmsg(family: int, dst_len: int, scope: int) -> bytes:
    return RTMSG.pack(family, dst_len, 0, 0, RT_TABLE_MAIN, RTPROT_BOOT, scope, RTN_UNICAST, 0)


class LinkInfo:
    """A link as RTM_NEWLINK describes it."""

    __slots__ = ("flags", "hairpin", "index", "kind", "mac", "master_index", "mtu", "name",
                 "operstate", "peer_index", "peer_nsid", "promiscuity", "target_nsid")

    def __init__(self, payload: memoryview) -> None:
        _, dev_type, self.index, self.flags, _ = _IFINFOMSG.unpack_from(payload)
        attrs = parse_attrs(payload, _IFINFOMSG.size)
        self.name = as_str(attrs.get(IFLA_IFNAME))
        raw_mac = attrs.get(IFLA_ADDRESS)
        self.mac = ":".join(f"{b:02x}" for b in bytes(raw_mac)) if raw_mac is not None else ""
        self.mtu = as_u32(attrs.get(IFLA_MTU))
        self.master_index = as_u32(attrs.get(IFLA_MASTER))
        self.peer_index = as_u32(attrs.get(IFLA_LINK))
        self.peer_nsid = as_s32(attrs.get(IFLA_LINK_NETNSID))  # where the peer lives
        self.promiscuity = as_u32(attrs.get(IFLA_PROMISCUITY))
        state = as_u8(attrs.get(IFLA_OPERSTATE))
        self.operstate = OPERSTATES[state] if state < len(OPERSTATES) else "UNKNOWN"
        self.target_nsid = as_s32(attrs.get(IFLA_TARGET_NETNSID))
        info = attrs.get(IFLA_LINKINFO)
        nested = parse_attrs(info) if info is not None else {}
        self.kind = as_str(nested.get(IFLA_INFO_KIND)) or (
            "loopback" if dev_type == ARPHRD_LOOPBACK else "")
        slave = nested.get(IFLA_INFO_SLAVE_DATA)
        self.hairpin = bool(as_u8(parse_attrs(slave).get(IFLA_BRPORT_MODE))) if slave else False


class AddrInfo:
    __slots__ = ("cidr", "family", "index")

    def __init__(self, payload: memoryview) -> None:
        self.family, prefixlen, _, _, self.index = _IFADDRMSG.unpack_from(payload)
        attrs = parse_attrs(payload, _IFADDRMSG.size)
        raw = attrs.get(IFA_LOCAL, attrs.get(IFA_ADDRESS))
        self.cidr = f"{ip_text(self.family, raw)}/{prefixlen}" if raw is not None else ""


class RouteInfo:
    __slots__ = ("dst", "flags", "gateway", "oif", "table")

    def __init__(self, payload: memoryview) -> None:
        family, dst_len, _, _, table, _, _, _, self.flags = RTMSG.unpack_from(payload)
        attrs = parse_attrs(payload, RTMSG.size)
        raw_dst = attrs.get(RTA_DST)
        default = "0.0.0.0" if family == AF_INET else "::"
        self.dst = f"{ip_text(family, raw_dst) if raw_dst is not None else default}/{dst_len}"
        raw_gw = attrs.get(RTA_GATEWAY)
        self.gateway = ip_text(family, raw_gw) if raw_gw is not None else ""
        self.oif = as_u32(attrs.get(RTA_OIF))
        self.table = as_u32(attrs.get(RTA_TABLE)) if RTA_TABLE in attrs else table
