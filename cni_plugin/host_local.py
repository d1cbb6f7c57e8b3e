"""host-local IPAM: leases addresses from range sets, stored on local disk.

Interchangeable with the reference host-local (same config, messages and
dataDir layout, so both may share one dataDir), plus CNI 1.1.0 STATUS and GC.

Idempotency, as the spec and the reference state it:
- ADD of an attachment that already holds an address in a range set fails
  ("duplicate allocation is not allowed"); a failed ADD releases what it leased.
- DEL releases every lease of (container id, ifname); nothing leased is success.
- CHECK fails unless the attachment holds an address (and every prevResult
  address within our ranges is leased to it).
- STATUS is code 50 when the dataDir is unusable or a range set is full.
- GC releases leases of attachments missing from cni.dev/valid-attachments; without
  that list (libcni and cnitool send none when nothing is valid) it releases them all.
"""

from __future__ import annotations

import sys

from cni_plugin.config import valid_attachments
from cni_plugin.ipam.addr import IP, try_parse_ip
from cni_plugin.ipam.allocator import Allocation, AllocationError, Allocator
from cni_plugin.ipam.disk import DiskStore, StoreError
from cni_plugin.ipam.ipam_config import IPAMConfig, IPAMConfigError, load_ipam_config
from cni_plugin.ipam.store import matching_leases
from cni_plugin.skel import CmdArgs, Handlers, halfway, plugin_main
from cni_spec.errors import ERR_PLUGIN_NOT_AVAILABLE, CNIError, internal
from cni_spec.types import DNS, IPConfig, Result, Route

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ABOUT = "emu-host-local: CNI host-local IPAM (cni-csi-mini)"
KNOWN_ARGS = frozenset({"IP"})


def load_config(cmd: CmdArgs) -> IPAMConfig:
    try:
        return load_ipam_config(cmd.stdin_data, cmd.args)
    except IPAMConfigError as exc:
        raise internal(str(exc)) from exc


def open_store(conf: IPAMConfig) -> DiskStore:
    try:
        return DiskStore(conf.name, conf.data_dir)
    except StoreError as exc:
        raise internal(str(exc)) from exc


def cmd_add(cmd: CmdArgs) -> Result:
    conf = load_config(cmd)
    dns = DNS()
    if conf.resolv_conf:
        from cni_plugin.ipam.resolv import parse_resolv_conf  # rarely configured

        try:
            resolv = parse_resolv_conf(conf.resolv_conf)
        except ValueError as exc:
            raise internal(str(exc)) from exc
        dns = DNS(resolv.nameservers, resolv.domain, resolv.search, resolv.options)
    store = open_store(conf)
    try:
        with store:
            allocations = allocate_all(store, conf, cmd.container_id, cmd.ifname)
    finally:
        store.close()
    halfway()  # the lease is written, no result given yet
    return Result(
        ips=[IPConfig(address=a.address, gateway=str(a.gateway) if a.gateway else "")
             for a in allocations],
        routes=[Route(dst=r.dst_text, gw=r.gw_text, **r.extra) for r in conf.routes],
        dns=dns,
    )


def allocate_all(store: DiskStore, conf: IPAMConfig, container_id: str,
                 ifname: str) -> list[Allocation]:
    """One address per range set; on any failure release what this call leased."""
    requested: dict[str, IP] = {str(ip): ip for ip in conf.requested_ips}
    leases = store.leases()
    allocations: list[Allocation] = []
    try:
        for index, range_set in enumerate(conf.ranges):
            wanted = next((key for key, ip in requested.items() if range_set.contains(ip)), None)
            ip = requested.pop(wanted) if wanted is not None else None
            try:
                allocations.append(
                    Allocator(range_set, store, index).get(container_id, ifname, ip, leases))
            except AllocationError as exc:
                raise internal(f"failed to allocate for range {index}: {exc}") from exc
        if requested:
            raise internal("failed to allocate all requested IPs: " + " ".join(requested))
    except (CNIError, StoreError, OSError) as exc:
        if allocations:
            store.release_by_id(container_id, ifname)
        if isinstance(exc, CNIError):
            raise
        raise internal(str(exc)) from exc
    return allocations


def cmd_del(cmd: CmdArgs) -> None:
    conf = load_config(cmd)
    store = open_store(conf)
    try:
        with store:
            # Once per range set, as the reference: the later passes also
            # release leases written by very old versions (container id only).
            for _ in conf.ranges:
                store.release_by_id(cmd.container_id, cmd.ifname)
    except OSError as exc:
        raise internal(str(exc)) from exc
    finally:
        store.close()


def cmd_check(cmd: CmdArgs) -> None:
    conf = load_config(cmd)
    store = open_store(conf)
    try:
        with store:
            held = matching_leases(store.leases(), cmd.container_id, cmd.ifname)
    finally:
        store.close()
    if not held:
        raise internal(f"host-local: Failed to find address added by container "
                       f"{cmd.container_id}")
    held_ips = {lease.ip for lease in held}
    for address in _prev_result_addresses(conf.raw):
        ip = try_parse_ip(address)
        if ip is not None and any(rs.contains(ip) for rs in conf.ranges) \
                and str(ip) not in held_ips:
            raise internal(f"host-local: address {ip} is not leased to container "
                           f"{cmd.container_id} on {cmd.ifname}")


def cmd_status(cmd: CmdArgs) -> None:
    conf = load_config(cmd)
    try:
        store = DiskStore(conf.name, conf.data_dir)
    except StoreError as exc:
        raise CNIError(ERR_PLUGIN_NOT_AVAILABLE, "dataDir is not usable", str(exc)) from exc
    try:
        if not store.is_writable():
            raise CNIError(ERR_PLUGIN_NOT_AVAILABLE, "dataDir is not usable",
                           f"{store.dir} is not writable")
        with store:
            leases = store.leases()
    finally:
        store.close()
    for index, range_set in enumerate(conf.ranges):
        used = {ip for ip in (try_parse_ip(lease.ip) for lease in leases)
                if ip is not None and (r := range_set.range_for(ip)) is not None
                and ip != r.gateway}
        if len(used) >= range_set.allocatable_count():
            raise CNIError(ERR_PLUGIN_NOT_AVAILABLE,
                           f"no IP addresses available in range set: {range_set}",
                           f"range set {index} is full")


def cmd_gc(cmd: CmdArgs) -> None:
    from cni_plugin.ipam.gc import collect_garbage  # only this command needs it

    conf = load_config(cmd)
    valid = set(valid_attachments(conf.raw))
    store = open_store(conf)
    try:
        with store:
            collect_garbage(store, valid)
    except OSError as exc:
        raise internal(str(exc)) from exc
    finally:
        store.close()


def _prev_result_addresses(raw: dict[str, object]) -> list[str]:
    prev = raw.get("prevResult")
    if not isinstance(prev, dict):
        return []
    found: list[str] = []
    for item in prev.get("ips") or []:
        if isinstance(item, dict) and isinstance(item.get("address"), str):
            found.append(item["address"].partition("/")[0])
    for key in ("ip4", "ip6"):
        entry = prev.get(key)
        if isinstance(entry, dict) and isinstance(entry.get("ip"), str):
            found.append(entry["ip"].partition("/")[0])
    return found


HANDLERS = Handlers(add=cmd_add, delete=cmd_del, check=cmd_check, status=cmd_status,
                    gc=cmd_gc)


def run(**streams: Any) -> int:
    """One CNI command; ``streams`` are plugin_main's getenv, stdin, stdout, stderr (a
    delegating plugin of ours runs host-local in-process with them, see invoke)."""
    return plugin_main(HANDLERS, about=ABOUT, known_args=KNOWN_ARGS, **streams)


def main() -> None:
    sys.exit(run())


if __name__ == "__main__":
    main()
