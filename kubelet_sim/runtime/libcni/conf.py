"""Network configuration as libcni parses it and containerd picks it.

A conf dir holds ``.conflist``, ``.conf`` and ``.json`` files. containerd's
go-cni sorts them by name and loads the first one as the pod network (its
default ``max_conf_num`` is 1): a ``.conflist`` is a network list, any other
file a single plugin config wrapped into a one-plugin list. A broken first
file is an error, as go-cni answers it (the runtime reports the network not
ready); ``skip_invalid=True`` instead skips it as CRI-O's ocicni and the old
dockershim did. The loopback network is added by the runtime itself on ``lo``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from cni_spec.gojson import dumps_compact
from cni_spec.types import CURRENT_VERSION
from kubelet_sim.runtime.libcni.results import parse_version

CONF_EXTENSIONS = (".conf", ".conflist", ".json")


class NetworkNotReady(Exception):
    """No usable pod network: what the CRI reports as NetworkReady=false."""


class NoNetworkConfig(NetworkNotReady):
    """The conf dir is missing, empty, or holds no config file."""


class InvalidNetworkConfig(NetworkNotReady):
    """A config file that libcni cannot parse or that names no plugin."""


@dataclass(frozen=True)
class PluginConf:
    """One plugin of a list: its parsed JSON and the exact bytes libcni keeps."""

    type: str
    raw: dict[str, Any]
    bytes: bytes
    capabilities: dict[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class NetworkConfigList:
    """A network configuration list: a ``.conflist``, or a single ``.conf`` lifted into a
    list of one plugin as libcni does; ``bytes`` is the file as read."""

    name: str
    cni_version: str
    plugins: tuple[PluginConf, ...]
    bytes: bytes
    disable_check: bool = False
    disable_gc: bool = False
    load_only_inlined_plugins: bool = False
    source: str = ""


def go_json(value: Any) -> bytes:
    """JSON as Go's json.Marshal writes a map: compact, keys sorted, <>& escaped."""
    return dumps_compact(value, sort_keys=True).encode()


def _json_object(data: bytes, what: str) -> dict[str, Any]:
    """``data`` decoded as a JSON object; ``what`` names it in libcni's error text."""
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise InvalidNetworkConfig(f"error parsing {what}: {exc}") from None
    if not isinstance(raw, dict):
        raise InvalidNetworkConfig(f"error parsing {what}: not a JSON object")
    return raw


def plugin_conf_from_bytes(data: bytes) -> PluginConf:
    raw = _json_object(data, "configuration")
    plugin_type = raw.get("type")
    if not isinstance(plugin_type, str) or not plugin_type:
        raise InvalidNetworkConfig("error parsing configuration: missing 'type'")
    caps = raw.get("capabilities") or {}
    if not isinstance(caps, dict) or not all(isinstance(v, bool) for v in caps.values()):
        raise InvalidNetworkConfig(
            "error parsing configuration: capabilities must map names to booleans"
        )
    return PluginConf(type=plugin_type, raw=raw, bytes=data, capabilities=dict(caps))


def _read_bool(raw: dict[str, Any], key: str) -> bool:
    value = raw.get(key, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InvalidNetworkConfig(
        f"error parsing configuration list: invalid value {value!r} for {key}"
    )


def _highest_supported(raw: dict[str, Any], declared: str) -> str:
    """With ``cniVersions``, the highest listed version this libcni implements."""
    listed = raw["cniVersions"]
    if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
        raise InvalidNetworkConfig("error parsing configuration list: invalid type for cniVersions")
    current = parse_version(CURRENT_VERSION)
    usable = [
        v for v in [*listed, *([declared] if declared else [])] if parse_version(v) <= current
    ]
    return max(usable, key=parse_version) if usable else declared


def conf_list_from_bytes(data: bytes, *, source: str = "") -> NetworkConfigList:
    raw = _json_object(data, "configuration list")
    if "name" not in raw:
        raise InvalidNetworkConfig("error parsing configuration list: no name")
    if not isinstance(raw["name"], str):
        raise InvalidNetworkConfig("error parsing configuration list: invalid name type")
    version = raw.get("cniVersion", "")
    if not isinstance(version, str):
        raise InvalidNetworkConfig("error parsing configuration list: invalid cniVersion type")
    if "cniVersions" in raw:
        version = _highest_supported(raw, version)
    inlined_only = _read_bool(raw, "loadOnlyInlinedPlugins")
    if "plugins" not in raw and inlined_only:
        raise InvalidNetworkConfig(
            "error parsing configuration list: "
            "`loadOnlyInlinedPlugins` is true, and no 'plugins' key"
        )
    # Without a plugins key the list's plugins may come from <dir>/<name>/*.conf.
    plugins_raw = raw.get("plugins", [])
    if not isinstance(plugins_raw, list):
        raise InvalidNetworkConfig("error parsing configuration list: invalid 'plugins' type")
    if "plugins" in raw and not plugins_raw:
        raise InvalidNetworkConfig("error parsing configuration list: no plugins in list")
    plugins = []
    for i, plugin in enumerate(plugins_raw):
        try:
            plugins.append(plugin_conf_from_bytes(go_json(plugin)))
        except InvalidNetworkConfig as exc:
            raise InvalidNetworkConfig(f"failed to parse plugin config {i}: {exc}") from None
    return NetworkConfigList(
        name=raw["name"],
        cni_version=version,
        plugins=tuple(plugins),
        bytes=data,
        disable_check=_read_bool(raw, "disableCheck"),
        disable_gc=_read_bool(raw, "disableGC"),
        load_only_inlined_plugins=inlined_only,
        source=source,
    )


def conf_list_from_conf(plugin: PluginConf, *, source: str = "") -> NetworkConfigList:
    """A single plugin config as a one-plugin list with the plugin's name and version."""
    wrapped = {
        "name": plugin.raw.get("name", ""),
        "cniVersion": plugin.raw.get("cniVersion", ""),
        "plugins": [plugin.raw],
    }
    return conf_list_from_bytes(go_json(wrapped), source=source)


def loopback_network(plugin_type: str = "loopback", **plugin_keys: Any) -> NetworkConfigList:
    """The loopback network containerd adds on ``lo``.

    Our bin dirs call the plugin emu-loopback, and tests point its state at a
    temp dir (``dataplaneDir=...``); containerd itself sends the plain form.
    """
    plugin = {"type": plugin_type, **plugin_keys}
    doc = {"cniVersion": "1.0.0", "name": "cni-loopback", "plugins": [plugin]}
    return conf_list_from_bytes(json.dumps(doc).encode())


LOOPBACK_NETWORK = loopback_network()


def conf_files(conf_dir: str) -> list[str]:
    """The config files of ``conf_dir`` sorted by name (missing dir → none)."""
    try:
        return _files_with(conf_dir, CONF_EXTENSIONS)
    except OSError as exc:
        raise NoNetworkConfig(f"failed to read config file: {exc}") from None


def _files_with(directory: str, extensions: tuple[str, ...]) -> list[str]:
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = [
        e.path for e in entries if not e.is_dir() and os.path.splitext(e.name)[1] in extensions
    ]
    return sorted(names)


def _with_plugin_files(net: NetworkConfigList) -> NetworkConfigList:
    """libcni appends the ``.conf`` files of ``<conf dir>/<network name>/``, sorted."""
    if not net.load_only_inlined_plugins:
        extra = []
        for path in _files_with(os.path.join(os.path.dirname(net.source), net.name), (".conf",)):
            try:
                with open(path, "rb") as f:
                    extra.append(plugin_conf_from_bytes(f.read()))
            except OSError as exc:
                raise InvalidNetworkConfig(f"error reading {path}: {exc}") from None
        net = dataclasses.replace(net, plugins=net.plugins + tuple(extra))
    if not net.plugins:
        raise InvalidNetworkConfig("no plugin configs found")
    return net


def load_conf_file(path: str) -> NetworkConfigList:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InvalidNetworkConfig(f"error reading {path}: {exc}") from None
    if path.endswith(".conflist"):
        try:
            return _with_plugin_files(conf_list_from_bytes(data, source=path))
        except InvalidNetworkConfig as exc:
            raise InvalidNetworkConfig(
                f"failed to load CNI config list file {path}: {exc}"
            ) from None
    try:
        plugin = plugin_conf_from_bytes(data)
    except InvalidNetworkConfig as exc:
        raise InvalidNetworkConfig(f"failed to load CNI config file {path}: {exc}") from None
    return conf_list_from_conf(plugin, source=path)


def load_pod_network(conf_dir: str, *, skip_invalid: bool = False) -> NetworkConfigList:
    """The pod network: the first config file in ``conf_dir`` by name."""
    files = conf_files(conf_dir)
    if not files:
        raise NoNetworkConfig(f"no network config found in {conf_dir}: cni plugin not initialized")
    errors = []
    for path in files:
        try:
            return load_conf_file(path)
        except InvalidNetworkConfig as exc:
            if not skip_invalid:
                raise
            errors.append(str(exc))
    raise InvalidNetworkConfig(
        f"no valid networks found in {conf_dir}: cni plugin not initialized ({'; '.join(errors)})"
    )
