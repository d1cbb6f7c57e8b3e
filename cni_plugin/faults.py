"""Fault injection for our CNI plugins: the rule format of the CSI driver's ``--faults``,
for exec'd plugins, so a runtime's reaction to a failing, slow or crashing plugin can be
watched and tested.

The rules are a JSON list in the file named by the network config's ``"faults"`` key or,
for every plugin at once, by the ``CNI_MINI_FAULTS`` environment variable::

    [{"method": "ADD", "code": 11, "message": "injected", "times": 1},
     {"method": "emu-bridge/DEL", "delay": 2},
     {"method": "ADD", "container_id": "abc*", "crash": true, "after": 1}]

``method`` is a glob on the CNI command or ``<plugin>/<command>``; ``container_id`` and
``ifname`` are optional globs. One action: ``code`` (a CNI error code, with
``message``: the plugin answers that error), ``delay`` (seconds, then the command runs),
``hang`` (never finishes) or ``crash`` (the process dies like a Go panic, exit 2 and no
answer, after doing half the work: bridge ADD with the veth made and no address yet,
bridge DEL with the link gone and the lease kept, host-local ADD with the lease written;
other commands after all their work). ``after``, ``times``, ``probability`` and ``seed``
count across executions, in ``<rules file>.state`` (under a lock).

Nothing here is imported unless faults are configured: the exec path stays as light.
"""

from __future__ import annotations

import sys

from cni_plugin import posix_shim
from cni_spec.errors import ERR_INVALID_NETWORK_CONFIG, CNIError
from cni_spec.gojson import dumps_compact, loads

FAULTS_ENV = "CNI_MINI_FAULTS"
ACTIONS = ("code", "delay", "hang", "crash")
_crash_pending = False
CRASH_MESSAGE = "panic: injected crash (half the work done)"


def rules_path(getenv: object, stdin_data: bytes) -> str:
    """The rules file for this execution ("" when none): the config's ``faults`` key,
    else ``$CNI_MINI_FAULTS``."""
    if b'"faults"' in stdin_data:
        conf = loads(stdin_data)
        if isinstance(conf, dict) and isinstance(conf.get("faults"), str):
            return str(conf["faults"])
    value = getenv(FAULTS_ENV) if callable(getenv) else None
    return str(value or "")


def _read(path: str) -> bytes:
    fd = posix_shim.open_fd(path, posix_shim.O_RDONLY | posix_shim.O_CLOEXEC)
    try:
        chunks = []
        while chunk := posix_shim.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        posix_shim.close(fd)


def _write(path: str, data: bytes) -> None:
    tmp = f"{path}.{posix_shim.getpid()}"
    fd = posix_shim.open_fd(tmp, posix_shim.O_WRONLY | posix_shim.O_CREAT | posix_shim.O_TRUNC
                            | posix_shim.O_CLOEXEC, 0o600)
    try:
        posix_shim.write(fd, data)
    finally:
        posix_shim.close(fd)
    posix_shim.replace(tmp, path)


def _load(path: str) -> list[dict[str, object]]:
    try:
        rules = loads(_read(path))
    except (OSError, ValueError) as err:
        raise CNIError(ERR_INVALID_NETWORK_CONFIG, f"fault rules {path}: {err}") from None
    if isinstance(rules, dict):
        rules = [rules]
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise CNIError(ERR_INVALID_NETWORK_CONFIG, f"fault rules {path}: expected a list")
    for rule in rules:
        if not isinstance(rule.get("method"), str) or \
                sum(bool(rule.get(a)) for a in ACTIONS) != 1:
            raise CNIError(ERR_INVALID_NETWORK_CONFIG,
                           f"fault rules {path}: each rule needs a method and exactly one "
                           f"of {', '.join(ACTIONS)}: {dumps_compact(rule)}")
    return rules


def _names(rule: dict[str, object], plugin: str, command: str, container_id: str,
           ifname: str) -> bool:
    from fnmatch import fnmatchcase  # only with faults configured

    method = str(rule["method"])
    if not (fnmatchcase(command, method) or fnmatchcase(f"{plugin}/{command}", method)):
        return False
    for key, value in (("container_id", container_id), ("ifname", ifname)):
        if rule.get(key) and not fnmatchcase(value, str(rule[key])):
            return False
    return True


def pick(path: str, plugin: str, command: str, container_id: str,
         ifname: str) -> dict[str, object] | None:
    """The first rule that acts on this execution, counting it in the state file."""
    import fcntl  # only with faults configured

    rules = _load(path)
    lock = posix_shim.open_fd(f"{path}.lock", posix_shim.O_RDWR | posix_shim.O_CREAT
                              | posix_shim.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            state = loads(_read(f"{path}.state"))
        except (OSError, ValueError):
            state = {}
        chosen = None
        for index, rule in enumerate(rules):
            if not _names(rule, plugin, command, container_id, ifname):
                continue
            matched, fired = state.get(str(index), [0, 0])
            matched += 1
            if chosen is None and _fires(rule, matched, fired):
                chosen, fired = rule, fired + 1
            state[str(index)] = [matched, fired]
        _write(f"{path}.state", dumps_compact(state).encode())
        return chosen
    finally:
        posix_shim.close(lock)


def _fires(rule: dict[str, object], matched: int, fired: int) -> bool:
    if matched <= int(str(rule.get("after", 0))):
        return False
    if rule.get("times") is not None and fired >= int(str(rule["times"])):
        return False
    probability = float(str(rule.get("probability", 1.0)))
    if probability < 1.0:
        import random  # only for probabilistic rules

        seed = rule.get("seed")
        rng = random.Random(None if seed is None else f"{seed}/{matched}")
        return rng.random() < probability
    return True


def inject(getenv: object, cmd: object, plugin: str) -> None:
    """Before the command runs: act on the rule that picks this execution, if any."""
    path = rules_path(getenv, getattr(cmd, "stdin_data", b""))
    if path:
        rule = pick(path, plugin, str(getattr(cmd, "command", "")),
                    str(getattr(cmd, "container_id", "")), str(getattr(cmd, "ifname", "")))
        if rule is not None:
            apply(rule)


def apply(rule: dict[str, object]) -> None:
    """Act before the command runs: answer an error, wait, hang, or arm the crash."""
    global _crash_pending
    if rule.get("code"):
        raise CNIError(int(str(rule["code"])), str(rule.get("message", "injected fault")))
    if rule.get("delay") or rule.get("hang"):
        import time  # only with faults configured

        time.sleep(float(str(rule["delay"])) if rule.get("delay") else 1e9)
    elif rule.get("crash"):
        _crash_pending = True


def halfway(nested: bool = False) -> None:
    """A plugin's midpoint: an armed crash happens here (the process exits with status 2,
    like a Go panic; run in-process by another plugin, InjectedCrash ends just it)."""
    global _crash_pending
    if not _crash_pending:
        return
    _crash_pending = False
    if nested:
        from cni_plugin.skel import InjectedCrash

        raise InjectedCrash(CRASH_MESSAGE)
    sys.stderr.write(CRASH_MESSAGE + "\n")
    sys.stderr.flush()
    posix_shim._exit(2)
