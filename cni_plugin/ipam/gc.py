"""Garbage collection of leases whose attachment the runtime no longer knows.

CNI 1.1.0 GC hands the plugin ``cni.dev/valid-attachments``; every lease on
the network that belongs to none of them is released (all of them when the list is
absent: libcni sends none when nothing is valid). A legacy lease (id only)
is kept while any valid attachment has its container id.
"""

from __future__ import annotations

from cni_plugin.ipam.addr import try_parse_ip

TYPE_CHECKING = False
if TYPE_CHECKING:
    from cni_plugin.ipam.store import Store


def stale_lease_ips(store: Store, valid: set[tuple[str, str]]) -> list[str]:
    valid_ids = {container_id.strip() for container_id, _ in valid}
    valid_pairs = {(container_id.strip(), ifname) for container_id, ifname in valid}
    stale: list[str] = []
    for lease in store.leases():
        if try_parse_ip(lease.ip) is None:
            continue  # not a lease file: leave it to whoever wrote it
        if lease.ifname is None:
            keep = lease.container_id in valid_ids
        else:
            keep = (lease.container_id, lease.ifname) in valid_pairs
        if not keep:
            stale.append(lease.ip)
    return stale


def collect_garbage(store: Store, valid: set[tuple[str, str]]) -> list[str]:
    """Release stale leases (the caller holds the lock); return their addresses."""
    stale = stale_lease_ips(store, valid)
    for ip in stale:
        store.release(ip)
    return stale
