"""Network configuration (the JSON on stdin) shared by our plugins."""

from __future__ import annotations

from cni_spec.errors import ERR_INVALID_NETWORK_CONFIG, CNIError, internal
from cni_spec.gojson import loads
from cni_spec.types import DNS, Record, Result
from cni_spec.version import DEFAULT_CONFIG_VERSION, result_from_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATAPLANES = ("emulated", "linux")
CHOSEN_BY_NETNS = ""  # no "dataplane" key: chosen per command (cni_plugin.dataplane.choice)
DEFAULT_DATAPLANE_DIR = "/var/lib/cni/emu-dataplane"


class NetConf(Record):
    """The fields every plugin reads; `raw` keeps the whole document for plugin-specific ones."""

    __slots__ = ("args", "capabilities", "cni_version", "dataplane", "dataplane_dir", "dns",
                 "ipam", "name", "prev_result", "raw", "runtime_config", "type",
                 "valid_attachments")

    def __init__(self, cni_version: str, name: str, type: str,
                 ipam: dict[str, Any] | None = None, dns: DNS | None = None,
                 prev_result: Result | None = None,
                 runtime_config: dict[str, Any] | None = None,
                 args: dict[str, Any] | None = None,
                 capabilities: dict[str, bool] | None = None,
                 dataplane: str = CHOSEN_BY_NETNS, dataplane_dir: str = DEFAULT_DATAPLANE_DIR,
                 valid_attachments: list[tuple[str, str]] | None = None,
                 raw: dict[str, Any] | None = None) -> None:
        self.cni_version = cni_version
        self.name = name
        self.type = type
        self.ipam: dict[str, Any] = ipam or {}
        self.dns = dns if dns is not None else DNS()
        self.prev_result = prev_result
        self.runtime_config: dict[str, Any] = runtime_config or {}
        self.args: dict[str, Any] = args or {}
        self.capabilities: dict[str, bool] = capabilities or {}
        self.dataplane = dataplane
        self.dataplane_dir = dataplane_dir
        self.valid_attachments: list[tuple[str, str]] = valid_attachments or []
        self.raw: dict[str, Any] = raw or {}

    @property
    def ipam_type(self) -> str:
        return str(self.ipam.get("type", ""))


def decode_object(stdin_data: bytes) -> dict[str, Any]:
    """The config as a JSON object; ValueError otherwise."""
    conf = loads(stdin_data)
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
    except ValueError as e:
        raise internal(f"failed to load netconf: {e}") from e
    dataplane = conf.get("dataplane")
    if dataplane is None:
        dataplane = CHOSEN_BY_NETNS
    elif dataplane not in DATAPLANES:
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
        valid_attachments=valid_attachments(conf), raw=conf)


def parse_prev_result(conf: dict[str, Any], conf_version: str) -> Result | None:
    """prevResult, read in the config's version as the reference reads it."""
    raw = conf.get("prevResult")
    if raw is None:
        return None
    try:
        return result_from_json(raw, conf_version)
    except ValueError as e:
        raise internal(f"could not parse prevResult: {e}") from e


def valid_attachments(conf: dict[str, Any]) -> list[tuple[str, str]]:
    """GC's cni.dev/valid-attachments as (container id, ifname) pairs.

    Absent or null is an empty list, as the reference types decode it: libcni (and so
    cnitool) sends no list when nothing is valid, and then every attachment is stale.
    """
    raw = conf.get("cni.dev/valid-attachments")
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(a, dict) for a in raw):
        raise CNIError(ERR_INVALID_NETWORK_CONFIG,
                       "cni.dev/valid-attachments must be a list of objects")
    return [(str(a.get("containerID", "")), str(a.get("ifname", ""))) for a in raw]
