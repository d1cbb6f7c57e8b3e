"""The bridge plugin's network configuration: the reference's fields and defaults."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from cni_plugin.config import NetConf, load_netconf
from cni_plugin.errors import ERR_INVALID_NETWORK_CONFIG, CNIError, internal
from cni_plugin.names import validate_interface_name
from cni_plugin.skel import split_cni_args

DEFAULT_BRIDGE = "cni0"
MAC_PATTERN = re.compile(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}")


@dataclass(frozen=True)
class BridgeConf:
    net: NetConf
    bridge: str = DEFAULT_BRIDGE
    is_gateway: bool = False
    is_default_gateway: bool = False
    force_address: bool = False
    ip_masq: bool = False
    mtu: int = 0
    hairpin_mode: bool = False
    promisc_mode: bool = False
    vlan: int = 0
    preserve_default_vlan: bool = True
    macspoofchk: bool = False
    enable_dad: bool = False
    mac: str = ""  # requested container MAC: CNI_ARGS MAC, args.cni.mac, runtimeConfig.mac

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
    if mac and not MAC_PATTERN.fullmatch(mac):
        raise internal(f"failed to make veth pair: address {mac}: invalid MAC address")
    is_default_gw = _bool(raw, "isDefaultGateway")
    return BridgeConf(
        net=net, bridge=bridge,
        is_gateway=_bool(raw, "isGateway") or is_default_gw,
        is_default_gateway=is_default_gw,
        force_address=_bool(raw, "forceAddress"), ip_masq=_bool(raw, "ipMasq"),
        mtu=_int(raw, "mtu"), hairpin_mode=_bool(raw, "hairpinMode"),
        promisc_mode=_bool(raw, "promiscMode"), vlan=vlan,
        preserve_default_vlan=_bool(raw, "preserveDefaultVlan", True),
        macspoofchk=_bool(raw, "macspoofchk"), enable_dad=_bool(raw, "enabledad"),
        mac=mac.lower())


def masquerade_chain(network: str, container_id: str) -> str:
    """The reference's iptables chain name: CNI- + sha512(name+id), 28 characters in all."""
    return ("CNI-" + hashlib.sha512((network + container_id).encode()).hexdigest())[:28]


def masquerade_comment(network: str, container_id: str) -> str:
    return f'name: "{network}" id: "{container_id}"'
