"""Ranges and range sets: validation and membership as the reference host-local does.

A range is a subnet with an inclusive [range_start, range_end] and a gateway.
Missing fields default as the reference's Canonicalize: gateway = subnet+1,
start = subnet+1 (the gateway is skipped when allocating), end = the last
address (minus the broadcast for IPv4). /31 and /32 (IPv6 /127 and /128) are
too small. A range set is one or more ranges of one family; one address is
allocated per range set.
"""

from __future__ import annotations

from cni_plugin.ipam.addr import CIDR, IP, parse_cidr, parse_ip

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence


class RangeError(ValueError):
    """A range or range set that cannot be allocated from (reference wording)."""


class Range:
    __slots__ = ("gateway", "range_end", "range_start", "subnet")

    def __init__(self, subnet: CIDR | None, range_start: IP | None = None,
                 range_end: IP | None = None, gateway: IP | None = None) -> None:
        self.subnet = subnet
        self.range_start = range_start
        self.range_end = range_end
        self.gateway = gateway

    @classmethod
    def from_json(cls, raw: object) -> Range:
        """Decode one range object (field errors worded like Go's decoder)."""
        if not isinstance(raw, dict):
            raise RangeError(
                f"json: cannot unmarshal {json_kind(raw)} into Go value of type allocator.Range"
            )
        subnet_text = raw.get("subnet")
        if subnet_text is not None and not isinstance(subnet_text, str):
            raise RangeError(
                f"json: cannot unmarshal {json_kind(subnet_text)} into Go value of type string"
            )
        return cls(
            parse_cidr(subnet_text) if subnet_text is not None else None,
            _optional_ip(raw, "rangeStart"),
            _optional_ip(raw, "rangeEnd"),
            _optional_ip(raw, "gateway"),
        )

    def canonicalize(self) -> None:
        """Fill defaults and validate, raising the reference's messages."""
        subnet = self.subnet
        if subnet is None:
            raise RangeError("IP <nil> not v4 nor v6")
        bits = subnet.ip.bits
        if subnet.mapped:
            raise RangeError("IPNet IP and Mask version mismatch")
        if subnet.prefix > bits - 2:
            raise RangeError(f"Network {_go_ipnet(subnet)} too small to allocate from")
        network = subnet.network
        if network != subnet.ip:
            raise RangeError(
                "Network has host bits set. For a subnet mask of length "
                f"{subnet.prefix} the network address is {network}"
            )
        self.subnet = CIDR(network, subnet.prefix)
        if self.gateway is None:
            self.gateway = network.offset(1)
        if self.range_start is not None:
            if not self.contains(self.range_start):
                raise RangeError(f"RangeStart {self.range_start} not in network {self.subnet}")
        else:
            self.range_start = network.offset(1)
        if self.range_end is not None:
            if not self.contains(self.range_end):
                raise RangeError(f"RangeEnd {self.range_end} not in network {self.subnet}")
        else:
            last = self.subnet.last
            self.range_end = last.offset(-1) if last.version == 4 else last

    @property
    def start(self) -> IP:
        assert self.range_start is not None, "range used before canonicalize()"
        return self.range_start

    @property
    def end(self) -> IP:
        assert self.range_end is not None, "range used before canonicalize()"
        return self.range_end

    @property
    def net(self) -> CIDR:
        assert self.subnet is not None, "range used before canonicalize()"
        return self.subnet

    def contains(self, ip: IP) -> bool:
        if self.subnet is None or not self.subnet.contains(ip):
            return False
        if self.range_start is not None and ip.value < self.range_start.value:
            return False
        return not (self.range_end is not None and ip.value > self.range_end.value)

    def overlaps(self, other: Range) -> bool:
        if self.start.version != other.start.version:
            return False
        return (
            self.contains(other.start)
            or self.contains(other.end)
            or other.contains(self.start)
            or other.contains(self.end)
        )

    def allocatable_count(self) -> int:
        """Addresses the allocator may hand out (the gateway is never leased)."""
        count = self.end.value - self.start.value + 1
        if self.gateway is not None and self.contains(self.gateway):
            count -= 1
        return max(count, 0)

    def __str__(self) -> str:
        return f"{self.start}-{self.end}"


class RangeSet:
    """One or more ranges of a single family; one address is leased per set."""

    __slots__ = ("ranges",)

    def __init__(self, ranges: Sequence[Range]) -> None:
        self.ranges = list(ranges)

    def __iter__(self) -> Iterator[Range]:
        return iter(self.ranges)

    def __len__(self) -> int:
        return len(self.ranges)

    def __getitem__(self, index: int) -> Range:
        return self.ranges[index]

    @property
    def version(self) -> int:
        return self.ranges[0].start.version

    def canonicalize(self) -> None:
        if not self.ranges:
            raise RangeError("empty range set")
        family = 0
        for index, r in enumerate(self.ranges):
            r.canonicalize()
            if index == 0:
                family = r.start.version
            elif r.start.version != family:
                raise RangeError("mixed address families")
        for i, first in enumerate(self.ranges[:-1]):
            for second in self.ranges[i + 1 :]:
                if first.overlaps(second):
                    raise RangeError(f"subnets {first} and {second} overlap")

    def range_for(self, ip: IP) -> Range | None:
        for r in self.ranges:
            if r.contains(ip):
                return r
        return None

    def contains(self, ip: IP) -> bool:
        return self.range_for(ip) is not None

    def overlaps(self, other: RangeSet) -> bool:
        return any(a.overlaps(b) for a in self.ranges for b in other.ranges)

    def allocatable_count(self) -> int:
        return sum(r.allocatable_count() for r in self.ranges)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.ranges)


def iterate_candidates(ranges: RangeSet, last_reserved: IP | None) -> Iterator[tuple[Range, IP]]:
    """Yield addresses in the reference's round-robin order, lazily.

    Start just after ``last_reserved`` when it lies in the set (else at the
    first range's start), walk to each range's end, wrap to the next range,
    stop on returning to the first address tried; skip gateways.
    """
    index = 0
    current: int | None = None
    if last_reserved is not None:
        for i, r in enumerate(ranges):
            if r.contains(last_reserved):
                index, current = i, last_reserved.value
                break
    first_tried: int | None = None
    count = len(ranges)
    while True:
        r = ranges[index]
        if current is None:
            current = r.start.value
            first_tried = current
        else:
            if current == r.end.value:
                index = (index + 1) % count
                r = ranges[index]
                current = r.start.value
            else:
                current += 1
            if first_tried is None:
                first_tried = current
            elif current == first_tried:
                return
        candidate = IP(r.start.version, current)
        if candidate == r.gateway:
            continue
        yield r, candidate


def json_kind(value: object) -> str:
    """The JSON type name Go's decoder uses in its messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _optional_ip(raw: dict[str, object], key: str) -> IP | None:
    value = raw.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RangeError(
            f"json: cannot unmarshal {json_kind(value)} into Go struct field "
            f"Range.{key} of type net.IP"
        )
    return parse_ip(value)


def _go_ipnet(subnet: CIDR) -> str:
    # Go prints the IPNet as given (address with host bits, then prefix).
    return f"{subnet.ip}/{subnet.prefix}"


def parse_range_set(raw: object, where: str) -> RangeSet:
    """Decode a JSON array of range objects."""
    if not isinstance(raw, list):
        raise RangeError(
            f"json: cannot unmarshal {json_kind(raw)} into Go struct field {where} "
            "of type allocator.RangeSet"
        )
    return RangeSet([Range.from_json(item) for item in raw])
