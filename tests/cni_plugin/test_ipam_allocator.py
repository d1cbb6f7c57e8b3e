"""The allocator against the in-memory store: order, requests, duplicates, exhaustion."""

from __future__ import annotations

import pytest

from cni_plugin.ipam.addr import parse_ip
from cni_plugin.ipam.allocator import AllocationError, Allocator
from cni_plugin.ipam.gc import collect_garbage
from cni_plugin.ipam.ranges import Range, RangeSet
from cni_plugin.ipam.store import MemoryStore


def range_set(*subnets: str, **fields: str) -> RangeSet:
    rs = RangeSet([Range.from_json({"subnet": s, **fields}) for s in subnets])
    rs.canonicalize()
    return rs


def allocate(store: MemoryStore, rs: RangeSet, cid: str, ifname: str = "eth0",
             requested: str | None = None, index: int = 0) -> str:
    store.lock()
    try:
        ip = parse_ip(requested) if requested else None
        return Allocator(rs, store, index).get(cid, ifname, ip, store.leases()).address
    finally:
        store.unlock()


def release(store: MemoryStore, rs: RangeSet, cid: str, ifname: str = "eth0") -> list[str]:
    store.lock()
    try:
        return Allocator(rs, store, 0).release(cid, ifname)
    finally:
        store.unlock()


def test_first_lease_is_the_address_after_the_gateway() -> None:
    store = MemoryStore()
    assert allocate(store, range_set("10.1.2.0/24"), "c1") == "10.1.2.2/24"


def test_leases_go_round_robin_and_do_not_reuse_a_just_released_address() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/24")
    assert allocate(store, rs, "c1") == "10.1.2.2/24"
    release(store, rs, "c1")
    assert allocate(store, rs, "c2") == "10.1.2.3/24"
    assert store.last_reserved_ip("0") == "10.1.2.3"


def test_allocation_wraps_to_the_start_after_the_range_end() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/29")
    store.last_reserved["0"] = "10.1.2.6"
    assert allocate(store, rs, "c1") == "10.1.2.2/29"


def test_requested_address_is_leased_with_the_subnet_prefix() -> None:
    store = MemoryStore()
    assert allocate(store, range_set("10.1.2.0/24"), "c1", requested="10.1.2.77") == "10.1.2.77/24"


def test_requested_gateway_is_refused() -> None:
    with pytest.raises(AllocationError, match=r"^requested ip 10\.1\.2\.1 is subnet's gateway$"):
        allocate(MemoryStore(), range_set("10.1.2.0/24"), "c1", requested="10.1.2.1")


def test_requested_address_already_leased_is_not_available() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/24")
    allocate(store, rs, "c1", requested="10.1.2.9")
    with pytest.raises(AllocationError) as info:
        allocate(store, rs, "c2", requested="10.1.2.9")
    assert str(info.value) == ("requested IP address 10.1.2.9 is not available in range set "
                               "10.1.2.1-10.1.2.254")


def test_second_allocation_for_the_same_attachment_is_a_duplicate() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/24")
    allocate(store, rs, "c1")
    with pytest.raises(AllocationError) as info:
        allocate(store, rs, "c1")
    assert str(info.value) == ("10.1.2.2 has been allocated to c1, "
                               "duplicate allocation is not allowed")


def test_same_container_on_another_interface_gets_its_own_address() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/24")
    assert allocate(store, rs, "c1", "eth0") == "10.1.2.2/24"
    assert allocate(store, rs, "c1", "net1") == "10.1.2.3/24"
    assert release(store, rs, "c1", "net1") == ["10.1.2.3"]
    assert [lease.ip for lease in store.leases()] == ["10.1.2.2"]


def test_exhausted_range_set_names_the_range() -> None:
    store, rs = MemoryStore(), range_set("10.1.2.0/30")
    allocate(store, rs, "c1")
    with pytest.raises(AllocationError) as info:
        allocate(store, rs, "c2")
    assert str(info.value) == "no IP addresses available in range set: 10.1.2.1-10.1.2.2"


def test_leased_addresses_are_skipped_without_asking_the_store() -> None:
    leases: dict[str, tuple[str, str | None]] = {
        f"10.1.2.{i}": (f"old{i}", "eth0") for i in range(2, 200)}
    store = MemoryStore(leases)
    assert allocate(store, range_set("10.1.2.0/24"), "c1") == "10.1.2.200/24"
    assert store.reserve_calls == 1


def test_a_full_slash_8_is_reported_exhausted_without_walking_it() -> None:
    rs = range_set("10.0.0.0/8", rangeStart="10.0.0.2", rangeEnd="10.0.0.3")
    store = MemoryStore({"10.0.0.2": ("a", "eth0"), "10.0.0.3": ("b", "eth0")})
    with pytest.raises(AllocationError, match="no IP addresses available"):
        allocate(store, rs, "c1")
    assert store.reserve_calls == 0


def test_slash_8_allocation_continues_from_the_last_reserved_address() -> None:
    store, rs = MemoryStore(), range_set("10.0.0.0/8")
    store.last_reserved["0"] = "10.200.3.4"
    assert allocate(store, rs, "c1") == "10.200.3.5/8"
    store.last_reserved["0"] = "10.255.255.254"
    assert allocate(store, rs, "c2") == "10.0.0.2/8"


def test_ipv6_slash_64_allocation_is_immediate() -> None:
    store, rs = MemoryStore(), range_set("fd00:1::/64")
    assert allocate(store, rs, "c1") == "fd00:1::2/64"
    store.last_reserved["0"] = "fd00:1::ffff:ffff:ffff:fffe"
    assert allocate(store, rs, "c2") == "fd00:1::ffff:ffff:ffff:ffff/64"
    assert allocate(store, rs, "c3") == "fd00:1::3/64"


def test_allocation_moves_to_the_next_range_of_the_set_when_one_is_full() -> None:
    store = MemoryStore()
    rs = range_set("10.1.2.0/30", "10.1.3.0/30")
    assert [allocate(store, rs, f"c{i}") for i in range(2)] == ["10.1.2.2/30", "10.1.3.2/30"]


def test_release_of_a_legacy_lease_matches_the_container_id_alone() -> None:
    store = MemoryStore({"10.1.2.5": ("c1", None), "10.1.2.6": ("c2", "eth0")})
    assert release(store, range_set("10.1.2.0/24"), "c1", "eth0") == ["10.1.2.5"]


def test_release_of_unknown_attachment_releases_nothing() -> None:
    store = MemoryStore({"10.1.2.6": ("c2", "eth0")})
    assert release(store, range_set("10.1.2.0/24"), "c9") == []
    assert len(store.leases()) == 1


def test_gc_releases_only_leases_of_attachments_not_listed_as_valid() -> None:
    store = MemoryStore({"10.1.2.2": ("keep", "eth0"), "10.1.2.3": ("keep", "net1"),
                         "10.1.2.4": ("gone", "eth0"), "10.1.2.5": ("legacy", None)})
    store.lock()
    released = collect_garbage(store, {("keep", "eth0"), ("legacy", "eth0")})
    store.unlock()
    assert sorted(released) == ["10.1.2.3", "10.1.2.4"]
    assert sorted(lease.ip for lease in store.leases()) == ["10.1.2.2", "10.1.2.5"]
