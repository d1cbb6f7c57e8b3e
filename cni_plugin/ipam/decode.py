"""Decode host-local's network config with the errors Go's encoding/json gives.

The reference unmarshals the whole config into typed structs before any
check, so its first message for a mistyped field is Go's decoder text
("json: cannot unmarshal number into Go struct field IPAMConfig.ipam.dataDir
of type string"). The decoder's rules kept here:

- keys match field names case-insensitively; unknown keys are ignored;
- null leaves a field at its zero value;
- a JSON type mismatch is remembered (the first one wins) and decoding goes
  on; the remembered error is returned at the end;
- an error from a field's own parser (a CIDR, an IP text, a route) stops
  decoding at once, and beats a remembered mismatch.
"""

from __future__ import annotations

from cni_plugin.ipam.addr import CIDR, IP, IPParseError, parse_cidr, parse_ip
from cni_plugin.ipam.ranges import Range, RangeSet, json_kind

ARGS_TYPE = 'struct { A *allocator.IPAMArgs "json:\\"cni\\"" }'
RUNTIME_TYPE = ('struct { IPRanges []allocator.RangeSet "json:\\"ipRanges,omitempty\\""; '
                'IPs []*ip.IP "json:\\"ips,omitempty\\"" }')
RANGE_FIELDS = ("subnet", "rangeStart", "rangeEnd", "gateway")


class DecodeError(ValueError):
    """The config does not decode; str() is Go's message."""


def type_error(value: object, struct: str, path: str, go_type: str) -> str:
    return (f"json: cannot unmarshal {json_kind(value)} into Go struct field "
            f"{struct}.{path} of type {go_type}")


def fields(obj: dict[str, object], names: tuple[str, ...]) -> list[tuple[str, object]]:
    """(field name, value) in document order, keys matched case-insensitively."""
    by_fold = {name.lower(): name for name in names}
    return [(by_fold[key.lower()], value) for key, value in obj.items()
            if key.lower() in by_fold]


class RouteSpec:
    __slots__ = ("dst", "extra", "gw")

    def __init__(self, dst: CIDR, gw: IP | None, extra: dict[str, int]) -> None:
        self.dst = dst
        self.gw = gw
        self.extra = extra  # 1.1.0 fields: mtu, advmss, priority, table, scope

    @property
    def dst_text(self) -> str:
        # Go keeps the address as written: "10.9.0.3/16" stays so.
        return f"{self.dst.ip}/{self.dst.prefix}"

    @property
    def gw_text(self) -> str:
        return str(self.gw) if self.gw is not None else ""


class IPAMSection:
    """The ``ipam`` object as decoded, before any semantic check."""

    def __init__(self) -> None:
        self.legacy: Range | None = None
        self.ranges: list[RangeSet] = []
        self.routes: list[RouteSpec] = []
        self.data_dir = ""
        self.resolv_conf = ""


class NetDecoder:
    def __init__(self) -> None:
        self.saved: str | None = None

    def mismatch(self, message: str) -> None:
        if self.saved is None:
            self.saved = message

    def finish(self) -> None:
        if self.saved is not None:
            raise DecodeError(self.saved)

    # -- scalar fields ------------------------------------------------------------------

    def string(self, value: object, struct: str, path: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, str):
            self.mismatch(type_error(value, struct, path, "string"))
            return ""
        return value

    def ip(self, value: object, struct: str, path: str) -> IP | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            self.mismatch(type_error(value, struct, path, "net.IP"))
            return None
        return parse_ip(value)  # IPParseError stops decoding

    def cidr(self, value: object, struct: str, path: str) -> CIDR:
        # types.IPNet decodes a string itself: its errors stop decoding.
        if value is not None and not isinstance(value, str):
            raise DecodeError(type_error(value, struct, path, "string"))
        return parse_cidr(value or "")

    def struct_value(self, value: object, struct: str, path: str,
               go_type: str) -> dict[str, object] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            self.mismatch(type_error(value, struct, path, go_type))
            return None
        return value

    def array(self, value: object, struct: str, path: str, go_type: str) -> list[object]:
        if value is None:
            return []
        if not isinstance(value, list):
            self.mismatch(type_error(value, struct, path, go_type))
            return []
        return value

    # -- host-local's structures ---------------------------------------------------------

    def range(self, obj: dict[str, object], struct: str, path: str) -> Range:
        r = Range(None)
        for name, value in fields(obj, RANGE_FIELDS):
            self.range_field(r, name, value, struct, f"{path}.{name}")
        return r

    def range_field(self, r: Range, name: str, value: object, struct: str, where: str) -> None:
        if name == "subnet":
            r.subnet = self.cidr(value, struct, where)
        elif name == "rangeStart":
            r.range_start = self.ip(value, struct, where)
        elif name == "rangeEnd":
            r.range_end = self.ip(value, struct, where)
        else:
            r.gateway = self.ip(value, struct, where)

    def range_sets(self, value: object, struct: str, path: str) -> list[RangeSet]:
        sets: list[RangeSet] = []
        for raw_set in self.array(value, struct, path, "[]allocator.RangeSet"):
            members = self.array(raw_set, struct, path, "allocator.RangeSet")
            ranges = []
            for raw_range in members:
                obj = self.struct_value(raw_range, struct, path, "allocator.Range")
                if obj is not None:
                    ranges.append(self.range(obj, "Range", path))
                elif raw_range is None:
                    ranges.append(Range(None))
            sets.append(RangeSet(ranges))
        return sets

    def ip_list(self, value: object, struct: str, path: str) -> list[IP]:
        found: list[IP] = []
        for item in self.array(value, struct, path, "[]*ip.IP"):
            if item is None:
                continue  # the reference dereferences this nil and panics
            if not isinstance(item, str):
                self.mismatch(type_error(item, struct, path, "*ip.IP"))
                continue
            if item:
                found.append(parse_ip_or_cidr(item))
        return found

    def route(self, value: object) -> RouteSpec | None:
        # types.Route decodes itself: any error stops decoding, in the field's context.
        if value is None:
            return None
        if not isinstance(value, dict):
            raise DecodeError(type_error(value, "IPAMConfig", "ipam.routes", "types.route"))
        dst: CIDR | None = None
        gw: IP | None = None
        extra: dict[str, int] = {}
        names = ("dst", "gw", "mtu", "advmss", "priority", "table", "scope")
        for name, item in fields(value, names):
            if name == "dst":
                if item is not None and not isinstance(item, str):
                    raise DecodeError(type_error(item, "IPAMConfig", "ipam.routes", "string"))
                dst = parse_cidr(item or "")
            elif name == "gw":
                if item is not None and not isinstance(item, str):
                    raise DecodeError(type_error(item, "IPAMConfig", "ipam.routes", "net.IP"))
                gw = parse_ip(item) if item else None
            elif isinstance(item, int) and not isinstance(item, bool):
                extra[name] = item
        if dst is None:
            # The reference prints such a route as {"dst": "<nil>"}; refuse it instead.
            raise DecodeError("invalid CIDR address: ")
        return RouteSpec(dst, gw, extra)

    def ipam(self, obj: dict[str, object]) -> IPAMSection:
        section = IPAMSection()
        legacy = Range(None)
        legacy_seen = False
        names = (*RANGE_FIELDS, "name", "type", "routes", "dataDir", "resolvConf", "ranges")
        for name, value in fields(obj, names):
            path = f"ipam.{name}"
            if name in RANGE_FIELDS:
                # The embedded legacy Range is only used when it has a subnet.
                legacy_seen = True
                self.range_field(legacy, name, value, "IPAMConfig", path)
            elif name in ("name", "type"):
                self.string(value, "IPAMConfig", path)
            elif name == "dataDir":
                section.data_dir = self.string(value, "IPAMConfig", path)
            elif name == "resolvConf":
                section.resolv_conf = self.string(value, "IPAMConfig", path)
            elif name == "routes":
                routes = self.array(value, "IPAMConfig", path, "[]*types.Route")
                section.routes = [r for r in map(self.route, routes) if r is not None]
            else:
                section.ranges = self.range_sets(value, "IPAMConfig", path)
        if legacy_seen and legacy.subnet is not None:
            section.legacy = legacy
        return section


def parse_ip_or_cidr(text: str) -> IP:
    """The reference's ip.IP text: "10.1.2.3" or "10.1.2.3/24" (prefix ignored)."""
    try:
        return parse_cidr(text).ip if "/" in text else parse_ip(text)
    except IPParseError:
        raise IPParseError(f"invalid IP address {text}") from None
