"""Fault injection: rules that make chosen CSI calls fail, wait or hang, so a CO's (or a
sidecar's) retries can be watched and tested.

A rule (YAML or JSON, a list of them in ``--faults FILE``, or added at run time through
the control socket, ``python -m csi_driver faults``)::

    - method: NodeStageVolume      # glob on the bare name or the full /csi.v1.Node/...
      volume_id: "pvc-*"           # optional globs on the request's volume_id / node_id
      code: UNAVAILABLE            # answer this gRPC status (with message), or
      message: injected by the test
      delay: 2.5                   # wait this long, then serve the call normally, or
      hang: true                   # never answer (until the caller's deadline or cancel)
      after: 1                     # let the first N matching calls through
      times: 2                     # then act on N calls (default: every one)
      probability: 0.5             # act on each with this chance ...
      seed: 7                      # ... drawn from this seed (repeatable runs)

The first rule that acts on a call wins. A call acted on is logged with ``"injected"``
(the rule's id and action) in its JSON log line.
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from csi_driver.errors import CsiError, InvalidArgument

CODES = frozenset({
    "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
})
FIELDS = frozenset({"method", "volume_id", "node_id", "code", "message", "delay", "hang",
                    "after", "times", "probability", "seed"})


class InjectedError(CsiError):
    """The status a rule answers with (mapped to the wire like any other CsiError)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class FaultRule:
    method: str
    volume_id: str = ""
    node_id: str = ""
    code: str = ""
    message: str = "injected fault"
    delay: float = 0.0
    hang: bool = False
    after: int = 0
    times: int | None = None
    probability: float = 1.0
    seed: int | None = None
    id: int = 0
    matched: int = 0  # calls that matched method and ids
    fired: int = 0  # calls acted on
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    @classmethod
    def parse(cls, raw: Any) -> FaultRule:
        """A rule from its YAML/JSON form; InvalidArgument names what is wrong."""
        if not isinstance(raw, dict):
            raise InvalidArgument(f"a fault rule must be a mapping, not {raw!r}")
        unknown = sorted(set(raw) - FIELDS)
        if unknown:
            raise InvalidArgument(f"unknown fault rule field(s): {', '.join(unknown)}")
        if not isinstance(raw.get("method"), str) or not raw["method"]:
            raise InvalidArgument("a fault rule needs a method (a name or glob)")
        code = str(raw.get("code", "")).upper()
        if code and code not in CODES:
            raise InvalidArgument(f"unknown gRPC status code {raw['code']!r}")
        actions = [bool(code), bool(raw.get("delay")), bool(raw.get("hang"))]
        if sum(actions) != 1:
            raise InvalidArgument("a fault rule needs exactly one of code, delay or hang")
        try:
            rule = cls(method=raw["method"], volume_id=str(raw.get("volume_id", "")),
                       node_id=str(raw.get("node_id", "")), code=code,
                       message=str(raw.get("message", "injected fault")),
                       delay=float(raw.get("delay", 0.0)), hang=bool(raw.get("hang", False)),
                       after=int(raw.get("after", 0)),
                       times=None if raw.get("times") is None else int(raw["times"]),
                       probability=float(raw.get("probability", 1.0)),
                       seed=None if raw.get("seed") is None else int(raw["seed"]))
        except (TypeError, ValueError) as err:
            raise InvalidArgument(f"bad fault rule {raw!r}: {err}") from None
        if rule.delay < 0 or rule.after < 0 or (rule.times is not None and rule.times < 0) \
                or not 0.0 <= rule.probability <= 1.0:
            raise InvalidArgument("delay, after and times must be >= 0, probability in [0, 1]")
        rule._rng = random.Random(rule.seed)
        return rule

    @property
    def action(self) -> str:
        if self.code:
            return self.code
        return "hang" if self.hang else f"delay {self.delay:g}s"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "method": self.method, "action": self.action,
                               "matched": self.matched, "fired": self.fired}
        for name in ("volume_id", "node_id"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.code:
            out["message"] = self.message
        if self.after:
            out["after"] = self.after
        if self.times is not None:
            out["times"] = self.times
        if self.probability < 1.0:
            out["probability"] = self.probability
        return out

    def _names(self, method: str, request: Any) -> bool:
        bare = method.rsplit("/", 1)[-1]
        if not (fnmatch.fnmatchcase(bare, self.method) or fnmatch.fnmatchcase(method, self.method)):
            return False
        for name in ("volume_id", "node_id"):
            pattern = getattr(self, name)
            if pattern and not fnmatch.fnmatchcase(str(getattr(request, name, "")), pattern):
                return False
        return True

    def acts_on(self, method: str, request: Any) -> bool:
        """Counts the call; True when this rule acts on it."""
        return self.matches(method, request) and self.fires()

    def matches(self, method: str, request: Any) -> bool:
        """Whether the call is one this rule names (counted in ``matched``)."""
        if not self._names(method, request):
            return False
        self.matched += 1
        return True

    def fires(self) -> bool:
        """For a matched call: whether the rule acts on it now (``after``, ``times`` and
        ``probability`` permitting; counted in ``fired``)."""
        if self.matched <= self.after:
            return False
        if self.times is not None and self.fired >= self.times:
            return False
        if self.probability < 1.0 and self._rng.random() >= self.probability:
            return False
        self.fired += 1
        return True


def load_rules(text: str) -> list[FaultRule]:
    """Rules from YAML or JSON text (a list, or one rule)."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InvalidArgument(f"fault rules are not YAML/JSON: {err}") from None
    if raw is None:
        return []
    return [FaultRule.parse(item) for item in (raw if isinstance(raw, list) else [raw])]


class FaultInjector:
    """The rules in force; safe to change from the control socket while calls run."""

    def __init__(self, rules: list[FaultRule] | None = None) -> None:
        self._lock = threading.Lock()
        self._rules: list[FaultRule] = []
        self._next_id = 1
        for rule in rules or []:
            self.add(rule)

    @classmethod
    def from_file(cls, path: Path) -> FaultInjector:
        return cls(load_rules(path.read_text()))

    def add(self, rule: FaultRule) -> int:
        with self._lock:
            rule.id = self._next_id
            self._next_id += 1
            self._rules.append(rule)
            return rule.id

    def remove(self, rule_id: int) -> bool:
        with self._lock:
            before = len(self._rules)
            self._rules = [r for r in self._rules if r.id != rule_id]
            return len(self._rules) != before

    def clear(self) -> int:
        with self._lock:
            count = len(self._rules)
            self._rules = []
            return count

    def describe(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.describe() for r in self._rules]

    def __bool__(self) -> bool:
        return bool(self._rules)

    def pick(self, method: str, request: Any) -> FaultRule | None:
        """The rule that acts on this call, if any (every matching rule counts it)."""
        with self._lock:
            chosen = None
            for rule in self._rules:
                if rule.matches(method, request) and chosen is None and rule.fires():
                    chosen = rule
            return chosen


async def inject(rule: FaultRule | None) -> None:
    """Do what ``rule`` says before the call is served: wait, hang or fail."""
    if rule is None:
        return
    if rule.delay:
        await asyncio.sleep(rule.delay)
    elif rule.hang:
        await asyncio.Event().wait()  # until grpc cancels the call (deadline, cancel)
    else:
        raise InjectedError(rule.code, rule.message)


async def serve_control(path: Path, injector: FaultInjector) -> asyncio.AbstractServer:
    """The run-time control socket: one JSON request per line, one JSON answer per line.
    ``{"op": "add", "rules": [...]}`` | ``{"op": "list"}`` | ``{"op": "remove", "id": N}``
    | ``{"op": "clear"}``."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                writer.write(json.dumps(_answer(injector, line)).encode() + b"\n")
                await writer.drain()
        finally:
            writer.close()

    path.unlink(missing_ok=True)
    server = await asyncio.start_unix_server(handle, path=str(path))
    path.chmod(0o600)
    return server


def _answer(injector: FaultInjector, line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
        op = request.get("op")
        if op == "add":
            rules = request.get("rules")
            parsed = [FaultRule.parse(r) for r in (rules if isinstance(rules, list) else [rules])]
            return {"ok": True, "ids": [injector.add(r) for r in parsed]}
        if op == "list":
            return {"ok": True, "rules": injector.describe()}
        if op == "remove":
            return {"ok": injector.remove(int(request.get("id", 0)))}
        if op == "clear":
            return {"ok": True, "removed": injector.clear()}
        return {"ok": False, "error": f"unknown op {op!r} (add, list, remove, clear)"}
    except (ValueError, AttributeError, CsiError) as err:
        return {"ok": False, "error": str(err)}
