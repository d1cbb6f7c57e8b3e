"""The lease store behind the allocator, and an in-memory fake for unit tests.

A lease ties one address to an attachment (container id + ifname). Leases
written by very old reference versions carry only the container id
(``ifname`` is None); they match any ifname of that container, and only when
no lease matches the pair exactly, as the reference's store does.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at run time


class Lease:
    __slots__ = ("container_id", "ifname", "ip")

    def __init__(self, ip: str, container_id: str, ifname: str | None) -> None:
        self.ip = ip
        self.container_id = container_id
        self.ifname = ifname

    def __repr__(self) -> str:
        return f"Lease({self.ip!r}, {self.container_id!r}, {self.ifname!r})"


if TYPE_CHECKING:
    # Only for type checking: importing typing costs start-up time on every exec.
    from typing import Protocol

    class Store(Protocol):
        """What the allocator needs; every call but lock()/close() runs under the lock."""

        def lock(self) -> None: ...

        def unlock(self) -> None: ...

        def close(self) -> None: ...

        def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool:
            """Lease ``ip`` unless it is leased already; remember it as last reserved."""
            ...

        def last_reserved_ip(self, range_id: str) -> str | None: ...

        def leases(self) -> list[Lease]:
            """Every lease on this network."""
            ...

        def release(self, ip: str) -> None: ...

        def release_by_id(self, container_id: str, ifname: str) -> list[str]:
            """Drop the attachment's leases; return the addresses released."""
            ...


def matching_leases(leases: list[Lease], container_id: str, ifname: str) -> list[Lease]:
    """Leases of an attachment: exact (id, ifname) matches, else id-only legacy ones."""
    cid = container_id.strip()
    exact = [lease for lease in leases if lease.container_id == cid and lease.ifname == ifname]
    if exact:
        return exact
    return [lease for lease in leases if lease.container_id == cid and lease.ifname is None]


class MemoryStore:
    """A Store kept in a dict; the lock is a re-entrancy check, not a real lock."""

    def __init__(self, leases: dict[str, tuple[str, str | None]] | None = None) -> None:
        self.by_ip: dict[str, tuple[str, str | None]] = dict(leases or {})
        self.last_reserved: dict[str, str] = {}
        self.locked = False
        self.reserve_calls = 0

    def lock(self) -> None:
        assert not self.locked, "store locked twice"
        self.locked = True

    def unlock(self) -> None:
        self.locked = False

    def close(self) -> None:
        self.locked = False

    def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool:
        assert self.locked, "reserve outside the lock"
        self.reserve_calls += 1
        if ip in self.by_ip:
            return False
        self.by_ip[ip] = (container_id.strip(), ifname)
        self.last_reserved[range_id] = ip
        return True

    def last_reserved_ip(self, range_id: str) -> str | None:
        return self.last_reserved.get(range_id)

    def leases(self) -> list[Lease]:
        return [Lease(ip, cid, ifname) for ip, (cid, ifname) in self.by_ip.items()]

    def release(self, ip: str) -> None:
        self.by_ip.pop(ip, None)

    def release_by_id(self, container_id: str, ifname: str) -> list[str]:
        assert self.locked, "release outside the lock"
        released = [lease.ip for lease in matching_leases(self.leases(), container_id, ifname)]
        for ip in released:
            del self.by_ip[ip]
        return released
