"""The dispatcher every plugin's main() hands its commands to.

All CNI_* environment parsing lives here, in one table; env, stdin and stdout
are injected so a plugin runs in-process under test. This is the only place
that prints an error (JSON on stdout) and picks the exit status.
"""

from __future__ import annotations

import sys

from cni_plugin import posix_shim as posix_shim
from cni_plugin.config import decode_object
from cni_spec.errors import (
    ERR_DECODING_FAILURE,
    ERR_INCOMPATIBLE_CNI_VERSION,
    ERR_INTERNAL,
    ERR_INVALID_ENVIRONMENT_VARIABLES,
    ERR_INVALID_NETWORK_CONFIG,
    ERR_IO_FAILURE,
    CNIError,
    internal,
)
from cni_spec.gojson import dumps_compact, dumps_indent, go_quote, go_quote_list
from cni_spec.names import validate_container_id, validate_interface_name, validate_network_name
from cni_spec.types import CURRENT_VERSION, Record, Result
from cni_spec.version import (
    ALL_VERSIONS,
    DEFAULT_CONFIG_VERSION,
    VersionError,
    greater_or_equal,
    result_to_json,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

    Getenv = Callable[[str], "str | None"]

ALL_COMMANDS = ("ADD", "CHECK", "DEL", "GC", "STATUS")


class _Frozen(Record):
    """Immutable after __init__ (what @dataclass(frozen=True) gives, without importing it)."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of {type(self).__name__}")


class CmdArgs(_Frozen):
    """One invocation: the parsed CNI_* environment and stdin."""

    __slots__ = ("args", "args_raw", "command", "container_id", "ifname", "netns",
                 "netns_override", "path", "stdin_data")
    command: str            # ADD DEL CHECK STATUS GC VERSION
    container_id: str
    netns: str
    ifname: str
    args: dict[str, str]    # parsed CNI_ARGS
    path: list[str]         # CNI_PATH split on ':'
    stdin_data: bytes
    args_raw: str           # CNI_ARGS as given, passed on to delegated plugins untouched
    netns_override: str

    def __init__(self, command: str, container_id: str, netns: str, ifname: str,
                 args: dict[str, str], path: list[str], stdin_data: bytes,
                 args_raw: str = "", netns_override: str = "") -> None:
        self._init(command=command, container_id=container_id, netns=netns, ifname=ifname,
                   args=args, path=path, stdin_data=stdin_data, args_raw=args_raw,
                   netns_override=netns_override)


class Handlers(_Frozen):
    """A plugin's commands; a missing CHECK/STATUS/GC handler means plain success."""

    __slots__ = ("add", "check", "delete", "gc", "status")
    add: Callable[[CmdArgs], Result]
    delete: Callable[[CmdArgs], Result | None]
    check: Callable[[CmdArgs], None] | None
    status: Callable[[CmdArgs], None] | None
    gc: Callable[[CmdArgs], None] | None

    def __init__(self, add: Callable[[CmdArgs], Result],
                 delete: Callable[[CmdArgs], Result | None],
                 check: Callable[[CmdArgs], None] | None = None,
                 status: Callable[[CmdArgs], None] | None = None,
                 gc: Callable[[CmdArgs], None] | None = None) -> None:
        self._init(add=add, delete=delete, check=check, status=status, gc=gc)


class EnvVar(_Frozen):
    __slots__ = ("name", "required_for", "validate")
    name: str
    required_for: frozenset[str]
    validate: Callable[[str], None] | None

    def __init__(self, name: str, required_for: frozenset[str],
                 validate: Callable[[str], None] | None = None) -> None:
        self._init(name=name, required_for=required_for, validate=validate)


# name -> the commands that need it -> how its value is checked (only when needed)
ENV_TABLE: tuple[EnvVar, ...] = (
    EnvVar("CNI_COMMAND", frozenset(ALL_COMMANDS)),
    EnvVar("CNI_CONTAINERID", frozenset({"ADD", "CHECK", "DEL"}), validate_container_id),
    EnvVar("CNI_NETNS", frozenset({"ADD", "CHECK"})),
    EnvVar("CNI_IFNAME", frozenset({"ADD", "CHECK", "DEL"}), validate_interface_name),
    EnvVar("CNI_ARGS", frozenset()),
    EnvVar("CNI_PATH", frozenset(ALL_COMMANDS)),
    EnvVar("CNI_NETNS_OVERRIDE", frozenset()),
)

# Commands that exist only from a given spec version on.
MIN_VERSION_FOR = {"CHECK": "0.4.0", "GC": "1.1.0", "STATUS": "1.1.0"}


def split_cni_args(raw: str) -> dict[str, str]:
    """CNI_ARGS "K=V;K=V" as a dict, leniently (pairs without '=' are skipped)."""
    out: dict[str, str] = {}
    for pair in raw.split(";") if raw else []:
        key, sep, value = pair.partition("=")
        if sep:
            out[key] = value
    return out


def check_cni_args(raw: str, known: frozenset[str]) -> None:
    """Reject malformed pairs and unknown keys unless IgnoreUnknown=1|true.

    Messages and code (999) are the reference's (types.LoadArgs errors are plain errors).
    """
    if not raw:
        return
    unknown: list[str] = []
    ignore_unknown = False
    for pair in raw.split(";"):
        kv = pair.split("=")
        if len(kv) != 2:
            raise internal(f"ARGS: invalid pair {go_quote(pair)}")
        key, value = kv
        if key == "IgnoreUnknown":
            lowered = value.lower()
            if lowered not in ("1", "true", "0", "false"):
                raise internal(f"ARGS: error parsing value of pair {go_quote(pair)}: "
                               f"boolean unmarshal error: invalid input {lowered}")
            ignore_unknown = lowered in ("1", "true")
        elif key not in known:
            unknown.append(pair)
    if unknown and not ignore_unknown:
        raise internal(f"ARGS: unknown args {go_quote_list(unknown)}")


def _env_to_cmd_args(getenv: Getenv, stdin: IO[bytes]) -> CmdArgs:
    values: dict[str, str] = {}
    missing: list[str] = []
    command = getenv("CNI_COMMAND") or ""
    for var in ENV_TABLE:
        value = getenv(var.name) or ""
        values[var.name] = value
        needed = command in var.required_for
        if value == "":
            if needed or var.name == "CNI_COMMAND":
                missing.append(var.name)
        elif needed and var.validate is not None:
            var.validate(value)
    if missing:
        raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES,
                       f"required env variables [{','.join(missing)}] missing")
    stdin_data = b""
    if command != "VERSION":
        try:
            stdin_data = stdin.read()
        except OSError as e:
            raise CNIError(ERR_IO_FAILURE, f"error reading from stdin: {e}") from e
        _validate_config(stdin_data)
    return CmdArgs(command=command, container_id=values["CNI_CONTAINERID"],
                   netns=values["CNI_NETNS"], ifname=values["CNI_IFNAME"],
                   args=split_cni_args(values["CNI_ARGS"]),
                   path=[p for p in values["CNI_PATH"].split(":") if p],
                   stdin_data=stdin_data, args_raw=values["CNI_ARGS"],
                   netns_override=values["CNI_NETNS_OVERRIDE"])


def _validate_config(stdin_data: bytes) -> None:
    try:
        name = decode_object(stdin_data).get("name", "")
    except ValueError as e:
        raise CNIError(ERR_DECODING_FAILURE, f"error unmarshall network config: {e}") from e
    if not isinstance(name, str):
        raise CNIError(ERR_DECODING_FAILURE,
                       "error unmarshall network config: name must be a string")
    if name == "":
        raise CNIError(ERR_INVALID_NETWORK_CONFIG, "missing network name")
    validate_network_name(name)


def config_version(stdin_data: bytes) -> str:
    """The config's cniVersion; a config without one is 0.1.0."""
    try:
        version = decode_object(stdin_data).get("cniVersion") or DEFAULT_CONFIG_VERSION
    except ValueError as e:
        raise CNIError(ERR_DECODING_FAILURE,
                       f"decoding version from network config: {e}") from e
    if not isinstance(version, str):
        raise CNIError(ERR_DECODING_FAILURE,
                       "decoding version from network config: cniVersion must be a string")
    return version


class InjectedCrash(BaseException):
    """An injected crash of a plugin run in-process by another (its "process" dies; the
    caller sees exit status 2, as after a Go panic). Exec'd plugins exit instead."""


NESTED = [0]  # how many plugins run in-process below this one's exec (see invoke)


def halfway() -> None:
    """A plugin's midpoint (half its work done): where an injected crash happens."""
    faults = sys.modules.get("cni_plugin.faults")
    if faults is not None:
        faults.halfway(nested=NESTED[0] > 0)


def _plugin_name(handlers: Handlers) -> str:
    from cni_plugin.executables import EXECUTABLES

    module = getattr(handlers.add, "__module__", "")
    names = [name for name, mod in EXECUTABLES.items() if mod == module]
    return names[0] if names else posix_shim.basename(sys.argv[0])


class _Dispatcher:
    def __init__(self, handlers: Handlers, supported: tuple[str, ...],
                 known_args: frozenset[str] | None, getenv: Getenv) -> None:
        self.handlers = handlers
        self.supported = supported
        self.known_args = known_args
        self.getenv = getenv
        self.reply_version = supported[-1]

    def run(self, cmd: CmdArgs) -> str | None:
        """The text to print on success (None: print nothing)."""
        if cmd.command == "VERSION":
            return dumps_compact({"cniVersion": CURRENT_VERSION,
                                  "supportedVersions": list(self.supported)}) + "\n"
        if cmd.command not in ALL_COMMANDS:
            raise CNIError(ERR_INVALID_ENVIRONMENT_VARIABLES,
                           f"unknown CNI_COMMAND: {cmd.command}")
        version = config_version(cmd.stdin_data)
        if version in ALL_VERSIONS:
            self.reply_version = version
        self._gate(cmd.command, version)
        if version not in self.supported:
            raise CNIError(ERR_INCOMPATIBLE_CNI_VERSION, "incompatible CNI versions",
                           f"config is {go_quote(version)}, plugin supports "
                           f"{go_quote_list(self.supported)}")
        if self.known_args is not None and cmd.command in ("ADD", "CHECK", "DEL"):
            check_cni_args(cmd.args_raw, self.known_args)
        if b'"faults"' in cmd.stdin_data or self.getenv("CNI_MINI_FAULTS"):
            from cni_plugin import faults  # only then: the exec path stays light

            faults.inject(self.getenv, cmd, _plugin_name(self.handlers))
        text = self._call(cmd, version)
        halfway()  # a crash armed for a command without a midpoint: all done, no answer
        return text

    def _gate(self, command: str, version: str) -> None:
        minimum = MIN_VERSION_FOR.get(command)
        if minimum is None:
            return
        try:
            if not greater_or_equal(version, minimum):
                raise CNIError(ERR_INCOMPATIBLE_CNI_VERSION,
                               f"config version does not allow {command}")
            if not any(greater_or_equal(v, version) for v in self.supported):
                raise CNIError(ERR_INCOMPATIBLE_CNI_VERSION,
                               f"plugin version does not allow {command}")
        except VersionError as e:
            raise CNIError(ERR_DECODING_FAILURE, str(e)) from e

    def _call(self, cmd: CmdArgs, version: str) -> str | None:
        h = self.handlers
        result: Result | None
        if cmd.command == "ADD":
            result = h.add(cmd)
            if not isinstance(result, Result):
                raise internal("plugin returned no result for ADD")
        elif cmd.command == "DEL":
            result = h.delete(cmd)
        else:
            handler = {"CHECK": h.check, "STATUS": h.status, "GC": h.gc}[cmd.command]
            if handler is not None:
                handler(cmd)
            return None
        if result is None:
            return None
        try:
            return dumps_indent(result_to_json(result, version))
        except ValueError as e:
            raise internal(str(e)) from e


def _unexpected(e: Exception, about: str) -> CNIError:
    import traceback  # only on this path: it is not cheap to import

    frames = traceback.extract_tb(e.__traceback__)
    where = f"{posix_shim.basename(frames[-1].filename)}:{frames[-1].lineno} in {frames[-1].name}" \
        if frames else ""
    return CNIError(ERR_INTERNAL, f"unexpected error in {about or 'plugin'}: "
                    f"{type(e).__name__}: {e}", where)


def plugin_main(handlers: Handlers, *, about: str,
                supported: tuple[str, ...] = ALL_VERSIONS,
                known_args: frozenset[str] | None = None,
                getenv: Getenv = posix_shim.getenv,
                stdin: IO[bytes] | None = None,
                stdout: IO[str] | None = None,
                stderr: IO[str] | None = None) -> int:
    """Run one CNI command and return the exit status (main() passes it to sys.exit).

    known_args: the CNI_ARGS keys this plugin reads; others fail unless
    IgnoreUnknown=1|true. None means the plugin reads no CNI_ARGS and leaves them
    to its delegated plugins (as the reference bridge and loopback do).
    """
    stdin = stdin if stdin is not None else sys.stdin.buffer
    if stdout is None:
        # The runtime reads UTF-8 JSON whatever our locale says.
        sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
        stdout = sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    dispatcher = _Dispatcher(handlers, supported, known_args, getenv)
    error: CNIError
    try:
        cmd = _env_to_cmd_args(getenv, stdin)
        text = dispatcher.run(cmd)
        if text is not None:
            stdout.write(text)
            stdout.flush()
        return 0
    except CNIError as e:
        error = e
    except Exception as e:
        error = _unexpected(e, about)
    if (error.code == ERR_INVALID_ENVIRONMENT_VARIABLES and not getenv("CNI_COMMAND")
            and about):
        # Run by hand without a command: say what this is instead of an error.
        stderr.write(f"{about}\nCNI protocol versions supported: {', '.join(supported)}\n")
        return 0
    _print_error(error, dispatcher.reply_version, stdout)
    return 1


def _print_error(error: CNIError, cni_version: str, stdout: IO[str]) -> None:
    payload: dict[str, Any] = error.to_json(cni_version)
    stdout.write(dumps_indent(payload))
    stdout.flush()

