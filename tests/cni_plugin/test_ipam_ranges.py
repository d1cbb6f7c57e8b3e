"""Ranges and range sets: defaults, validation messages and round-robin order."""

from __future__ import annotations

import itertools

import pytest

from cni_plugin.ipam.addr import IPParseError, parse_cidr, parse_ip
from cni_plugin.ipam.ranges import Range, RangeError, RangeSet, iterate_candidates


def make_range(subnet: str, start: str = "", end: str = "", gateway: str = "") -> Range:
    return Range.from_json(
        {"subnet": subnet, "rangeStart": start, "rangeEnd": end, "gateway": gateway}
    )


def canonical(subnet: str, **fields: str) -> Range:
    r = make_range(subnet, **fields)
    r.canonicalize()
    return r


def test_ipv4_range_defaults_gateway_to_first_address_and_excludes_broadcast() -> None:
    r = canonical("10.1.2.0/24")
    assert (str(r.gateway), str(r.start), str(r.end)) == ("10.1.2.1", "10.1.2.1", "10.1.2.254")


def test_ipv6_range_runs_to_the_last_address_of_the_subnet() -> None:
    r = canonical("fd00::/64")
    assert (str(r.gateway), str(r.start), str(r.end)) == (
        "fd00::1", "fd00::1", "fd00::ffff:ffff:ffff:ffff")


@pytest.mark.parametrize("subnet", ["10.1.2.0/31", "10.1.2.0/32", "fd00::/127", "fd00::/128"])
def test_subnets_without_two_host_addresses_are_too_small(subnet: str) -> None:
    with pytest.raises(RangeError, match=f"^Network {subnet} too small to allocate from$"):
        canonical(subnet)


def test_subnet_with_host_bits_names_the_network_address() -> None:
    with pytest.raises(RangeError) as info:
        canonical("10.1.2.1/24")
    assert str(info.value) == ("Network has host bits set. For a subnet mask of length 24 "
                               "the network address is 10.1.2.0")


def test_range_start_outside_subnet_is_rejected() -> None:
    with pytest.raises(RangeError, match=r"^RangeStart 10\.1\.3\.1 not in network 10\.1\.2\.0/24$"):
        canonical("10.1.2.0/24", start="10.1.3.1")


def test_range_end_outside_subnet_is_rejected() -> None:
    with pytest.raises(RangeError, match=r"^RangeEnd 10\.1\.3\.1 not in network 10\.1\.2\.0/24$"):
        canonical("10.1.2.0/24", end="10.1.3.1")


def test_gateway_outside_the_subnet_is_accepted_as_the_reference_does() -> None:
    r = canonical("10.1.2.0/24", gateway="10.9.9.9")
    assert str(r.gateway) == "10.9.9.9" and r.allocatable_count() == 254


def test_range_set_rejects_overlapping_ranges_with_the_reference_message() -> None:
    rs = RangeSet([make_range("10.1.2.0/24"), make_range("10.1.2.0/25")])
    with pytest.raises(RangeError) as info:
        rs.canonicalize()
    assert str(info.value) == "subnets 10.1.2.1-10.1.2.254 and 10.1.2.1-10.1.2.126 overlap"


def test_range_set_rejects_mixed_families() -> None:
    with pytest.raises(RangeError, match=r"^mixed address families$"):
        RangeSet([make_range("10.1.2.0/24"), make_range("fd00::/64")]).canonicalize()


def test_empty_range_set_is_rejected() -> None:
    with pytest.raises(RangeError, match=r"^empty range set$"):
        RangeSet([]).canonicalize()


@pytest.mark.parametrize("text", ["bad", "10.0.0.0", "10.0.0.0/33", "10.0.0.0/", "fd00::/129",
                                  "fe80::%eth0/64"])
def test_malformed_subnets_are_invalid_cidr_addresses(text: str) -> None:
    with pytest.raises(IPParseError, match=f"^invalid CIDR address: {text}$"):
        parse_cidr(text)


@pytest.mark.parametrize("text", ["xx", "10.0.0.256", "010.0.0.1", "fe80::1%eth0", " 10.0.0.1"])
def test_malformed_addresses_are_rejected_like_go(text: str) -> None:
    with pytest.raises(IPParseError, match=r"^invalid IP address: "):
        parse_ip(text)


def test_ipv4_mapped_ipv6_address_is_folded_to_ipv4() -> None:
    assert parse_ip("::ffff:10.1.2.3") == parse_ip("10.1.2.3")


def test_candidates_start_at_range_start_and_skip_the_gateway() -> None:
    rs = RangeSet([make_range("10.1.2.0/29")])
    rs.canonicalize()
    order = [str(ip) for _, ip in iterate_candidates(rs, None)]
    assert order == ["10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5", "10.1.2.6"]


def test_candidates_continue_after_last_reserved_and_wrap_across_ranges() -> None:
    rs = RangeSet([make_range("10.1.2.0/29"), make_range("10.1.3.0/30")])
    rs.canonicalize()
    order = [str(ip) for _, ip in iterate_candidates(rs, parse_ip("10.1.2.5"))]
    assert order == ["10.1.2.6", "10.1.3.2", "10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5"]


def test_candidates_ignore_a_last_reserved_address_outside_the_set() -> None:
    rs = RangeSet([make_range("10.1.2.0/30")])
    rs.canonicalize()
    assert [str(ip) for _, ip in iterate_candidates(rs, parse_ip("192.168.0.9"))] == ["10.1.2.2"]


def test_candidates_of_a_slash_8_are_produced_lazily() -> None:
    rs = RangeSet([make_range("10.0.0.0/8")])
    rs.canonicalize()
    last = parse_ip("10.255.255.250")
    first = [str(ip) for _, ip in itertools.islice(iterate_candidates(rs, last), 6)]
    assert first == ["10.255.255.251", "10.255.255.252", "10.255.255.253", "10.255.255.254",
                     "10.0.0.2", "10.0.0.3"]
    assert rs.allocatable_count() == 2**24 - 3


def test_candidates_of_an_ipv6_slash_64_wrap_at_the_all_ones_address() -> None:
    rs = RangeSet([make_range("fd00::/64")])
    rs.canonicalize()
    last = parse_ip("fd00::ffff:ffff:ffff:fffe")
    first = [str(ip) for _, ip in itertools.islice(iterate_candidates(rs, last), 3)]
    assert first == ["fd00::ffff:ffff:ffff:ffff", "fd00::2", "fd00::3"]
