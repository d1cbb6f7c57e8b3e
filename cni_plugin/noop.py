"""A test plugin told what to do by a debug file, which also records every call made to it.

The debug file (JSON) is named by CNI_ARGS `DEBUG=<path>` or the config's
`"debugFile"` (or `"ipam": {"debugFile"}` when it serves as an IPAM plugin).
Keys, each optional, also settable per command under `"commands": {"DEL": {...}}`:

- `reportResult`: the result ADD reports (an object in any cniVersion; it is
  printed in the config's version), or "PASSTHROUGH" for prevResult.
- `reportError`, `reportErrorCode` (default 999), `reportErrorDetails`: fail with this error.
- `exitWithCode`: exit with this status, printing nothing (a crashing plugin).
- `reportStderr`: text written to stderr.
- `sleepSeconds`: wait this long before answering (a slow or hanging plugin).
- `reportVersionSupport`: the versions VERSION claims (debug file named in CNI_ARGS only).

Each call is appended to `"calls"`: command, the CNI_* environment and stdin.
"""

from __future__ import annotations

import sys
import time

from cni_plugin import posix_shim as posix_shim
from cni_plugin.config import decode_object, load_netconf
from cni_plugin.dataplane.statefile import StateFile
from cni_plugin.skel import CmdArgs, Handlers, config_version, plugin_main, split_cni_args
from cni_spec.errors import ERR_INTERNAL, CNIError
from cni_spec.gojson import loads
from cni_spec.types import Result
from cni_spec.version import ALL_VERSIONS, result_from_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

ABOUT = "CNI noop test plugin (cni-csi-mini emu-noop)"
KNOWN_ARGS = frozenset({"DEBUG"})


def debug_file(args: CmdArgs) -> str:
    if args.args.get("DEBUG"):
        return args.args["DEBUG"]
    conf = decode_object(args.stdin_data)
    ipam = conf.get("ipam")
    # As an IPAM plugin it sees its parent's config: look in "ipam" too.
    path = conf.get("debugFile") or (ipam.get("debugFile") if isinstance(ipam, dict) else "")
    return path if isinstance(path, str) else ""


def _record(path: str, args: CmdArgs) -> dict[str, Any]:
    """Append this call to the debug file; the instructions that apply to this command."""
    store = StateFile(posix_shim.dirname(posix_shim.abspath(path)), posix_shim.basename(path))
    store.lock_path = path + ".lock"
    env = {"CNI_COMMAND": args.command, "CNI_CONTAINERID": args.container_id,
           "CNI_NETNS": args.netns, "CNI_IFNAME": args.ifname, "CNI_ARGS": args.args_raw,
           "CNI_PATH": ":".join(args.path), "CNI_NETNS_OVERRIDE": args.netns_override}
    with store.transaction() as debug:
        debug.setdefault("calls", []).append({
            "command": args.command, "env": env,
            "stdin": args.stdin_data.decode(errors="replace")})
        plan = {k: v for k, v in debug.items() if k not in ("calls", "commands")}
        plan.update(debug.get("commands", {}).get(args.command, {}))
    return plan


def _obey(args: CmdArgs) -> dict[str, Any]:
    path = debug_file(args)
    plan = _record(path, args) if path else {}
    if plan.get("sleepSeconds"):
        time.sleep(float(plan["sleepSeconds"]))
    if plan.get("reportStderr"):
        sys.stderr.write(str(plan["reportStderr"]))
        sys.stderr.flush()
    if plan.get("exitWithCode") is not None:
        sys.stdout.flush()
        posix_shim._exit(int(plan["exitWithCode"]))
    if plan.get("reportError"):
        raise CNIError(int(plan.get("reportErrorCode", ERR_INTERNAL)), str(plan["reportError"]),
                       str(plan.get("reportErrorDetails", "")))
    return plan


def cmd_add(args: CmdArgs) -> Result:
    plan = _obey(args)
    conf = load_netconf(args.stdin_data)
    report = plan.get("reportResult", "PASSTHROUGH")
    if report == "PASSTHROUGH":
        return conf.prev_result or Result()
    if isinstance(report, str):
        report = loads(report)
    version = report.get("cniVersion") or config_version(args.stdin_data)
    return result_from_json(report, version)


def cmd_other(args: CmdArgs) -> None:
    _obey(args)


HANDLERS = Handlers(add=cmd_add, delete=cmd_other, check=cmd_other, status=cmd_other,
                    gc=cmd_other)


def supported_versions(getenv: Callable[[str], str | None]) -> tuple[str, ...]:
    """`reportVersionSupport` from the debug file named in CNI_ARGS (VERSION reads no
    stdin, so only CNI_ARGS can name it), else every version."""
    path = split_cni_args(getenv("CNI_ARGS") or "").get("DEBUG")
    if path:
        try:
            with open(path, "rb") as f:
                claimed = loads(f.read()).get("reportVersionSupport")
        except (OSError, ValueError, AttributeError):
            claimed = None
        if isinstance(claimed, list) and claimed:
            return tuple(str(v) for v in claimed)
    return ALL_VERSIONS


def main() -> None:
    sys.exit(plugin_main(HANDLERS, about=ABOUT, known_args=KNOWN_ARGS,
                         supported=supported_versions(posix_shim.getenv)))


if __name__ == "__main__":
    main()
