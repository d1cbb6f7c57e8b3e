"""Allocate one address from a range set, round-robin, as the reference host-local.

The walk starts after the range set's last reserved address and wraps once.
Addresses already leased are skipped without touching the store, and a full
range set is detected by counting leases, so a /8 or an IPv6 /64 costs the
number of leases, never the size of the range. The caller holds the store's
lock for the whole command.
"""

from __future__ import annotations

from cni_plugin.ipam.addr import IP, try_parse_ip
from cni_plugin.ipam.ranges import Range, RangeSet, iterate_candidates
from cni_plugin.ipam.store import Lease

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cni_plugin.ipam.store import Store


class AllocationError(Exception):
    """ADD cannot lease an address; str() is the reference's message."""


class Allocation:
    __slots__ = ("ip", "range")

    def __init__(self, ip: IP, range_: Range) -> None:
        self.ip, self.range = ip, range_

    @property
    def address(self) -> str:
        """CIDR notation with the range's prefix, as in a CNI result."""
        return self.range.net.with_address(self.ip)

    @property
    def gateway(self) -> IP | None:
        return self.range.gateway


class Allocator:
    def __init__(self, ranges: RangeSet, store: Store, index: int) -> None:
        self.ranges = ranges
        self.store = store
        self.range_id = str(index)

    def get(
        self, container_id: str, ifname: str, requested: IP | None, leases: list[Lease]
    ) -> Allocation:
        """Lease an address; ``leases`` is the network's current leases, updated in place."""
        if requested is not None:
            allocation = self._get_requested(container_id, ifname, requested)
        else:
            allocation = self._get_next(container_id, ifname, leases)
        leases.append(Lease(str(allocation.ip), container_id.strip(), ifname))
        return allocation

    def _get_requested(self, container_id: str, ifname: str, requested: IP) -> Allocation:
        r = self.ranges.range_for(requested)
        if r is None:
            raise AllocationError(f"{requested} not in range set {self.ranges}")
        if requested == r.gateway:
            raise AllocationError(f"requested ip {requested} is subnet's gateway")
        if not self.store.reserve(container_id, ifname, str(requested), self.range_id):
            raise AllocationError(
                f"requested IP address {requested} is not available in range set {self.ranges}"
            )
        return Allocation(requested, r)

    def _get_next(self, container_id: str, ifname: str, leases: list[Lease]) -> Allocation:
        for lease in sorted(_leases_of(leases, container_id, ifname), key=lambda x: x.ip):
            ip = try_parse_ip(lease.ip)
            if ip is not None and self.ranges.contains(ip):
                raise AllocationError(
                    f"{ip} has been allocated to {container_id}, "
                    "duplicate allocation is not allowed"
                )
        used = self._leased_in_set(leases)
        if len(used) < self.ranges.allocatable_count():
            last = self._last_reserved()
            for r, candidate in iterate_candidates(self.ranges, last):
                if candidate in used:
                    continue
                if self.store.reserve(container_id, ifname, str(candidate), self.range_id):
                    return Allocation(candidate, r)
        raise AllocationError(f"no IP addresses available in range set: {self.ranges}")

    def _leased_in_set(self, leases: list[Lease]) -> set[IP]:
        used: set[IP] = set()
        for lease in leases:
            ip = try_parse_ip(lease.ip)
            if ip is None:
                continue
            r = self.ranges.range_for(ip)
            if r is not None and ip != r.gateway:
                used.add(ip)
        return used

    def _last_reserved(self) -> IP | None:
        # A stale or unreadable value only costs round-robin order this once.
        text = self.store.last_reserved_ip(self.range_id)
        return try_parse_ip(text) if text is not None else None

    def release(self, container_id: str, ifname: str) -> list[str]:
        return self.store.release_by_id(container_id, ifname)


def _leases_of(leases: list[Lease], container_id: str, ifname: str) -> list[Lease]:
    # The duplicate check accepts both the exact and the legacy id-only form.
    cid = container_id.strip()
    return [
        lease
        for lease in leases
        if lease.container_id == cid and lease.ifname in (ifname, None)
    ]


__all__ = ["Allocation", "AllocationError", "Allocator"]
