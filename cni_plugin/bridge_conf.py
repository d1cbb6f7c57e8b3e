"""The bridge plugin's network configuration: the reference's fields and defaults."""

from __future__ import annotations

from cni_plugin.config import NetConf, load_netconf
from cni_plugin.skel import split_cni_args
from cni_spec.errors import ERR_INVALID_NETWORK_CONFIG, CNIError, internal
from cni_spec.names import validate_interface_name
from cni_spec.types import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_BRIDGE = "cni0"
_HEX = frozenset("0123456789abcdefABCDEF")


def is_valid_mac(mac: str) -> bool:
    """Six colon-separated hex octets (a plain check: re costs start-up time)."""
    octets = mac.split(":")
    return len(octets) == 6 and all(len(o) == 2 and set(o) <= _HEX for o in octets)


class BridgeConf(Record):
    """The reference bridge's fields, with its defaults."""

    __slots__ = ("bridge", "enable_dad", "force_address", "hairpin_mode", "ip_masq",
                 "is_default_gateway", "is_gateway", "mac", "macspoofchk", "mtu", "net",
                 "preserve_default_vlan", "promisc_mode", "vlan")

    def __init__(self, net: NetConf, bridge: str = DEFAULT_BRIDGE, is_gateway: bool = False,
                 is_default_gateway: bool = False, force_address: bool = False,
                 ip_masq: bool = False, mtu: int = 0, hairpin_mode: bool = False,
                 promisc_mode: bool = False, vlan: int = 0, preserve_default_vlan: bool = False,
                 macspoofchk: bool = False, enable_dad: bool = False, mac: str = "") -> None:
        self.net = net
        self.bridge = bridge
        self.is_gateway = is_gateway
        self.is_default_gateway = is_default_gateway
        self.force_address = force_address
        self.ip_masq = ip_masq
        self.mtu = mtu
        self.hairpin_mode = hairpin_mode
        self.promisc_mode = promisc_mode
        self.vlan = vlan
        self.preserve_default_vlan = preserve_default_vlan
        self.macspoofchk = macspoofchk
        self.enable_dad = enable_dad
        self.mac = mac  # requested container MAC: CNI_ARGS MAC, args.cni.mac, runtimeConfig.mac

    @property
    def is_layer3(self) -> bool:
        return self.net.ipam_type != ""


def _bool(raw: dict[str, Any], key: str, default: bool = False) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise internal(f"failed to load netconf: {key} must be a boolean")
    return value


def _int(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int):
        raise internal(f"failed to load netconf: {key} must be an integer")
    return value


def load_bridge_conf(stdin_data: bytes, cni_args_raw: str) -> BridgeConf:
    net = load_netconf(stdin_data)
    raw = net.raw
    bridge = raw.get("bridge") or DEFAULT_BRIDGE
    if not isinstance(bridge, str):
        raise internal("failed to load netconf: bridge must be a string")
    try:
        validate_interface_name(bridge)
    except CNIError as e:
        raise CNIError(ERR_INVALID_NETWORK_CONFIG, f"invalid bridge name {bridge!r}",
                       e.msg) from e
    vlan = _int(raw, "vlan")
    if vlan < 0 or vlan > 4094:
        raise internal(f"invalid VLAN ID {vlan} (must be between 0 and 4094)")
    mac = split_cni_args(cni_args_raw).get("MAC", "")
    cni_args = net.args.get("cni")
    if isinstance(cni_args, dict) and cni_args.get("mac"):
        mac = str(cni_args["mac"])
    if net.runtime_config.get("mac"):
        mac = str(net.runtime_config["mac"])
    if mac and not is_valid_mac(mac):
        raise internal(f"failed to make veth pair: address {mac}: invalid MAC address")
    is_default_gw = _bool(raw, "isDefaultGateway")
    return BridgeConf(
        net=net, bridge=bridge,
        is_gateway=_bool(raw, "isGateway") or is_default_gw,
        is_default_gateway=is_default_gw,
        force_address=_bool(raw, "forceAddress"), ip_masq=_bool(raw, "ipMasq"),
        mtu=_int(raw, "mtu"), hairpin_mode=_bool(raw, "hairpinMode"),
        promisc_mode=_bool(raw, "promiscMode"), vlan=vlan,
        preserve_default_vlan=_bool(raw, "preserveDefaultVlan"),
        macspoofchk=_bool(raw, "macspoofchk"), enable_dad=_bool(raw, "enabledad"),
        mac=mac.lower())


def masquerade_chain(network: str, container_id: str) -> str:
    """The reference's iptables chain name: CNI- + sha512(name+id), 28 characters in all."""
    try:  # the builtin digest: hashlib loads OpenSSL, ~2 ms of start-up, for the same bytes
        from _sha512 import sha512
    except ImportError:  # Python 3.12+ names it _sha2
        from hashlib import sha512

    return ("CNI-" + sha512((network + container_id).encode()).hexdigest())[:28]


def masquerade_comment(network: str, container_id: str) -> str:
    return f'name: "{network}" id: "{container_id}"'
