"""A fake plugin exec for libcni tests: records every call and answers from handlers."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.invoke import find_in_path


@dataclass(frozen=True)
class ExecCall:
    """One recorded fake exec: the plugin type, its env and its parsed stdin config."""

    plugin: str
    env: dict[str, str]
    config: dict[str, Any]

    @property
    def command(self) -> str:
        return self.env.get("CNI_COMMAND", "")

    @property
    def ifname(self) -> str:
        return self.env.get("CNI_IFNAME", "")


# A fake plugin: given the call, return a result dict (printed as JSON), None
# (prints nothing) or raise CNIError (the plugin's error JSON, exit 1).
FakePlugin = Callable[[ExecCall], "dict[str, Any] | None"]


def echo_prev_result_plugin(call: ExecCall) -> dict[str, Any] | None:
    """A chained plugin that passes prevResult through on ADD and prints nothing else."""
    if call.command == "ADD":
        prev = call.config.get("prevResult")
        if isinstance(prev, dict):
            return prev
        return {"cniVersion": call.config.get("cniVersion", "0.1.0")}
    return None


@dataclass
class FakeExec:
    """Plugins as Python functions under ``/fake/bin``; every call recorded in order."""

    plugins: dict[str, FakePlugin] = field(default_factory=dict)
    calls: list[ExecCall] = field(default_factory=list)
    bin_dir: str = "/fake/bin"

    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str:
        if plugin in self.plugins and self.bin_dir in paths:
            return os.path.join(self.bin_dir, plugin)
        if not plugin or os.sep in plugin or not paths:
            return find_in_path(plugin, paths)
        raise CNIError(0, f'failed to find plugin "{plugin}" in path [{" ".join(paths)}]')

    def exec_plugin(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> bytes:
        plugin = os.path.basename(plugin_path)
        call = ExecCall(plugin=plugin, env=dict(env), config=json.loads(stdin))
        self.calls.append(call)
        result = self.plugins[plugin](call)
        return b"" if result is None else json.dumps(result).encode()

    def commands(self) -> list[tuple[str, str, str]]:
        """``(CNI_COMMAND, plugin type, ifname)`` for every call so far."""
        return [(c.command, c.plugin, c.ifname) for c in self.calls]
