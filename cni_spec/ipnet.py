"""Minimal IP address arithmetic on ints, with text as Go prints it.

The plugins need only parsing, canonical text, network/gateway and containment;
the ipaddress module costs several milliseconds of start-up for that, so IPv4
is parsed and printed here (as inet_pton/inet_ntop do) and IPv6 with the C
socket helpers, whose module is loaded only when an IPv6 address comes along.
"""

from __future__ import annotations

BITS = {4: 32, 6: 128}
_DIGITS = frozenset("0123456789")


def parse_ipv4(text: str) -> int | None:
    """Dotted quad as inet_pton(AF_INET) takes it: four decimal octets <= 255, no
    leading zeros, nothing else. None when `text` is not one."""
    parts = text.split(".")
    if len(parts) != 4:
        return None
    value = 0
    for part in parts:
        if not part or len(part) > 3 or not _DIGITS.issuperset(part) or \
                (part[0] == "0" and len(part) > 1):
            return None
        octet = int(part)
        if octet > 255:
            return None
        value = value << 8 | octet
    return value


def format_ipv4(value: int) -> str:
    return f"{value >> 24}.{value >> 16 & 255}.{value >> 8 & 255}.{value & 255}"


def parse_ipv6(text: str) -> int | None:
    """inet_pton(AF_INET6) as an int; None when `text` is not an IPv6 address."""
    from _socket import AF_INET6, inet_pton

    try:
        return int.from_bytes(inet_pton(AF_INET6, text), "big")
    except (OSError, ValueError):  # ValueError: NUL or text that is not encodable
        return None


def format_ipv6_ntop(value: int) -> str:
    from _socket import AF_INET6, inet_ntop

    return inet_ntop(AF_INET6, value.to_bytes(16, "big"))


def parse_ip(text: str) -> tuple[int, int]:
    """(family, value); ValueError when `text` is not an IPv4 or IPv6 address."""
    if not isinstance(text, str):
        raise ValueError(f"invalid IP address: {text!r}")
    family, value = (6, parse_ipv6(text)) if ":" in text else (4, parse_ipv4(text))
    if value is None:
        raise ValueError(f"invalid IP address: {text!r}")
    return family, value


def format_ip(family: int, value: int) -> str:
    if family == 4:
        return format_ipv4(value)
    return format_ipv6_ntop(value)


def parse_cidr(text: str) -> tuple[int, int, int]:
    """(family, address, prefix length) of "addr/len"; host bits are kept."""
    if not isinstance(text, str) or text.count("/") != 1:
        raise ValueError(f"invalid CIDR address: {text!r}")
    addr, _, length = text.partition("/")
    family, value = parse_ip(addr)
    if not length.isdigit() or int(length) > BITS[family]:
        raise ValueError(f"invalid CIDR address: {text!r}")
    return family, value, int(length)


def netmask(family: int, prefix: int) -> int:
    bits = BITS[family]
    return ((1 << bits) - 1) ^ ((1 << (bits - prefix)) - 1)


def canonical_ip(text: str) -> str:
    return format_ip(*parse_ip(text))


def canonical_cidr(text: str) -> str:
    family, value, prefix = parse_cidr(text)
    return f"{format_ip(family, value)}/{prefix}"


def network_of(cidr: str) -> str:
    """The subnet of an address: 10.1.2.3/24 -> 10.1.2.0/24."""
    family, value, prefix = parse_cidr(cidr)
    return f"{format_ip(family, value & netmask(family, prefix))}/{prefix}"


def first_host(cidr: str) -> str:
    """Network address + 1: the reference's default gateway."""
    family, value, prefix = parse_cidr(cidr)
    return format_ip(family, (value & netmask(family, prefix)) + 1)


def contains(cidr: str, ip: str) -> bool:
    family, value, prefix = parse_cidr(cidr)
    other_family, other = parse_ip(ip)
    mask = netmask(family, prefix)
    return family == other_family and (value & mask) == (other & mask)


def is_link_local_or_loopback(cidr_or_ip: str) -> bool:
    family, value = parse_ip(cidr_or_ip.split("/")[0])
    if family == 4:
        return value >> 24 == 127 or value >> 16 == 0xA9FE
    return value == 1 or value >> 118 == 0x3FA  # ::1, fe80::/10
