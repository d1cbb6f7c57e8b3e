"""The libcni role: run a network configuration list's plugins as libcni does.

- ADD runs the plugins in order. Each gets the list's ``name`` and
  ``cniVersion``, the previous plugin's result as ``prevResult`` and a
  ``runtimeConfig`` holding only the capability args it declares in its
  ``capabilities``. The last result is cached (`kubelet_sim.runtime.libcni.cache`). A
  failing plugin stops the ADD and nothing is undone here: as in libcni, the
  caller (the container runtime) tears the attachment down with DEL.
- DEL runs the plugins in reverse with the cached result (converted to the
  list's version) as ``prevResult`` when the list is 0.4.0 or newer and a
  cache exists, then drops the cache. A plugin error stops it and keeps the
  cache, so a retried DEL sees it again.
- CHECK (0.4.0 or newer, else an error) runs in order with the cached result.
- STATUS runs each plugin of a 1.1.0 list (older lists are skipped: success).
- GC DELs every cached attachment of the list that is not in the valid set,
  then sends GC with ``cni.dev/valid-attachments`` (and the older spelling
  ``cni.dev/attachments``, as libcni does) to every plugin of a 1.1.0 list.

Every exec (and every lookup of a plugin that fails) is recorded in the trace.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cni_spec.errors import CNIError
from cni_spec.names import validate_container_id, validate_interface_name, validate_network_name
from kubelet_sim.runtime.libcni.cache import (
    CachedAttachment,
    list_attachments,
    read_cached_result,
    remove_attachment,
    store_attachment,
)
from kubelet_sim.runtime.libcni.conf import NetworkConfigList, PluginConf, go_json
from kubelet_sim.runtime.libcni.invoke import PluginExec
from kubelet_sim.runtime.libcni.results import (
    Result,
    convert_result,
    create_result,
    version_at_least,
)
from kubelet_sim.utils.trace import Trace

# The capability args containerd's CRI plugin may pass (runtimeConfig keys).
CAPABILITY_ARGS = (
    "portMappings",
    "bandwidth",
    "dns",
    "ips",
    "mac",
    "io.kubernetes.cri.pod-annotations",
)



@dataclass(frozen=True)
class RuntimeConf:
    """One attachment's arguments: everything but the network config itself."""

    container_id: str
    netns: str
    ifname: str
    args: tuple[tuple[str, str], ...] = ()
    capability_args: Mapping[str, Any] = field(default_factory=dict)

    def cni_args(self) -> str:
        return ";".join(f"{k}={v}" for k, v in self.args)


def containerd_cni_args(
    *, namespace: str, name: str, sandbox_id: str, uid: str
) -> tuple[tuple[str, str], ...]:
    """CNI_ARGS as containerd's CRI plugin labels a pod sandbox."""
    return (
        ("IgnoreUnknown", "1"),
        ("K8S_POD_NAMESPACE", namespace),
        ("K8S_POD_NAME", name),
        ("K8S_POD_INFRA_CONTAINER_ID", sandbox_id),
        ("K8S_POD_UID", uid),
    )


def validate_attachment(network: str, rt: RuntimeConf) -> None:
    """libcni's checks before an ADD: container id, network name, interface name (the
    same rules and errors the plugins apply, from cni_spec)."""
    validate_container_id(rt.container_id)
    validate_network_name(network)
    validate_interface_name(rt.ifname)


def build_plugin_config(
    net: NetworkConfigList,
    plugin: PluginConf,
    *,
    prev_result: Result | None = None,
    rt: RuntimeConf | None = None,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """The stdin of one plugin: its config with the list's name/version injected."""
    conf = json.loads(plugin.bytes)
    conf["name"] = net.name
    conf["cniVersion"] = net.cni_version
    if prev_result is not None:
        conf["prevResult"] = prev_result
    conf.update(extra or {})
    if rt is not None:
        runtime_config = {
            cap: rt.capability_args[cap]
            for cap, enabled in plugin.capabilities.items()
            if enabled and cap in rt.capability_args
        }
        if runtime_config:
            conf["runtimeConfig"] = runtime_config
    return go_json(conf)


def _describe(plugin: PluginConf, net: NetworkConfigList) -> str:
    return f'type="{plugin.type}" name="{net.name}"' if net.name else f'type="{plugin.type}"'


def _wrap(prefix: str, err: CNIError) -> CNIError:
    wrapped = CNIError(err.code, f"{prefix}: {err}")
    wrapped.__cause__ = err
    return wrapped


class LibCNI:
    """Runs network lists through a `PluginExec`; plugins are found on ``bin_dirs``."""

    def __init__(
        self,
        bin_dirs: Sequence[str],
        cache_dir: str,
        plugin_exec: PluginExec,
        *,
        trace: Trace | None = None,
        node: str = "",
        component: str = "containerd",
    ) -> None:
        self.bin_dirs = list(bin_dirs)
        self.cache_dir = cache_dir
        self.plugin_exec = plugin_exec
        self.trace = trace
        self.node = node
        self.component = component

    # -- one exec -----------------------------------------------------------------

    def _exec(
        self, command: str, plugin: PluginConf, stdin: bytes, network: str, rt: RuntimeConf | None
    ) -> bytes:
        rt = rt or RuntimeConf(container_id="", netns="", ifname="")
        request = {
            "container_id": rt.container_id,
            "ifname": rt.ifname,
            "netns": rt.netns,
            "network": network,
        }
        args = dict(rt.args)
        if args.get("K8S_POD_NAME"):  # which pod the sandbox is for: a trace can be cut per pod
            request["pod"] = f"{args.get('K8S_POD_NAMESPACE', '')}/{args['K8S_POD_NAME']}"
        env = {
            "CNI_COMMAND": command,
            "CNI_CONTAINERID": rt.container_id,
            "CNI_NETNS": rt.netns,
            "CNI_ARGS": rt.cni_args(),
            "CNI_IFNAME": rt.ifname,
            "CNI_PATH": ":".join(self.bin_dirs),
        }
        start = time.monotonic()
        outcome = "OK"
        try:
            path = self.plugin_exec.find_in_path(plugin.type, self.bin_dirs)
            if command == "ADD":
                validate_attachment(network, rt)
            return self.plugin_exec.exec_plugin(path, stdin, env)
        except CNIError as err:
            outcome = err.summary()
            raise
        finally:
            if self.trace is not None:
                self.trace.record(
                    node=self.node,
                    component=self.component,
                    call=f"cni {command} {plugin.type}",
                    request=request,
                    result=outcome,
                    duration_ms=(time.monotonic() - start) * 1000.0,
                )

    def _parse_result(self, stdin: bytes, stdout: bytes) -> Result:
        """The plugin's result in its own version (the config's when it names none)."""
        conf_version = json.loads(stdin).get("cniVersion") or "0.1.0"
        try:
            raw = json.loads(stdout)
        except ValueError as exc:
            raise CNIError(0, f"failed to unmarshal raw result: {exc}") from None
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise CNIError(0, "failed to unmarshal raw result: not a JSON object")
        version = raw.get("cniVersion")
        return create_result(version if isinstance(version, str) and version else conf_version, raw)

    # -- the list operations --------------------------------------------------------

    def add_network_list(self, net: NetworkConfigList, rt: RuntimeConf) -> Result:
        if not net.plugins:
            raise CNIError(0, f'network "{net.name}" has no plugins')
        result: Result | None = None
        for plugin in net.plugins:
            stdin = build_plugin_config(net, plugin, prev_result=result, rt=rt)
            try:
                stdout = self._exec("ADD", plugin, stdin, net.name, rt)
                result = self._parse_result(stdin, stdout)
            except CNIError as err:
                raise _wrap(f"plugin {_describe(plugin, net)} failed (add)", err) from err
        assert result is not None  # a list always has at least one plugin
        try:
            store_attachment(self.cache_dir, self._attachment(net, rt, result))
        except (OSError, ValueError) as exc:
            raise CNIError(0, f'failed to set network "{net.name}" cached result: {exc}') from exc
        return result

    def _attachment(
        self, net: NetworkConfigList, rt: RuntimeConf, result: Result
    ) -> CachedAttachment:
        return CachedAttachment(
            container_id=rt.container_id,
            network=net.name,
            ifname=rt.ifname,
            config=net.bytes,
            netns=rt.netns,
            cni_args=rt.args,
            capability_args=dict(rt.capability_args),
            result=result,
        )

    def cached_result(self, net: NetworkConfigList, rt: RuntimeConf) -> Result | None:
        """The cached result converted to the list's version; None when none is cached."""
        try:
            raw = read_cached_result(self.cache_dir, net.name, rt.container_id, rt.ifname)
        except ValueError as exc:
            raise CNIError(0, str(exc)) from None
        if raw is None:
            return None
        version = raw.get("cniVersion") or "0.1.0"
        result = create_result(version, raw)
        try:
            return convert_result(result, net.cni_version)
        except CNIError as err:
            raise CNIError(0, "failed to convert cached result to config version "
                              f'"{net.cni_version}": {err}') from err

    def del_network_list(self, net: NetworkConfigList, rt: RuntimeConf) -> None:
        cached: Result | None = None
        if version_at_least(net.cni_version, "0.4.0"):
            try:
                cached = self.cached_result(net, rt)
            except CNIError:
                remove_attachment(self.cache_dir, net.name, rt.container_id, rt.ifname)
        for plugin in reversed(net.plugins):
            stdin = build_plugin_config(net, plugin, prev_result=cached, rt=rt)
            try:
                self._exec("DEL", plugin, stdin, net.name, rt)
            except CNIError as err:
                raise _wrap(f"plugin {_describe(plugin, net)} failed (delete)", err) from err
        remove_attachment(self.cache_dir, net.name, rt.container_id, rt.ifname)

    def check_network_list(self, net: NetworkConfigList, rt: RuntimeConf) -> None:
        if not version_at_least(net.cni_version, "0.4.0"):
            raise CNIError(0, f'configuration version "{net.cni_version}" '
                              "does not support the CHECK command")
        if net.disable_check:
            return
        try:
            cached = self.cached_result(net, rt)
        except CNIError as err:
            raise _wrap(f'failed to get network "{net.name}" cached result', err) from err
        for plugin in net.plugins:
            stdin = build_plugin_config(net, plugin, prev_result=cached, rt=rt)
            self._exec("CHECK", plugin, stdin, net.name, rt)

    def status_network_list(self, net: NetworkConfigList) -> None:
        """STATUS of every plugin; lists older than 1.1.0 have no STATUS and pass."""
        if not version_at_least(net.cni_version, "1.1.0"):
            return
        for plugin in net.plugins:
            self._exec("STATUS", plugin, build_plugin_config(net, plugin), net.name, None)

    def cached_attachments(self, container_id: str = "") -> list[CachedAttachment]:
        return list_attachments(self.cache_dir, container_id)

    def gc_network_list(
        self, net: NetworkConfigList, valid_attachments: Iterable[tuple[str, str]] | None
    ) -> None:
        """Release what is not valid; ``valid_attachments`` holds (container id, ifname)."""
        if net.disable_gc:
            return
        valid = None if valid_attachments is None else list(dict.fromkeys(valid_attachments))
        valid_set = set(valid or ())
        errors: list[str] = []
        for att in self.cached_attachments():
            if att.network != net.name or (att.container_id, att.ifname) in valid_set:
                continue
            rt = RuntimeConf(
                container_id=att.container_id,
                netns=att.netns,
                ifname=att.ifname,
                args=att.cni_args,
                capability_args=att.capability_args,
            )
            try:
                self.del_network_list(net, rt)
            except CNIError as err:
                errors.append(
                    f"failed to delete stale attachment {att.container_id} {att.ifname}: {err}"
                )
        if version_at_least(net.cni_version, "1.1.0"):
            extra: dict[str, Any] = {}
            if valid is not None:
                listed = [{"containerID": cid, "ifname": ifname} for cid, ifname in valid]
                extra = {"cni.dev/valid-attachments": listed, "cni.dev/attachments": listed}
            for plugin in net.plugins:
                try:
                    self._exec(
                        "GC", plugin, build_plugin_config(net, plugin, extra=extra), net.name, None
                    )
                except CNIError as err:
                    errors.append(f"failed to GC plugin {plugin.type}: {err}")
        if errors:
            raise CNIError(0, "\n".join(errors))
