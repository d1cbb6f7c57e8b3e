"""The current (CNI 1.1.0) result types.

Plugins build these; :mod:`cni_spec.version` converts them to an older
version only at the edge. Addresses are kept as canonical strings
(``10.1.0.2/24``, ``fd00::2/64``), the way Go's net.IPNet prints them.

Plain classes rather than dataclasses: importing dataclasses (and the inspect
module it pulls in) would double a plugin's start-up time.
"""

from __future__ import annotations

from cni_spec import ipnet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CURRENT_VERSION = "1.1.0"


def canonical_cidr(text: object, what: str = "address") -> str:
    """An address with prefix length ("10.0.0.2/24"), host bits kept; ValueError if invalid."""
    if not isinstance(text, str):
        raise ValueError(f"invalid CIDR {what}: {text!r}")
    return ipnet.canonical_cidr(text)


def canonical_ip(text: object, what: str = "IP") -> str:
    if not isinstance(text, str):
        raise ValueError(f"invalid {what}: {text!r}")
    return ipnet.canonical_ip(text)


def is_ipv4(cidr_or_ip: str) -> bool:
    return ":" not in cidr_or_ip


def _opt_int(value: object, what: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be an integer")
    return value


class Record:
    """Equality and repr over __slots__, as a dataclass would give."""

    __slots__: tuple[str, ...] = ()

    def _init(self, **fields: object) -> None:
        """Set the fields (also on a subclass that refuses later assignment)."""
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> list[str]:
        return [n for klass in type(self).__mro__ for n in getattr(klass, "__slots__", ())]

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields())

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._values() == self._values()

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields())
        return f"{type(self).__name__}({fields})"

    __hash__ = None  # type: ignore[assignment]


class Interface(Record):
    __slots__ = ("mac", "mtu", "name", "pci_id", "sandbox", "socket_path")
    name: str
    mac: str
    mtu: int
    sandbox: str  # the netns path for a container-side interface, "" on the host
    socket_path: str
    pci_id: str

    def __init__(self, name: str, mac: str = "", mtu: int = 0, sandbox: str = "",
                 socket_path: str = "", pci_id: str = "") -> None:
        self._init(name=name, mac=mac, mtu=mtu, sandbox=sandbox, socket_path=socket_path,
                   pci_id=pci_id)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Interface:
        return cls(name=str(d.get("name", "")), mac=str(d.get("mac", "")),
                   mtu=_opt_int(d.get("mtu"), "interface mtu") or 0,
                   sandbox=str(d.get("sandbox", "")),
                   socket_path=str(d.get("socketPath", "")), pci_id=str(d.get("pciID", "")))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        for key, value in (("mac", self.mac), ("mtu", self.mtu), ("sandbox", self.sandbox),
                           ("socketPath", self.socket_path), ("pciID", self.pci_id)):
            if value:
                out[key] = value
        return out


class IPConfig(Record):
    __slots__ = ("address", "gateway", "interface")

    def __init__(self, address: str, gateway: str = "", interface: int | None = None) -> None:
        self.address = address
        self.gateway = gateway
        self.interface = interface

    @property
    def version(self) -> str:
        return "4" if is_ipv4(self.address) else "6"

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> IPConfig:
        gw = d.get("gateway")
        return cls(address=canonical_cidr(d.get("address")),
                   gateway=canonical_ip(gw, "gateway") if gw else "",
                   interface=_opt_int(d.get("interface"), "interface index"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.interface is not None:
            out["interface"] = self.interface
        out["address"] = self.address
        if self.gateway:
            out["gateway"] = self.gateway
        return out


class Route(Record):
    __slots__ = ("advmss", "dst", "gw", "mtu", "priority", "scope", "table")
    dst: str
    gw: str
    mtu: int
    advmss: int
    priority: int
    table: int | None
    scope: int | None

    def __init__(self, dst: str, gw: str = "", mtu: int = 0, advmss: int = 0,
                 priority: int = 0, table: int | None = None, scope: int | None = None) -> None:
        self._init(dst=dst, gw=gw, mtu=mtu, advmss=advmss, priority=priority, table=table,
                   scope=scope)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Route:
        gw = d.get("gw")
        return cls(dst=canonical_cidr(d.get("dst"), "route dst"),
                   gw=canonical_ip(gw, "route gw") if gw else "",
                   mtu=_opt_int(d.get("mtu"), "route mtu") or 0,
                   advmss=_opt_int(d.get("advmss"), "route advmss") or 0,
                   priority=_opt_int(d.get("priority"), "route priority") or 0,
                   table=_opt_int(d.get("table"), "route table"),
                   scope=_opt_int(d.get("scope"), "route scope"))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dst": self.dst}
        for key, value in (("gw", self.gw), ("mtu", self.mtu), ("advmss", self.advmss),
                           ("priority", self.priority)):
            if value:
                out[key] = value
        if self.table is not None:
            out["table"] = self.table
        if self.scope is not None:
            out["scope"] = self.scope
        return out


class DefaultGatewayRoute(Route):
    """The default route the bridge adds for isDefaultGateway.

    Only its origin differs: the reference builds its mask from the 16-byte zero
    address, which shows in its error messages ({0.0.0.0 00000000000000000000ffff00000000}).
    """

    __slots__ = ()


class DNS(Record):
    __slots__ = ("domain", "nameservers", "options", "search")

    def __init__(self, nameservers: list[str] | None = None, domain: str = "",
                 search: list[str] | None = None, options: list[str] | None = None) -> None:
        self.nameservers: list[str] = list(nameservers or [])
        self.domain = domain
        self.search: list[str] = list(search or [])
        self.options: list[str] = list(options or [])

    def is_empty(self) -> bool:
        return not (self.nameservers or self.domain or self.search or self.options)

    @classmethod
    def from_json(cls, d: object) -> DNS:
        if not d:
            return cls()
        if not isinstance(d, dict):
            raise ValueError("dns must be an object")
        return cls(nameservers=[str(x) for x in d.get("nameservers") or []],
                   domain=str(d.get("domain") or ""),
                   search=[str(x) for x in d.get("search") or []],
                   options=[str(x) for x in d.get("options") or []])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in (("nameservers", self.nameservers), ("domain", self.domain),
                           ("search", self.search), ("options", self.options)):
            if value:
                out[key] = list(value) if isinstance(value, list) else value
        return out


class Result(Record):
    """A result in the current spec version (1.0.0 and 1.1.0 share this shape)."""

    __slots__ = ("cni_version", "dns", "interfaces", "ips", "routes")

    def __init__(self, cni_version: str = CURRENT_VERSION,
                 interfaces: list[Interface] | None = None, ips: list[IPConfig] | None = None,
                 routes: list[Route] | None = None, dns: DNS | None = None) -> None:
        self.cni_version = cni_version
        self.interfaces: list[Interface] = list(interfaces or [])
        self.ips: list[IPConfig] = list(ips or [])
        self.routes: list[Route] = list(routes or [])
        self.dns: DNS = dns if dns is not None else DNS()

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Result:
        """Parse a result in the 1.x shape (version.result_from_json reads any version)."""
        return cls(cni_version=str(d.get("cniVersion") or CURRENT_VERSION),
                   interfaces=[Interface.from_json(i) for i in _objects(d, "interfaces")],
                   ips=[IPConfig.from_json(i) for i in _objects(d, "ips")],
                   routes=[Route.from_json(r) for r in _objects(d, "routes")],
                   dns=DNS.from_json(d.get("dns")))

    def to_json(self) -> dict[str, Any]:
        """The 1.x shape, keys in the reference's order; empty lists and empty dns left out."""
        out: dict[str, Any] = {"cniVersion": self.cni_version}
        if self.interfaces:
            out["interfaces"] = [i.to_json() for i in self.interfaces]
        if self.ips:
            out["ips"] = [i.to_json() for i in self.ips]
        if self.routes:
            out["routes"] = [r.to_json() for r in self.routes]
        if not self.dns.is_empty():
            out["dns"] = self.dns.to_json()
        return out


def _objects(d: dict[str, Any], key: str) -> list[dict[str, Any]]:
    items = d.get(key) or []
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise ValueError(f"{key} must be a list of objects")
    return items
