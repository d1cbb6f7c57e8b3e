"""host-local's configuration: the ``ipam`` section plus requested addresses.

Resolution follows the reference's LoadIPAMConfig: requested IPs from CNI_ARGS
``IP=`` first, then ``args.cni.ips``, then ``runtimeConfig.ips`` (capability
``ips``); range sets from ``runtimeConfig.ipRanges``, then the legacy single
range (subnet/rangeStart/rangeEnd/gateway), then ``ranges``. Messages are the
reference's, so a runtime sees the same errors from either plugin.
"""

from __future__ import annotations

import json

from cni_plugin.ipam.addr import IP, IPParseError, parse_cidr, parse_ip
from cni_plugin.ipam.disk import DEFAULT_DATA_DIR
from cni_plugin.ipam.ranges import Range, RangeError, RangeSet, json_kind, parse_range_set


class IPAMConfigError(ValueError):
    """The configuration cannot be used; str() is the reference's message."""


class RouteConfig:
    """A route from the ipam section: destination as written, optional gateway."""

    __slots__ = ("dst", "extra", "gw")

    def __init__(self, dst: str, gw: str, extra: dict[str, int]) -> None:
        self.dst = dst
        self.gw = gw
        self.extra = extra  # 1.1.0 fields: mtu, advmss, priority, table, scope


class IPAMConfig:
    __slots__ = ("cni_version", "data_dir", "name", "ranges", "raw", "requested_ips",
                 "resolv_conf", "routes")

    def __init__(self, name: str, cni_version: str, ranges: list[RangeSet],
                 routes: list[RouteConfig], data_dir: str, resolv_conf: str,
                 requested_ips: list[IP], raw: dict[str, object]) -> None:
        self.name = name
        self.cni_version = cni_version
        self.ranges = ranges
        self.routes = routes
        self.data_dir = data_dir
        self.resolv_conf = resolv_conf
        self.requested_ips = requested_ips
        self.raw = raw


def load_ipam_config(stdin_data: bytes, cni_args: dict[str, str]) -> IPAMConfig:
    try:
        net = json.loads(stdin_data)
    except ValueError as exc:
        raise IPAMConfigError(str(exc)) from exc
    if not isinstance(net, dict):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(net)} into Go value of type "
                              "allocator.Net")
    try:
        return _load(net, cni_args)
    except (IPParseError, RangeError) as exc:
        raise IPAMConfigError(str(exc)) from exc


def _load(net: dict[str, object], cni_args: dict[str, str]) -> IPAMConfig:
    ipam = net.get("ipam")
    runtime = _object(net.get("runtimeConfig"), "Net.runtimeConfig")
    args = _object(net.get("args"), "Net.args")
    cni_version = _string(net.get("cniVersion"), "Net.cniVersion")
    name = _string(net.get("name"), "Net.name")
    # Decode everything first: Go's decoder reports field errors before any check.
    legacy: Range | None = None
    ranges: list[RangeSet] = []
    routes: list[RouteConfig] = []
    ipam_obj = _object(ipam, "Net.ipam") if ipam is not None else None
    if ipam_obj is not None:
        if ipam_obj.get("subnet") not in (None, ""):
            legacy = Range.from_json(ipam_obj)
        raw_ranges = ipam_obj.get("ranges")
        if raw_ranges is not None:
            if not isinstance(raw_ranges, list):
                raise IPAMConfigError(f"json: cannot unmarshal {json_kind(raw_ranges)} into Go "
                                      "struct field IPAMConfig.ipam.ranges of type "
                                      "[]allocator.RangeSet")
            ranges = [parse_range_set(rs, "IPAMConfig.ipam.ranges") for rs in raw_ranges]
        routes = _routes(ipam_obj.get("routes"))
    runtime_ranges = runtime.get("ipRanges")
    prepend: list[RangeSet] = []
    if isinstance(runtime_ranges, list):
        prepend = [parse_range_set(rs, "Net.runtimeConfig.ipRanges") for rs in runtime_ranges]
    cni_ips = _ip_list(_object(args.get("cni"), "Net.args.cni").get("ips"))
    runtime_ips = _ip_list(runtime.get("ips"))
    if ipam_obj is None:
        raise IPAMConfigError("IPAM config missing 'ipam' key")

    requested = _cni_args_ip(cni_args) + cni_ips + runtime_ips
    if legacy is not None:
        ranges.insert(0, RangeSet([legacy]))
    ranges = prepend + ranges
    if not ranges:
        raise IPAMConfigError("no IP ranges specified")
    v4 = v6 = 0
    for index, range_set in enumerate(ranges):
        try:
            range_set.canonicalize()
        except RangeError as exc:
            raise IPAMConfigError(f"invalid range set {index}: {exc}") from exc
        if range_set.version == 4:
            v4 += 1
        else:
            v6 += 1
    if (v4 > 1 or v6 > 1) and _before_0_3_0(cni_version):
        raise IPAMConfigError(
            f"CNI version {cni_version} does not support more than 1 address per family"
        )
    for i, first in enumerate(ranges[:-1]):
        for j, second in enumerate(ranges[i + 1 :]):
            if first.overlaps(second):
                raise IPAMConfigError(f"range set {i} overlaps with {i + j + 1}")
    return IPAMConfig(
        name=name, cni_version=cni_version, ranges=ranges, routes=routes,
        data_dir=_string(ipam_obj.get("dataDir"), "IPAMConfig.ipam.dataDir") or DEFAULT_DATA_DIR,
        resolv_conf=_string(ipam_obj.get("resolvConf"), "IPAMConfig.ipam.resolvConf"),
        requested_ips=requested, raw=net,
    )


def _cni_args_ip(cni_args: dict[str, str]) -> list[IP]:
    value = cni_args.get("IP", "")
    if value == "":
        return []
    try:
        return [_parse_ip_or_cidr(value)]
    except IPParseError as exc:
        raise IPAMConfigError(
            f'ARGS: error parsing value of pair "IP={value}": invalid IP address {value}'
        ) from exc


def _parse_ip_or_cidr(text: str) -> IP:
    # The reference's ip.IP accepts "10.1.2.3" and "10.1.2.3/24" (prefix ignored).
    if "/" in text:
        try:
            return parse_cidr(text).ip
        except IPParseError:
            raise IPParseError(f"invalid IP address {text}") from None
    try:
        return parse_ip(text)
    except IPParseError:
        raise IPParseError(f"invalid IP address {text}") from None


def _ip_list(raw: object) -> list[IP]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(raw)} into Go value of type "
                              "[]*ip.IP")
    out: list[IP] = []
    for item in raw:
        if item is None or item == "":
            continue
        if not isinstance(item, str):
            raise IPAMConfigError(f"json: cannot unmarshal {json_kind(item)} into Go value of "
                                  "type ip.IP")
        out.append(_parse_ip_or_cidr(item))
    return out


def _routes(raw: object) -> list[RouteConfig]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(raw)} into Go struct field "
                              "IPAMConfig.ipam.routes of type []*types.Route")
    routes: list[RouteConfig] = []
    for item in raw:
        if item is None:
            continue
        if not isinstance(item, dict):
            raise IPAMConfigError(f"json: cannot unmarshal {json_kind(item)} into Go struct "
                                  "field IPAMConfig.ipam.routes of type types.Route")
        dst_text = _string(item.get("dst"), "Route.dst")
        dst = parse_cidr(dst_text)
        gw_text = _string(item.get("gw"), "Route.gw")
        gw = str(parse_ip(gw_text)) if gw_text else ""
        extra = {k: v for k, v in item.items()
                 if k in ("mtu", "advmss", "priority", "table", "scope")
                 and isinstance(v, int) and not isinstance(v, bool)}
        # Go keeps the address as written ("10.1.2.3/24" stays so).
        routes.append(RouteConfig(f"{dst.ip}/{dst.prefix}", gw, extra))
    return routes


def _object(raw: object, where: str) -> dict[str, object]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(raw)} into Go struct field "
                              f"{where} of type object")
    return raw


def _string(raw: object, where: str) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(raw)} into Go struct field "
                              f"{where} of type string")
    return raw


def _before_0_3_0(version: str) -> bool:
    parts = (version or "0.1.0").split(".")
    try:
        return tuple(int(p) for p in parts[:3]) < (0, 3, 0)
    except ValueError:
        return False
