"""The two ranges a Service draws from, as kube-apiserver's allocators keep them: cluster
IPs from ``--service-cluster-ip-range`` and node ports from ``--service-node-port-range``.

Both are bitmaps in kube-apiserver; here a set of taken offsets. A request for a given
value takes it or fails (:class:`AlreadyAllocated`, :class:`NotInRange`, with the
allocators' words); a request for any value picks one at random, first from the upper
part of the range and only then from the lower part, which is left for values users
ask for (kube-apiserver's static subrange: a sixteenth of the range, at least 16 and at
most 256 for IPs, 128 for ports). The network and broadcast addresses are never given.
"""

from __future__ import annotations

import contextlib
import ipaddress
import random

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_SERVICE_CIDR = "10.96.0.0/12"  # kube-apiserver's --service-cluster-ip-range default
DEFAULT_NODE_PORTS = "30000-32767"  # its --service-node-port-range default


class AllocationError(Exception):
    """A value could not be taken; the text is the allocator's."""


class AlreadyAllocated(AllocationError):
    pass


class NotInRange(AllocationError):
    pass


class RangeFull(AllocationError):
    pass


def _static_band(size: int, largest: int) -> int:
    """How many values at the start of a range are kept for explicit requests."""
    if size <= 16:
        return 0
    return max(16, min(size // 16, largest))


class _Offsets:
    """Taken offsets in ``[0, size)``, with kube's two-part random pick."""

    def __init__(self, size: int, band: int, rng: random.Random) -> None:
        self.size, self.band, self._rng = size, band, rng
        self.taken: set[int] = set()

    def next_free(self) -> int:
        for lo, hi in ((self.band, self.size), (0, self.band)):
            if hi <= lo:
                continue
            start = self._rng.randrange(lo, hi)
            for step in range(hi - lo):
                offset = lo + (start - lo + step) % (hi - lo)
                if offset not in self.taken:
                    return offset
        raise RangeFull("range is full")


class ClusterIPRange:
    """The cluster IPs of one CIDR."""

    def __init__(self, cidr: str = DEFAULT_SERVICE_CIDR, rng: random.Random | None = None):
        self.network: IPNetwork = ipaddress.ip_network(cidr, strict=False)
        # the network address is never given, nor an IPv4 broadcast address
        size = self.network.num_addresses - (2 if self.network.version == 4 else 1)
        self._offsets = _Offsets(max(size, 0), _static_band(size, 256), rng or random.Random())

    @property
    def cidr(self) -> str:
        return str(self.network)

    @property
    def family(self) -> str:
        return "IPv4" if self.network.version == 4 else "IPv6"

    def first(self) -> str:
        """The first usable address: the ``kubernetes`` Service's."""
        return str(self.network.network_address + 1)

    def _offset(self, ip: str) -> int:
        address = ipaddress.ip_address(ip)
        offset = int(address) - int(self.network.network_address) - 1
        if address not in self.network or not 0 <= offset < self._offsets.size:
            raise NotInRange(f"the provided IP ({ip}) is not in the valid range. The range of "
                             f"valid IPs is {self.cidr}")
        return offset

    def contains(self, ip: str) -> bool:
        try:
            self._offset(ip)
        except (NotInRange, ValueError):
            return False
        return True

    def allocate(self, ip: str) -> None:
        offset = self._offset(ip)
        if offset in self._offsets.taken:
            raise AlreadyAllocated("provided IP is already allocated")
        self._offsets.taken.add(offset)

    def allocate_next(self) -> str:
        offset = self._offsets.next_free()
        self._offsets.taken.add(offset)
        return str(self.network.network_address + 1 + offset)

    def release(self, ip: str) -> None:
        with contextlib.suppress(NotInRange, ValueError):
            self._offsets.taken.discard(self._offset(ip))

    def allocated(self) -> list[str]:
        base = self.network.network_address + 1
        return [str(base + offset) for offset in sorted(self._offsets.taken)]


def parse_port_range(text: str) -> tuple[int, int]:
    """``30000-32767`` (or one port) → (first, last); ValueError when it is not one."""
    first, sep, last = text.partition("-")
    low, high = int(first), int(last if sep else first)
    if not 0 < low <= high <= 65535:
        raise ValueError(f"invalid port range {text!r}")
    return low, high


class NodePortRange:
    """The node ports of ``--service-node-port-range``."""

    def __init__(self, ports: str = DEFAULT_NODE_PORTS, rng: random.Random | None = None):
        self.low, self.high = parse_port_range(ports)
        size = self.high - self.low + 1
        self._offsets = _Offsets(size, _static_band(size, 128), rng or random.Random())

    @property
    def text(self) -> str:
        return f"{self.low}-{self.high}"

    def _offset(self, port: int) -> int:
        if not self.low <= port <= self.high:
            raise NotInRange("provided port is not in the valid range. The range of valid "
                             f"ports is {self.text}")
        return port - self.low

    def allocate(self, port: int) -> None:
        offset = self._offset(port)
        if offset in self._offsets.taken:
            raise AlreadyAllocated("provided port is already allocated")
        self._offsets.taken.add(offset)

    def allocate_next(self) -> int:
        offset = self._offsets.next_free()
        self._offsets.taken.add(offset)
        return self.low + offset

    def is_allocated(self, port: int) -> bool:
        return self.low <= port <= self.high and port - self.low in self._offsets.taken

    def release(self, port: int) -> None:
        if self.low <= port <= self.high:
            self._offsets.taken.discard(port - self.low)

    def allocated(self) -> list[int]:
        return [self.low + offset for offset in sorted(self._offsets.taken)]


def service_range_problem(cidr: str, node_ports: str) -> str:
    """Why kube-apiserver would refuse these ``--service-cluster-ip-range`` and
    ``--service-node-port-range`` values ('' when it would not)."""
    try:
        network = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return f"--service-cluster-ip-range {cidr!r} is not a CIDR"
    # kube-apiserver's limit: at most 20 host bits (a /12 of IPv4, a /108 of IPv6)
    smallest = network.max_prefixlen - 20
    if network.prefixlen < smallest:
        return (f"specified --service-cluster-ip-range {cidr} is too large; for "
                f"{network.max_prefixlen}-bit addresses, the mask must be >= {smallest}")
    if network.num_addresses < 4 and network.version == 4:
        return f"--service-cluster-ip-range {cidr} holds no address to give"
    try:
        parse_port_range(node_ports)
    except ValueError:
        return f"--service-node-port-range {node_ports!r} is not FIRST-LAST (1-65535)"
    return ""
