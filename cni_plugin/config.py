"""Network configuration (the JSON on stdin) shared by our plugins."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cni_plugin.errors import ERR_INVALID_NETWORK_CONFIG, CNIError, internal
from cni_plugin.types import DNS, Result
from cni_plugin.version import DEFAULT_CONFIG_VERSION, result_from_json

DATAPLANES = ("emulated", "linux")
DEFAULT_DATAPLANE_DIR = "/var/lib/cni/emu-dataplane"


@dataclass(frozen=True)
class NetConf:
    cni_version: str
    name: str
    type: str
    ipam: dict[str, Any] = field(default_factory=dict)
    dns: DNS = field(default_factory=DNS)
    prev_result: Result | None = None
    runtime_config: dict[str, Any] = field(default_factory=dict)
    args: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, bool] = field(default_factory=dict)
    dataplane: str = "emulated"
    dataplane_dir: str = DEFAULT_DATAPLANE_DIR
    valid_attachments: list[tuple[str, str]] | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def ipam_type(self) -> str:
        return str(self.ipam.get("type", ""))


def decode_object(stdin_data: bytes) -> dict[str, Any]:
    """The config as a JSON object; ValueError otherwise."""
    conf = json.loads(stdin_data)
    if not isinstance(conf, dict):
        raise ValueError(f"expected a JSON object, got {type(conf).__name__}")
    return conf


def _obj(conf: dict[str, Any], key: str) -> dict[str, Any]:
    value = conf.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a JSON object")
    return value


def load_netconf(stdin_data: bytes) -> NetConf:
    """Parse the network configuration; errors read as the reference plugins' do."""
    try:
        conf = decode_object(stdin_data)
        version = conf.get("cniVersion") or DEFAULT_CONFIG_VERSION
        if not isinstance(version, str):
            raise ValueError("cniVersion must be a string")
        dns = DNS.from_json(conf.get("dns"))
        ipam = _obj(conf, "ipam")
        runtime_config = _obj(conf, "runtimeConfig")
        args = _obj(conf, "args")
        capabilities = _obj(conf, "capabilities")
    except ValueError as e:  # json.JSONDecodeError is a ValueError
        raise internal(f"failed to load netconf: {e}") from e
    dataplane = conf.get("dataplane", "emulated")
    if dataplane not in DATAPLANES:
        raise CNIError(ERR_INVALID_NETWORK_CONFIG,
                       f"invalid dataplane {dataplane!r}: must be one of {', '.join(DATAPLANES)}")
    dataplane_dir = conf.get("dataplaneDir") or DEFAULT_DATAPLANE_DIR
    if not isinstance(dataplane_dir, str):
        raise CNIError(ERR_INVALID_NETWORK_CONFIG, "dataplaneDir must be a string")
    return NetConf(
        cni_version=version, name=str(conf.get("name", "")), type=str(conf.get("type", "")),
        ipam=ipam, dns=dns, prev_result=parse_prev_result(conf, version),
        runtime_config=runtime_config, args=args,
        capabilities={k: bool(v) for k, v in capabilities.items()},
        dataplane=dataplane, dataplane_dir=dataplane_dir,
        valid_attachments=_valid_attachments(conf), raw=conf)


def parse_prev_result(conf: dict[str, Any], conf_version: str) -> Result | None:
    """prevResult, read in the config's version as the reference reads it."""
    raw = conf.get("prevResult")
    if raw is None:
        return None
    try:
        return result_from_json(raw, conf_version)
    except ValueError as e:
        raise internal(f"could not parse prevResult: {e}") from e


def _valid_attachments(conf: dict[str, Any]) -> list[tuple[str, str]] | None:
    raw = conf.get("cni.dev/valid-attachments")
    if raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise CNIError(ERR_INVALID_NETWORK_CONFIG,
                       "cni.dev/valid-attachments must be a list of objects")
    return [(str(a.get("containerID", "")), str(a.get("ifname", ""))) for a in raw]
