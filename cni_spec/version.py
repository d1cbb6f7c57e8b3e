"""CNI spec versions: parsing, comparison, and results converted between versions.

Results are built in the current shape (:class:`cni_spec.types.Result`) and
converted here, at the edge, to the version the network config asked for;
prevResult and delegated-plugin results of any version come back the other way.
"""

from __future__ import annotations

from cni_spec.gojson import go_quote
from cni_spec.types import CURRENT_VERSION, DNS, Interface, IPConfig, Result, Route, is_ipv4

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ALL_VERSIONS: tuple[str, ...] = ("0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0")
LEGACY_VERSIONS = ("0.1.0", "0.2.0")
IPS_VERSIONS = ("0.3.0", "0.3.1", "0.4.0")
CURRENT_SHAPE_VERSIONS = ("1.0.0", "1.1.0")
DEFAULT_CONFIG_VERSION = "0.1.0"  # a config without cniVersion means 0.1.0


class VersionError(ValueError):
    """A version string that does not parse (the reference reports it as a decode failure)."""


def _atoi(part: str, which: str, version: str) -> int:
    if not part or not (part.isascii() and (part.isdigit() or
                                            (part[0] in "+-" and part[1:].isdigit()))):
        raise VersionError(f"failed to convert {which} version part {go_quote(part)}: "
                           f"strconv.Atoi: parsing {go_quote(part)}: invalid syntax")
    return int(part)


def parse_version(version: str) -> tuple[int, int, int]:
    """Major, minor, micro as the reference parses them; "" means 0.1.0."""
    if version == "":
        return (0, 1, 0)
    parts = version.split(".")
    if len(parts) >= 4:
        raise VersionError(f"invalid version {go_quote(version)}: too many parts")
    major = _atoi(parts[0], "major", version)
    minor = _atoi(parts[1], "minor", version) if len(parts) >= 2 else 0
    micro = _atoi(parts[2], "micro", version) if len(parts) >= 3 else 0
    return (major, minor, micro)


def greater_or_equal(version: str, other: str) -> bool:
    return parse_version(version) >= parse_version(other)


# --- current Result -> wire JSON of a given version ---------------------------------------

def result_to_json(result: Result, version: str) -> dict[str, Any]:
    """The result as a plugin prints it for a config of `version`.

    A result already labelled with `version` is printed as it is, in the current shape,
    whatever the version: Go's converter returns a result unchanged when it is asked for
    the version it carries, and the reference loopback labels its current-typed result
    with the config's version (so its 0.x results have no ips[].version, its 0.1.0/0.2.0
    ones no ip4/ip6).

    ValueError when the version is unknown or the result cannot be expressed in it
    (0.1.0/0.2.0 need at least one IP address), as the reference's converters fail.
    """
    if version not in ALL_VERSIONS:
        raise ValueError(f"unsupported CNI result version {go_quote(version)}")
    if version in CURRENT_SHAPE_VERSIONS or result.cni_version == version:
        out = result.to_json()
        out["cniVersion"] = version
        if version != "1.1.0" and "dns" not in out:
            # Plugins built against the CNI 1.0 types always print "dns" (later types
            # leave an empty one out, and only they know 1.1.0).
            out["dns"] = {}
        return out
    if version in IPS_VERSIONS:
        return _to_ips_shape(result, version)
    return _to_legacy_shape(result, version)


def _to_ips_shape(result: Result, version: str) -> dict[str, Any]:
    out: dict[str, Any] = {"cniVersion": version}
    if result.interfaces:
        # 0.x interfaces know only name, mac and sandbox
        out["interfaces"] = [Interface(name=i.name, mac=i.mac, sandbox=i.sandbox).to_json()
                             for i in result.interfaces]
    if result.ips:
        out["ips"] = [{"version": ip.version, **ip.to_json()} for ip in result.ips]
    if result.routes:
        out["routes"] = [r.to_json() for r in result.routes]
    out["dns"] = result.dns.to_json()
    return out


def _to_legacy_shape(result: Result, version: str) -> dict[str, Any]:
    ip4 = next((ip for ip in result.ips if ip.version == "4"), None)
    ip6 = next((ip for ip in result.ips if ip.version == "6"), None)
    if ip4 is None and ip6 is None:
        raise ValueError("cannot convert: no valid IP addresses")
    out: dict[str, Any] = {"cniVersion": version}
    for key, ip, want_v4 in (("ip4", ip4, True), ("ip6", ip6, False)):
        if ip is None:
            continue
        entry: dict[str, Any] = {"ip": ip.address}
        if ip.gateway:
            entry["gateway"] = ip.gateway
        routes = [{"dst": r.dst, **({"gw": r.gw} if r.gw else {})}
                  for r in result.routes if is_ipv4(r.dst) == want_v4]
        if routes:
            entry["routes"] = routes
        out[key] = entry
    out["dns"] = result.dns.to_json()
    return out


# --- wire JSON of any version -> current Result -------------------------------------------

def result_from_json(data: dict[str, Any], version: str) -> Result:
    """Parse a result (prevResult, a delegated plugin's output) written in `version`.

    ValueError for an unknown version or a malformed result.
    """
    if not isinstance(data, dict):
        raise ValueError("result must be a JSON object")
    if version in CURRENT_SHAPE_VERSIONS:
        result = Result.from_json(data)
    elif version in IPS_VERSIONS:
        result = Result.from_json({k: v for k, v in data.items() if k != "cniVersion"})
    elif version in LEGACY_VERSIONS:
        result = _from_legacy_shape(data)
    else:
        raise ValueError(f"unsupported CNI result version {go_quote(version)}")
    result.cni_version = CURRENT_VERSION
    return result


def _from_legacy_shape(data: dict[str, Any]) -> Result:
    result = Result(dns=DNS.from_json(data.get("dns")))
    for key in ("ip4", "ip6"):
        entry = data.get(key)
        if not entry:
            continue
        if not isinstance(entry, dict):
            raise ValueError(f"{key} must be an object")
        result.ips.append(IPConfig.from_json({"address": entry.get("ip"),
                                              "gateway": entry.get("gateway")}))
        for route in entry.get("routes") or []:
            result.routes.append(Route.from_json(route))
    return result
