"""The plugin-exec boundary of the libcni role: find a plugin binary and run it.

`RealExec` runs a binary as libcni's ``invoke`` package does: the runtime's own
environment plus the ``CNI_*`` variables, the network config on stdin, stdout
captured; a non-zero exit becomes a `CNIError` decoded from the error JSON
the plugin printed on stdout (or a message built from stderr when it printed
none). `FakeExec` answers from a Python handler and records every call, so the
ordering, config injection and CNI_ARGS rules are tested without processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cni_spec.errors import CNIError

# libcni retries a plugin start that fails with ETXTBSY (binary being written).
_TEXT_FILE_BUSY_RETRIES = 5


class PluginExec(Protocol):
    """What libcni needs from the outside world to run a plugin."""

    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str: ...

    def exec_plugin(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> bytes: ...


def find_in_path(plugin: str, paths: Sequence[str]) -> str:
    """Locate ``plugin`` in the first of ``paths`` holding a regular file of that name."""
    if not plugin:
        raise CNIError(0, "no plugin name provided")
    if os.sep in plugin:
        raise CNIError(0, f"invalid plugin name: {plugin}")
    if not paths:
        raise CNIError(0, "no paths provided")
    for directory in paths:
        candidate = os.path.join(directory, plugin)
        try:
            if os.path.isfile(candidate):
                return candidate
        except OSError:
            continue
    # Go prints a []string as [a b c].
    raise CNIError(0, f'failed to find plugin "{plugin}" in path [{" ".join(paths)}]')


def decode_plugin_failure(status: int, stdout: bytes, stderr: bytes) -> CNIError:
    """The error libcni reports for a plugin that exited non-zero."""
    reason = f"exit status {status}"
    if not stdout:
        if not stderr:
            return CNIError(0, f"netplugin failed with no error message: {reason}")
        return CNIError(0, f"netplugin failed: {stderr.decode(errors='replace')!r}: {reason}")
    try:
        raw = json.loads(stdout)
        if not isinstance(raw, dict):
            raise ValueError("not an object")
        return CNIError(int(raw.get("code", 0)), str(raw.get("msg", "")),
                        str(raw.get("details", "")))
    except (ValueError, TypeError) as exc:
        text = stdout.decode(errors="replace")
        return CNIError(
            0, f"netplugin failed but error parsing its diagnostic message {text!r}: {exc}")


@dataclass
class RealExec:
    """Exec the plugin binary; the runtime's environment is inherited, CNI_* override it.

    With ``netns`` (a network namespace path) the plugin runs inside that namespace
    through ``nsenter --net=``: a simulated node's host namespace on the Linux dataplane.
    """

    base_env: Mapping[str, str] | None = None
    timeout_s: float = 120.0
    stderr_sink: Callable[[str, bytes], None] | None = None
    netns: str | None = None

    def find_in_path(self, plugin: str, paths: Sequence[str]) -> str:
        return find_in_path(plugin, paths)

    def exec_plugin(self, plugin_path: str, stdin: bytes, env: Mapping[str, str]) -> bytes:
        full_env = dict(os.environ if self.base_env is None else self.base_env)
        full_env.update(env)
        for attempt in range(_TEXT_FILE_BUSY_RETRIES + 1):
            try:
                proc = subprocess.run(
                    [*(["nsenter", f"--net={self.netns}"] if self.netns else []), plugin_path],
                    input=stdin,
                    env=full_env,
                    capture_output=True,
                    timeout=self.timeout_s,
                    check=False,
                )
            except OSError as exc:
                if exc.errno == 26 and attempt < _TEXT_FILE_BUSY_RETRIES:  # ETXTBSY
                    time.sleep(1.0)
                    continue
                raise CNIError(0, f"netplugin failed: {exc}") from exc
            except subprocess.TimeoutExpired as exc:
                raise CNIError(0, f"netplugin timed out after {self.timeout_s}s") from exc
            if proc.returncode != 0:
                raise decode_plugin_failure(proc.returncode, proc.stdout, proc.stderr)
            if proc.stderr and self.stderr_sink is not None:
                self.stderr_sink(plugin_path, proc.stderr)
            return proc.stdout
        raise CNIError(0, "netplugin failed: text file busy")
