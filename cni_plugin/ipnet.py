"""Minimal IP address arithmetic on ints, with text as Go prints it.

The plugins need only parsing, canonical text, network/gateway and containment;
the ipaddress module costs several milliseconds of start-up for that, so this
uses the C socket helpers directly.
"""

from __future__ import annotations

from _socket import AF_INET, AF_INET6, inet_ntop, inet_pton

BITS = {4: 32, 6: 128}


def parse_ip(text: str) -> tuple[int, int]:
    """(family, value); ValueError when `text` is not an IPv4 or IPv6 address."""
    if not isinstance(text, str):
        raise ValueError(f"invalid IP address: {text!r}")
    try:
        if ":" in text:
            return 6, int.from_bytes(inet_pton(AF_INET6, text), "big")
        return 4, int.from_bytes(inet_pton(AF_INET, text), "big")
    except OSError:
        raise ValueError(f"invalid IP address: {text!r}") from None


def format_ip(family: int, value: int) -> str:
    if family == 4:
        return inet_ntop(AF_INET, value.to_bytes(4, "big"))
    return inet_ntop(AF_INET6, value.to_bytes(16, "big"))


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
