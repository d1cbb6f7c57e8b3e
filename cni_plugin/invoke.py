"""Exec a delegated plugin (IPAM) found on CNI_PATH, the way libcni's invoke package does.

The child gets our environment with CNI_COMMAND replaced, the network config on
stdin; its error JSON becomes a CNIError with its code, its result is read in
its own cniVersion (or the config's) and returned in the current shape.

When the file found on CNI_PATH is exactly one of our own executables (the script
``python -m cni_plugin.install`` writes, for this interpreter and this project) and its
module can run in-process, it is run here instead of in a new interpreter: the same
code, with the same environment, stdin, stdout, exit status and files written, without
a second interpreter start. Any other file (the reference host-local, a wrapper, an
older install) is exec'd.
"""

from __future__ import annotations

import errno
import sys
import time

from cni_plugin import posix_shim as posix_shim
from cni_plugin.executables import EXECUTABLES, script_text
from cni_plugin.skel import NESTED, CmdArgs, InjectedCrash, config_version
from cni_spec.errors import CNIError, internal
from cni_spec.gojson import go_quote, loads
from cni_spec.types import Result
from cni_spec.version import result_from_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

TEXT_FILE_BUSY_RETRIES = 5
# Our plugins whose module has run(getenv=, stdin=, stdout=, stderr=) -> exit status.
RUNS_IN_PROCESS = frozenset({"cni_plugin.host_local"})


def find_in_path(plugin: str, paths: list[str]) -> str:
    if plugin == "":
        raise internal("no plugin name provided")
    if "/" in plugin:
        raise internal(f"invalid plugin name: {plugin}")
    if not paths:
        raise internal("no paths provided")
    for directory in paths:
        candidate = posix_shim.join(directory, plugin)
        if posix_shim.isfile(candidate):
            return candidate
    raise internal(f"failed to find plugin \"{plugin}\" in path [{' '.join(paths)}]")


def delegate_env(cmd: CmdArgs, command: str,
                 base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Our environment for the child, with the CNI_* values of this call and CNI_COMMAND set."""
    env = posix_shim.environ_copy() if base is None else dict(base)
    env.update({"CNI_CONTAINERID": cmd.container_id, "CNI_NETNS": cmd.netns,
                "CNI_IFNAME": cmd.ifname, "CNI_ARGS": cmd.args_raw,
                "CNI_PATH": ":".join(cmd.path), "CNI_COMMAND": command})
    if cmd.netns_override:
        env["CNI_NETNS_OVERRIDE"] = cmd.netns_override
    return env


def _plugin_error(returncode: int, stdout: bytes, stderr: bytes) -> CNIError:
    status = f"exit status {returncode}" if returncode >= 0 else f"signal: {-returncode}"
    if not stdout:
        if not stderr:
            return CNIError(0, f"netplugin failed with no error message: {status}")
        return CNIError(0, f"netplugin failed: {go_quote(stderr.decode(errors='replace'))}: "
                           f"{status}")
    try:
        data = loads(stdout)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return CNIError(int(data.get("code", 0)), str(data.get("msg", "")),
                        str(data.get("details", "") or ""))
    except (ValueError, TypeError) as e:
        return CNIError(0, "netplugin failed but error parsing its diagnostic message "
                           f"{go_quote(stdout.decode(errors='replace'))}: {e}")


def in_process_module(plugin_path: str) -> str | None:
    """The module of ours that `plugin_path` would run, when the file is exactly our
    script for it and the module runs in-process; None otherwise."""
    module = EXECUTABLES.get(posix_shim.basename(plugin_path))
    if module not in RUNS_IN_PROCESS:
        return None
    expected = script_text(module).encode()
    try:
        fd = posix_shim.open_fd(plugin_path, posix_shim.O_RDONLY | posix_shim.O_CLOEXEC)
    except OSError:
        return None
    try:
        content = posix_shim.read(fd, len(expected) + 1)
    finally:
        posix_shim.close(fd)
    return module if content == expected else None


def run_in_process(module: str, stdin_data: bytes,
                   env: Mapping[str, str]) -> tuple[int, bytes, bytes]:
    """What exec'ing our script would give: exit status, stdout, stderr."""
    from _io import BytesIO, StringIO

    plugin = __import__(module, fromlist=["run"])
    out, err = StringIO(), StringIO()
    NESTED[0] += 1
    try:
        status = plugin.run(getenv=env.get, stdin=BytesIO(stdin_data), stdout=out, stderr=err)
    except InjectedCrash as crash:  # its "process" died: no answer, exit 2
        return 2, b"", f"{crash}\n".encode()
    finally:
        NESTED[0] -= 1
    return status, out.getvalue().encode(), err.getvalue().encode()


def exec_plugin(plugin_path: str, stdin_data: bytes, env: Mapping[str, str]) -> bytes:
    """Run the plugin; its stdout on success, CNIError (its own code) on failure."""
    module = in_process_module(plugin_path)
    for attempt in range(TEXT_FILE_BUSY_RETRIES + 1):
        try:
            if module is not None:
                returncode, stdout, stderr = run_in_process(module, stdin_data, env)
            else:
                returncode, stdout, stderr = posix_shim.run_captured(
                    [plugin_path], stdin_data, env)
        except OSError as e:
            if e.errno == errno.ETXTBSY and attempt < TEXT_FILE_BUSY_RETRIES:
                time.sleep(1)
                continue
            raise internal(f"fork/exec {plugin_path}: {e.strerror}") from e
        if returncode != 0:
            raise _plugin_error(returncode, stdout, stderr)
        if stderr:
            sys.stderr.buffer.write(stderr)
            sys.stderr.flush()
        return stdout
    raise internal(f"fork/exec {plugin_path}: text file busy")


def _parse_result(netconf: bytes, output: bytes) -> Result:
    conf_version = config_version(netconf)
    try:
        raw = loads(output) if output.strip() else {}
    except ValueError as e:
        raise internal(f"failed to unmarshal raw result: {e}") from e
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise internal("failed to unmarshal raw result: not a JSON object")
    version = raw.get("cniVersion")
    if not isinstance(version, str) or version == "":
        version = conf_version
    try:
        return result_from_json(raw, version)
    except ValueError as e:
        raise internal(str(e)) from e


def delegate_add(plugin: str, netconf: bytes, cmd: CmdArgs) -> Result:
    path = find_in_path(plugin, cmd.path)
    return _parse_result(netconf, exec_plugin(path, netconf, delegate_env(cmd, "ADD")))


def delegate_no_result(verb: str, plugin: str, netconf: bytes, cmd: CmdArgs) -> None:
    """DEL, CHECK, STATUS or GC of the delegated plugin."""
    path = find_in_path(plugin, cmd.path)
    exec_plugin(path, netconf, delegate_env(cmd, verb))


def delegate_del(plugin: str, netconf: bytes, cmd: CmdArgs) -> None:
    delegate_no_result("DEL", plugin, netconf, cmd)


def delegate_check(plugin: str, netconf: bytes, cmd: CmdArgs) -> None:
    delegate_no_result("CHECK", plugin, netconf, cmd)


def delegate_status(plugin: str, netconf: bytes, cmd: CmdArgs) -> None:
    delegate_no_result("STATUS", plugin, netconf, cmd)


def delegate_gc(plugin: str, netconf: bytes, cmd: CmdArgs) -> None:
    delegate_no_result("GC", plugin, netconf, cmd)
