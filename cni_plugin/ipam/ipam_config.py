"""host-local's configuration: the ``ipam`` section plus requested addresses.

Resolution follows the reference's LoadIPAMConfig: requested IPs from CNI_ARGS
``IP=`` first, then ``args.cni.ips``, then ``runtimeConfig.ips`` (capability
``ips``); range sets from ``runtimeConfig.ipRanges``, then the legacy single
range (subnet/rangeStart/rangeEnd/gateway), then ``ranges``. Messages are the
reference's, so a runtime sees the same errors from either plugin.
"""

from __future__ import annotations

from cni_plugin.ipam.addr import IP, IPParseError
from cni_plugin.ipam.decode import (
    ARGS_TYPE,
    RUNTIME_TYPE,
    DecodeError,
    IPAMSection,
    NetDecoder,
    RouteSpec,
    fields,
    parse_ip_or_cidr,
)
from cni_plugin.ipam.disk import DEFAULT_DATA_DIR
from cni_plugin.ipam.ranges import RangeError, RangeSet, json_kind
from cni_spec.gojson import loads


class IPAMConfigError(ValueError):
    """The configuration cannot be used; str() is the reference's message."""


class IPAMConfig:
    __slots__ = ("cni_version", "data_dir", "name", "ranges", "raw", "requested_ips",
                 "resolv_conf", "routes")

    def __init__(self, name: str, cni_version: str, ranges: list[RangeSet],
                 routes: list[RouteSpec], data_dir: str, resolv_conf: str,
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
        net = loads(stdin_data)
    except ValueError:
        # What gojson refuses (another encoding, NaN, a BOM) is judged, and worded, by
        # json itself: imported only on this path, it is costly at start-up.
        import json

        try:
            net = json.loads(stdin_data)
        except ValueError as exc:
            raise IPAMConfigError(str(exc)) from exc
    if not isinstance(net, dict):
        raise IPAMConfigError(f"json: cannot unmarshal {json_kind(net)} into Go value of type "
                              "allocator.Net")
    try:
        return _load(net, cni_args)
    except (IPParseError, RangeError, DecodeError) as exc:
        raise IPAMConfigError(str(exc)) from exc


class _DecodedNet:
    def __init__(self) -> None:
        self.name = ""
        self.cni_version = ""
        self.ipam: IPAMSection | None = None
        self.runtime_ranges: list[RangeSet] = []
        self.runtime_ips: list[IP] = []
        self.cni_ips: list[IP] = []


def _decode(net: dict[str, object]) -> _DecodedNet:
    d, out = NetDecoder(), _DecodedNet()
    for name, value in fields(net, ("name", "cniVersion", "ipam", "runtimeConfig", "args")):
        if name == "name":
            out.name = d.string(value, "Net", "name")
        elif name == "cniVersion":
            out.cni_version = d.string(value, "Net", "cniVersion")
        elif name == "ipam":
            ipam = d.struct_value(value, "Net", "ipam", "allocator.IPAMConfig")
            out.ipam = d.ipam(ipam) if ipam is not None else None
        elif name == "runtimeConfig":
            runtime = d.struct_value(value, "Net", "runtimeConfig", RUNTIME_TYPE) or {}
            for key, item in fields(runtime, ("ipRanges", "ips")):
                if key == "ipRanges":
                    out.runtime_ranges = d.range_sets(item, "", "runtimeConfig.ipRanges")
                else:
                    out.runtime_ips = d.ip_list(item, "", "runtimeConfig.ips")
        else:
            args = d.struct_value(value, "Net", "args", ARGS_TYPE) or {}
            for _, cni in fields(args, ("cni",)):
                cni_obj = d.struct_value(cni, "", "args.cni", "allocator.IPAMArgs") or {}
                for _, ips in fields(cni_obj, ("ips",)):
                    out.cni_ips = d.ip_list(ips, "IPAMArgs", "args.cni.ips")
    d.finish()
    return out


def _load(net: dict[str, object], cni_args: dict[str, str]) -> IPAMConfig:
    decoded = _decode(net)
    section = decoded.ipam
    if section is None:
        raise IPAMConfigError("IPAM config missing 'ipam' key")
    requested = _cni_args_ip(cni_args) + decoded.cni_ips + decoded.runtime_ips
    ranges = list(section.ranges)
    if section.legacy is not None:
        ranges.insert(0, RangeSet([section.legacy]))
    ranges = decoded.runtime_ranges + ranges
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
    version = decoded.cni_version
    if (v4 > 1 or v6 > 1) and _before_0_3_0(version):
        raise IPAMConfigError(
            f"CNI version {version} does not support more than 1 address per family"
        )
    for i, first in enumerate(ranges[:-1]):
        for j, second in enumerate(ranges[i + 1 :]):
            if first.overlaps(second):
                raise IPAMConfigError(f"range set {i} overlaps with {i + j + 1}")
    return IPAMConfig(
        name=decoded.name, cni_version=version, ranges=ranges, routes=section.routes,
        data_dir=section.data_dir or DEFAULT_DATA_DIR, resolv_conf=section.resolv_conf,
        requested_ips=requested, raw=net,
    )


def _cni_args_ip(cni_args: dict[str, str]) -> list[IP]:
    value = cni_args.get("IP", "")
    if value == "":
        return []
    try:
        return [parse_ip_or_cidr(value)]
    except IPParseError as exc:
        raise IPAMConfigError(
            f'ARGS: error parsing value of pair "IP={value}": invalid IP address {value}'
        ) from exc


def _before_0_3_0(version: str) -> bool:
    parts = (version or "0.1.0").split(".")
    try:
        return tuple(int(p) for p in parts[:3]) < (0, 3, 0)
    except ValueError:
        return False
