"""CNI versions and results as the runtime side (libcni) reads them.

A plugin answers in its own result version (0.1.0 … 1.1.0). libcni keeps the
result in that version, passes it on as ``prevResult`` and caches it, and
converts it to the network list's ``cniVersion`` only when it reads the cache
back for CHECK and DEL. This module holds those rules: version parsing and
comparison, the three result shapes (0.1.0/0.2.0 ``ip4``/``ip6``; 0.3.x/0.4.0
``ips[].version``; 1.x ``ips`` with an interface index), conversion between
any two, and the current (1.x) normal form the runtime reads pod IPs from.
"""

from __future__ import annotations

import copy
import ipaddress
from dataclasses import dataclass
from typing import Any

from cni_spec.errors import CNIError
from cni_spec.types import CURRENT_VERSION
from cni_spec.version import VersionError
from cni_spec.version import parse_version as spec_parse_version

RESULT_VERSIONS_020 = ("0.1.0", "0.2.0")
RESULT_VERSIONS_040 = ("0.3.0", "0.3.1", "0.4.0")
RESULT_VERSIONS_100 = ("1.0.0", "1.1.0")
ALL_RESULT_VERSIONS = RESULT_VERSIONS_020 + RESULT_VERSIONS_040 + RESULT_VERSIONS_100

Result = dict[str, Any]


def parse_version(version: str) -> tuple[int, int, int]:
    """``major.minor.micro`` as cni_spec parses it (``""`` is 0.1.0); a malformed version
    is a CNIError (code 0: libcni's own failure, not a plugin's)."""
    try:
        return spec_parse_version(version)
    except VersionError as err:
        raise CNIError(0, str(err)) from None


def version_at_least(version: str, minimum: str) -> bool:
    return parse_version(version) >= parse_version(minimum)


def _family(version: str) -> str:
    if version in RESULT_VERSIONS_100:
        return "100"
    if version in RESULT_VERSIONS_040:
        return "040"
    if version in RESULT_VERSIONS_020:
        return "020"
    raise CNIError(0, f'unsupported CNI result version "{version}"')


def _ip_version(address: str) -> str:
    return "4" if ipaddress.ip_interface(address).version == 4 else "6"


def _cidr(address: Any) -> str:
    """An address in CIDR form, as Go's IPNet decoding demands (a bare IP is an error)."""
    text = str(address)
    if "/" not in text:
        raise ValueError(f"invalid CIDR address: {text}")
    ipaddress.ip_interface(text)
    return text


def _dns(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        return {}
    keys = ("nameservers", "domain", "search", "options")
    return {k: copy.deepcopy(raw[k]) for k in keys if raw.get(k)}


_IFACE_KEYS = {
    "040": ("name", "mac", "sandbox"),
    "100": ("name", "mac", "mtu", "sandbox", "socketPath", "pciID"),
}
_ROUTE_KEYS = ("dst", "gw", "mtu", "advmss", "priority", "table", "scope")


def _route(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: raw[k] for k in _ROUTE_KEYS if k in raw and (raw[k] or k in ("table", "scope"))}


def create_result(version: str, raw: Any) -> Result:
    """A plugin's result read as libcni's type for ``version`` (unknown keys dropped)."""
    family = _family(version)
    if not isinstance(raw, dict):
        raise CNIError(0, "failed to unmarshal raw result: not a JSON object")
    out: Result = {"cniVersion": version}
    try:
        if family == "020":
            for key in ("ip4", "ip6"):
                ipc = raw.get(key)
                if isinstance(ipc, dict):
                    entry: dict[str, Any] = {"ip": _cidr(ipc["ip"])}
                    if ipc.get("gateway"):
                        entry["gateway"] = ipc["gateway"]
                    if ipc.get("routes"):
                        entry["routes"] = [
                            {"dst": r["dst"], **({"gw": r["gw"]} if r.get("gw") else {})}
                            for r in ipc["routes"]
                        ]
                    out[key] = entry
            out["dns"] = _dns(raw.get("dns"))
            return out
        if raw.get("interfaces"):
            out["interfaces"] = [
                {k: i[k] for k in _IFACE_KEYS[family] if i.get(k) or k == "name"}
                for i in raw["interfaces"]
            ]
        if raw.get("ips"):
            ips = []
            for ipc in raw["ips"]:
                entry = {}
                if family == "040":
                    entry["version"] = str(ipc.get("version") or _ip_version(ipc["address"]))
                if ipc.get("interface") is not None:
                    entry["interface"] = int(ipc["interface"])
                entry["address"] = _cidr(ipc["address"])
                if ipc.get("gateway"):
                    entry["gateway"] = ipc["gateway"]
                ips.append(entry)
            out["ips"] = ips
        if raw.get("routes"):
            out["routes"] = [_route(r) for r in raw["routes"]]
        out["dns"] = _dns(raw.get("dns"))
        return out
    except (KeyError, TypeError, ValueError) as exc:
        raise CNIError(0, f"failed to parse result version {version}: {exc}") from exc


def _to_current(result: Result) -> Result:
    """Any result in the 1.x shape (interfaces, ips with interface index, routes, dns)."""
    family = _family(result["cniVersion"])
    if family == "100":
        same = copy.deepcopy(result)
        same["cniVersion"] = CURRENT_VERSION
        return same
    cur: Result = {"cniVersion": CURRENT_VERSION}
    if family == "040":
        if result.get("interfaces"):
            cur["interfaces"] = copy.deepcopy(result["interfaces"])
        if result.get("ips"):
            cur["ips"] = [{k: v for k, v in ip.items() if k != "version"} for ip in result["ips"]]
        if result.get("routes"):
            cur["routes"] = copy.deepcopy(result["routes"])
    else:
        ips, routes = [], []
        for key in ("ip4", "ip6"):
            ipc = result.get(key)
            if ipc:
                ips.append(
                    {
                        "address": ipc["ip"],
                        **({"gateway": ipc["gateway"]} if ipc.get("gateway") else {}),
                    }
                )
                routes.extend(copy.deepcopy(ipc.get("routes", [])))
        if ips:
            cur["ips"] = ips
        if routes:
            cur["routes"] = routes
    cur["dns"] = copy.deepcopy(result.get("dns", {}))
    return cur


def convert_result(result: Result, to_version: str) -> Result:
    """``result`` as ``to_version``, through the same conversions libcni registers."""
    to_version = to_version or "0.1.0"
    from_version = result.get("cniVersion", "")
    if from_version == to_version:
        return copy.deepcopy(result)
    try:
        _family(from_version)
        target = _family(to_version)
    except CNIError:
        raise CNIError(
            0, f"no converter for CNI result version {from_version} to {to_version}") from None
    cur = _to_current(result)
    if target == "100":
        cur["cniVersion"] = to_version
        return cur
    if target == "040":
        out: Result = {"cniVersion": to_version}
        if cur.get("interfaces"):
            out["interfaces"] = [
                {k: i[k] for k in _IFACE_KEYS["040"] if k in i} for i in cur["interfaces"]
            ]
        if cur.get("ips"):
            out["ips"] = [{"version": _ip_version(ip["address"]), **ip} for ip in cur["ips"]]
        if cur.get("routes"):
            out["routes"] = cur["routes"]
        out["dns"] = cur.get("dns", {})
        return out
    out = {"cniVersion": to_version}
    for ip in cur.get("ips", []):
        key = "ip4" if _ip_version(ip["address"]) == "4" else "ip6"
        if key not in out:
            out[key] = {
                "ip": ip["address"],
                **({"gateway": ip["gateway"]} if ip.get("gateway") else {}),
            }
    if "ip4" not in out and "ip6" not in out:
        raise CNIError(0, "cannot convert: no valid IP addresses")
    for route in cur.get("routes", []):
        key = "ip4" if ipaddress.ip_network(route["dst"], strict=False).version == 4 else "ip6"
        if key in out:
            out[key].setdefault("routes", []).append(
                {"dst": route["dst"], **({"gw": route["gw"]} if route.get("gw") else {})}
            )
    out["dns"] = cur.get("dns", {})
    return out


def to_current(result: Result) -> Result:
    """The normal form the runtime reads: the result converted to 1.1.0."""
    return _to_current(result)


@dataclass(frozen=True)
class PodIP:
    address: str  # CIDR form as the plugin reported it, e.g. 10.244.1.2/24
    gateway: str | None

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)

    @property
    def family(self) -> int:
        return ipaddress.ip_interface(self.address).version


def interface_ips(result: Result, ifname: str) -> list[PodIP]:
    """The IPs a (current-form) result puts on ``ifname``, in result order.

    As containerd's go-cni: an IP whose ``interface`` index is absent belongs
    to the network's default interface, which is ``ifname`` here.
    """
    interfaces = result.get("interfaces") or []
    out = []
    for ip in result.get("ips") or []:
        index = ip.get("interface")
        name = (
            ifname
            if index is None or not 0 <= index < len(interfaces)
            else interfaces[index]["name"]
        )
        if name == ifname:
            out.append(PodIP(address=ip["address"], gateway=ip.get("gateway")))
    return out


def pod_ips(result: Result, ifname: str = "eth0") -> list[PodIP]:
    """The first IP of ``ifname`` per family, IPv4 first (containerd's pod IP pick)."""
    chosen: dict[int, PodIP] = {}
    for ip in interface_ips(result, ifname):
        chosen.setdefault(ip.family, ip)
    return [chosen[f] for f in (4, 6) if f in chosen]
