"""The dataplane interface the bridge and loopback plugins program against."""

from __future__ import annotations

from abc import ABC, abstractmethod

from cni_plugin import posix_shim as posix_shim
from cni_spec import ipnet
from cni_spec.errors import CNIError, internal
from cni_spec.types import IPConfig, Record, Route

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Link(Record):
    __slots__ = ("addrs", "attachment", "container_id", "hairpin", "ifindex", "kind", "mac",
                 "master", "mtu",
                 "name", "network", "peer_ifindex", "peer_name", "peer_netns", "promisc", "up",
                 "vlan")

    def __init__(self, name: str, kind: str, mac: str = "", mtu: int = 1500, up: bool = False,
                 promisc: bool = False, master: str = "", hairpin: bool = False, vlan: int = 0,
                 peer_netns: str = "", peer_name: str = "", addrs: list[str] | None = None,
                 ifindex: int = 0, peer_ifindex: int = 0, network: str = "",
                 container_id: str = "", attachment: str = "") -> None:
        self.name = name
        self.kind = kind                # bridge | veth | loopback
        self.mac = mac
        self.mtu = mtu
        self.up = up
        self.promisc = promisc
        self.master = master            # the bridge a port is attached to
        self.hairpin = hairpin
        self.vlan = vlan
        self.peer_netns = peer_netns    # for a veth: where its peer lives ("" = host)
        self.peer_name = peer_name
        self.addrs: list[str] = list(addrs or [])  # CIDRs, e.g. "10.1.0.2/24"
        self.ifindex = ifindex          # linux only: kernel index, and the veth peer's index
        self.peer_ifindex = peer_ifindex
        self.network = network          # emulated only: the attachment (network, container
        self.container_id = container_id  # id) whose ADD made the link, for DEL and GC
        self.attachment = attachment    # emulated lo: the CNI_IFNAME it was brought up for

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Link:
        return cls(**d)


class RouteEntry(Record):
    __slots__ = ("dev", "dst", "gw")

    def __init__(self, dst: str, gw: str = "", dev: str = "") -> None:
        self.dst = dst
        self.gw = gw
        self.dev = dev


class NetnsNotFound(CNIError):
    """CNI_NETNS names nothing; DEL treats this as success, ADD/CHECK fail with it."""

    def __init__(self, netns: str) -> None:
        super().__init__(999, f'failed to open netns "{netns}": failed to Statfs "{netns}": '
                              "no such file or directory")


class LinkExists(CNIError):
    def __init__(self, ifname: str) -> None:
        super().__init__(999, f"container veth name provided ({ifname}) already exists")


def random_mac() -> str:
    """A random locally administered unicast MAC, as the kernel gives a new veth."""
    octets = bytearray(posix_shim.urandom(6))
    octets[0] = (octets[0] & 0xFE) | 0x02
    return ":".join(f"{b:02x}" for b in octets)


def random_veth_name() -> str:
    return "veth" + posix_shim.urandom(4).hex()


class StepGroup:
    """What ``with dataplane.batch():`` returns: the changes made inside the block belong
    to one command. By default each change is applied when asked (a kernel has nothing to
    group); the emulated dataplane writes them all in one transaction at the end."""

    # True when a block that raises has written none of its changes (nothing to undo).
    all_or_nothing = False

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class Dataplane(ABC):
    """Host namespace is addressed as netns None; sandboxes by their CNI_NETNS path."""

    def batch(self) -> StepGroup:
        """Group the changes of one command (see StepGroup); a read made inside the block
        may not see them before it ends."""
        return StepGroup()

    @abstractmethod
    def require_netns(self, netns: str) -> None:
        """Raise NetnsNotFound when the path does not exist."""

    @abstractmethod
    def ensure_bridge(self, name: str, mtu: int, promisc: bool, vlan_filtering: bool) -> Link:
        """Create the bridge if absent, set it up; error if the name is not a bridge."""

    @abstractmethod
    def get_link(self, netns: str | None, name: str) -> Link | None: ...

    @abstractmethod
    def links(self, netns: str | None) -> list[Link]: ...

    @abstractmethod
    def routes(self, netns: str | None) -> list[RouteEntry]: ...

    @abstractmethod
    def add_veth(self, netns: str, ifname: str, mtu: int, mac: str, bridge: str,
                 hairpin: bool, vlan: int,
                 preserve_default_vlan: bool = False) -> tuple[Link, Link]:
        """A veth pair: `ifname` in the sandbox, a random vethXXXXXXXX on `bridge`
        (with `vlan` as its untagged PVID, dropping the default VLAN 1 unless preserved).

        Returns (host end, container end). LinkExists if `ifname` is taken.
        """

    @abstractmethod
    def configure_iface(self, netns: str, ifname: str, ips: list[IPConfig],
                        routes: list[Route], enable_dad: bool) -> None:
        """Addresses, link up, then routes (gateway defaulted from the IPs) in the sandbox."""

    @abstractmethod
    def set_up(self, netns: str | None, name: str) -> None: ...

    @abstractmethod
    def ensure_addr(self, name: str, cidr: str, force: bool) -> None:
        """Give a host link (the bridge) a gateway address, as the reference's ensureAddr."""

    @abstractmethod
    def enable_forwarding(self, ipv6: bool) -> None: ...

    @abstractmethod
    def setup_masquerade(self, cidr: str, chain: str, comment: str) -> None: ...

    @abstractmethod
    def teardown_masquerade(self, chain: str) -> None:
        """Remove the chain and every POSTROUTING jump to it (IPv4 and IPv6); absent is fine."""

    @abstractmethod
    def delete_link(self, netns: str, ifname: str) -> list[str] | None:
        """Delete a sandbox link (and its veth peer); its global addresses, None if absent.

        NetnsNotFound when the sandbox is gone.
        """

    @abstractmethod
    def delete_host_link(self, name: str) -> None:
        """Remove a host link if present (used to undo a failed ADD)."""

    @abstractmethod
    def loopback_up(self, netns: str, ifname: str = "lo") -> list[str]:
        """Bring lo up in the sandbox; its addresses (127.0.0.1/8, ::1/128). ``ifname``:
        the attachment's CNI_IFNAME (a runtime lists attachments by it)."""

    @abstractmethod
    def loopback_down(self, netns: str) -> None: ...

    @abstractmethod
    def setup_macspoofchk(self, host_iface: str, mac: str, ref_id: str) -> None:
        """Drop frames from `host_iface` whose source MAC is not `mac` (nft bridge nat)."""

    @abstractmethod
    def teardown_macspoofchk(self, ref_id: str) -> None:
        """Remove the rules set up under `ref_id`; absent is fine."""

    def wait_port_up(self, name: str) -> None:  # noqa: B027 - nothing to wait for by default
        """Wait until the host end of a veth is operationally up (the reference retries
        for about 2.5 s and then fails with "bridge port in error state")."""

    def forget_attachment(self, ifname: str) -> None:  # noqa: B027 - a no-op by default
        """DEL with no sandbox to enter (CNI_NETNS empty, or the namespace is gone): drop
        what this attachment left on `ifname`. A kernel drops a deleted namespace's links
        by itself, so only the emulated dataplane has work here."""

    def collect_garbage(self, valid: list[tuple[str, str]]) -> None:  # noqa: B027 - no-op
        """GC: forget what belongs to sandboxes that no longer exist and to this network's
        attachments not in `valid` (container id, ifname). The kernel does the first by
        itself for real namespaces, so only the emulated dataplane has work here."""


def ensure_addr_conflicts(existing: list[str], cidr: str) -> list[str]:
    """The addresses that stand in the way of adding `cidr` (reference ensureAddr rules):
    any other IPv4 address, or an IPv6 address whose subnet overlaps. [] if `cidr` is there.
    """
    if cidr in existing:
        return []
    new_family = ipnet.parse_cidr(cidr)[0]
    new_ip = cidr.split("/")[0]
    conflicts = []
    for have in existing:
        if ipnet.parse_cidr(have)[0] != new_family:
            continue
        if new_family == 4 or ipnet.contains(have, new_ip) or \
                ipnet.contains(cidr, have.split("/")[0]):
            conflicts.append(have)
    return conflicts


def conflict_error(bridge: str, cidr: str) -> CNIError:
    return internal(f'"{bridge}" already has an IP address different from {cidr}')
