"""IP address and CIDR parsing that accepts and rejects what Go's net package does.

Addresses are handled as (version, int) internally so arithmetic on a /8 or an
IPv6 /64 never builds a list. Parsing is ipnet's (inet_pton's rules, which
accept and reject exactly what ``ipaddress`` does once zones and surrounding
space are refused) and IPv6 is printed here, as ``ipaddress`` prints: importing
``ipaddress`` would cost more start-up than all of host-local's work.
IPv4-mapped IPv6 addresses are folded to IPv4, as the reference's
canonicalizeIP does.
"""

from __future__ import annotations

from cni_spec.ipnet import format_ipv4, parse_ipv4, parse_ipv6


class IPParseError(ValueError):
    """Text that is not an address/CIDR; str() is worded as Go's ParseError."""


class IP:
    """An address of one family; hashable and ordered within a family."""

    __slots__ = ("value", "version")

    def __init__(self, version: int, value: int) -> None:
        self.version = version
        self.value = value

    @property
    def bits(self) -> int:
        return 32 if self.version == 4 else 128

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, IP) and self.version == other.version and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((self.version, self.value))

    def __repr__(self) -> str:
        return f"IP({self})"

    def __str__(self) -> str:
        if self.version == 4:
            return format_ipv4(self.value)
        return format_ipv6(self.value)

    def offset(self, delta: int) -> IP:
        return IP(self.version, self.value + delta)


def format_ipv6(value: int) -> str:
    """RFC 5952 text as ipaddress.IPv6Address prints it: lowercase hex groups, the
    first longest run of two or more zero groups written "::", no dotted quad."""
    groups = [(value >> shift) & 0xFFFF for shift in range(112, -1, -16)]
    best_start, best_len, start = -1, 1, -1
    for i, group in enumerate([*groups, 1]):  # the sentinel ends a trailing run
        if group == 0:
            if start < 0:
                start = i
        elif start >= 0:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = -1
    text = [f"{g:x}" for g in groups]
    if best_start < 0:
        return ":".join(text)
    head = ":".join(text[:best_start])
    tail = ":".join(text[best_start + best_len:])
    return f"{head}::{tail}"


_MAPPED_PREFIX = 0xFFFF << 32


def _parse_address(text: str) -> IP | None:
    # Go rejects zones ("fe80::1%eth0") in ParseIP; Python would accept them.
    if not text or "%" in text or text.strip() != text:
        return None
    if ":" not in text:
        v4 = parse_ipv4(text)
        return IP(4, v4) if v4 is not None else None
    value = parse_ipv6(text)
    if value is None:
        return None
    if value >> 32 == 0xFFFF:  # ::ffff:a.b.c.d
        return IP(4, value ^ _MAPPED_PREFIX)
    return IP(6, value)


def parse_ip(text: str) -> IP:
    """Parse an address as Go's net.ParseIP; raise with net.ParseError's words."""
    ip = _parse_address(text)
    if ip is None:
        raise IPParseError(f"invalid IP address: {text}")
    return ip


def try_parse_ip(text: str) -> IP | None:
    return _parse_address(text)


class CIDR:
    """An address with a prefix length (the address may have host bits set)."""

    __slots__ = ("ip", "mapped", "prefix")

    def __init__(self, ip: IP, prefix: int, mapped: bool = False) -> None:
        self.ip = ip
        self.prefix = prefix
        # True when written as an IPv4-mapped IPv6 address: the mask is then
        # 16 bytes long while the address folds to 4 (Go reports a mismatch).
        self.mapped = mapped

    @property
    def mask(self) -> int:
        bits = self.ip.bits
        return ((1 << bits) - 1) ^ ((1 << (bits - self.prefix)) - 1)

    @property
    def network(self) -> IP:
        return IP(self.ip.version, self.ip.value & self.mask)

    @property
    def last(self) -> IP:
        bits = self.ip.bits
        host = (1 << (bits - self.prefix)) - 1
        return IP(self.ip.version, (self.ip.value & self.mask) | host)

    def contains(self, ip: IP) -> bool:
        return ip.version == self.ip.version and (ip.value & self.mask) == self.network.value

    def __str__(self) -> str:
        return f"{self.network}/{self.prefix}"

    def with_address(self, ip: IP) -> str:
        return f"{ip}/{self.prefix}"


def parse_cidr(text: str) -> CIDR:
    """Parse "addr/prefix" as Go's net.ParseCIDR (keeping the given address)."""
    addr, sep, prefix_text = text.partition("/")
    error = IPParseError(f"invalid CIDR address: {text}")
    if not sep or not prefix_text.isascii() or not prefix_text.isdigit():
        raise error
    mapped = False
    if ":" in addr:
        raw = _parse_address(addr)
        mapped = raw is not None and raw.version == 4
        max_bits = 128
    else:
        raw = _parse_address(addr)
        max_bits = 32
    prefix = int(prefix_text)
    if raw is None or prefix > max_bits:
        raise error
    if mapped:
        # Keep the family Go keeps: the mask is an IPv6 one.
        return CIDR(raw, max(0, prefix - 96), mapped=True)
    return CIDR(raw, prefix)
