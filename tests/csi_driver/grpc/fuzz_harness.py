"""One driver process under fuzzing: its sandbox, its seeds, the calls and the properties.

Each example goes: ``begin()`` (restart the driver if the last example broke it, re-make
the seeds if a call removed some, make the example's own dir) → the test draws its
requests from ``vocabulary()`` → ``run(calls)`` sends them one by one and, after each,
checks what the driver did; after the last, that it still answers Probe.

Properties (issue 8, "Done means"):
- the status code is never UNKNOWN;
- INTERNAL only for a body that does not decode (and such a body is answered INTERNAL);
- nothing created, removed or changed outside the state dir and the given target and
  staging paths (``fuzz_sandbox.changes_outside``); the canaries intact; the state dir's
  own entries still there;
- no mount but of one volume's data, at a given path, never stacked
  (``fuzz_sandbox.mount_violations``);
- the driver answers Probe afterwards.

By default the first violation fails the example (Hypothesis then shrinks it); with
``CSI_FUZZ_REPORT=1`` violations are recorded, counted and printed with the smallest
example seen of each kind, and nothing fails.
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import message_factory, text_format
from google.protobuf.descriptor import MethodDescriptor
from google.protobuf.message import Message
from hypothesis.strategies import SearchStrategy

from csi_protos import csi_pb2
from tests.csi_driver.grpc.fuzz_requests import (
    EX,
    PATH_FIELDS,
    Vocabulary,
    adversarial_ids,
    is_path_like,
    request,
)
from tests.csi_driver.grpc.fuzz_sandbox import (
    Allowance,
    MountProblem,
    Sandbox,
    Tree,
    changes_outside,
    is_under,
    mount_violations,
    unmount_in,
)
from tests.csi_driver.grpc.fuzz_seeds import CALL_GUARD_SECONDS, Seeds
from tests.fixtures.driver_process import DriverProcess

REPORT = os.environ.get("CSI_FUZZ_REPORT") == "1"
SETTLE_GUARD_SECONDS = 2.0
SETTLE_QUIET_SECONDS = 0.1
# item 6: INTERNAL "with a message naming the decode failure", as Go servers answer
# ("grpc: error unmarshalling request: …")
NAMES_DECODING = re.compile(r"decod|pars|unmarshal|deserializ", re.IGNORECASE)
# what a client sees when the status details exceed gRPC's metadata limit (8 KiB)
METADATA_LIMIT_HIT = "received metadata size exceeds"
FULL_SHARE = 0.5  # of the sandbox's tmpfs: the seeds and examples need a few MiB
METHODS: list[MethodDescriptor] = [
    m for s in csi_pb2.DESCRIPTOR.services_by_name.values() for m in s.methods
]
# A success of these may remove a seed (re-made before the next example) or have volume
# data removed in the background (the tree is read again until it stops changing).
REMOVING = frozenset({"DeleteVolume", "DeleteSnapshot", "DeleteVolumeGroupSnapshot",
                      "ControllerUnpublishVolume", "NodeUnstageVolume", "NodeUnpublishVolume"})
BACKGROUND_REMOVAL = frozenset({"DeleteVolume", "NodeUnpublishVolume"})
DRIVER_ARGS = ("--capacity", "default=1Pi", "--max-volumes-per-node", "0")


def rpc_name(method: MethodDescriptor) -> str:
    return f"{method.containing_service.name}.{method.name}"


def request_class(method: MethodDescriptor) -> type[Message]:
    return message_factory.GetMessageClass(method.input_type)


def _strings(message: Message) -> Iterator[tuple[str, str]]:
    """(field name, value) of every string below ``message``: fields, lists, map keys
    and values, nested messages."""
    for fd, value in message.ListFields():
        mt = fd.message_type
        if mt is not None and mt.GetOptions().map_entry:
            for key, item in value.items():
                yield fd.name, key
                if isinstance(item, str):
                    yield fd.name, item
                elif isinstance(item, Message):
                    yield from _strings(item)
        elif mt is not None:
            for item in value if fd.is_repeated else [value]:
                yield from _strings(item)
        elif fd.type == fd.TYPE_STRING:
            for item in value if fd.is_repeated else [value]:
                yield fd.name, item


def _names_a_path(call: Call) -> bool:
    """An id that is not a plain file name: its background removal may reach beyond
    <state>/volumes (the state dir's inside is not compared, so plain ids need no wait)."""
    assert call.message is not None
    return any(is_path_like(value) for name, value in _strings(call.message)
               if name not in PATH_FIELDS)


def show(message: Message, limit: int = 400) -> str:
    text = text_format.MessageToString(message, as_one_line=True, as_utf8=True)
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


class PropertyViolation(AssertionError):
    """Base of the per-kind classes: Hypothesis tells failures apart by type."""


_VIOLATION_TYPES: dict[str, type[PropertyViolation]] = {}


def violation_type(kind: str) -> type[PropertyViolation]:
    if kind not in _VIOLATION_TYPES:
        _VIOLATION_TYPES[kind] = type(f"Violation{len(_VIOLATION_TYPES)}",
                                      (PropertyViolation,), {"kind": kind})
    return _VIOLATION_TYPES[kind]


@dataclass
class Call:
    method: MethodDescriptor
    body: bytes
    message: Message | None  # None: the body does not decode

    @classmethod
    def typed(cls, method: MethodDescriptor, message: Message) -> Call:
        return cls(method, message.SerializeToString(), message)

    @classmethod
    def raw(cls, method: MethodDescriptor, body: bytes) -> Call:
        try:
            message: Message | None = request_class(method).FromString(body)
        except Exception:  # DecodeError, or invalid UTF-8 in a string field
            message = None
        return cls(method, body, message)

    def given_paths(self) -> list[str]:
        if self.message is None:
            return []
        return [value for fd, value in self.message.ListFields() if fd.name in PATH_FIELDS]

    def __str__(self) -> str:
        if self.message is None:
            return f"{rpc_name(self.method)}(undecodable body {self.body!r})"
        return f"{rpc_name(self.method)}({show(self.message)})"


@dataclass
class Outcome:
    code: grpc.StatusCode
    details: str


@dataclass
class Finding:
    count: int = 0
    example: str = ""


class FuzzHarness:
    def __init__(self, root: Path, report: bool = REPORT) -> None:
        """``root``: an empty dir on the host, where the sandbox's tmpfs is mounted in the
        driver's own mount namespace."""
        self.report = report
        self.box = Sandbox(str(root))
        self.driver = DriverProcess(node_id="fuzz-node", args=DRIVER_ARGS,
                                    state_dir=Path(self.box.state_dir),
                                    prefix=self.box.wrapper())
        self.seeds = Seeds(self.box)
        self.node_id = ""
        self.topology: dict[str, str] = {}
        self.skeleton: set[str] = set()
        self.examples = 0
        self.restarts = 0
        self.counts: dict[str, Counter[str]] = defaultdict(Counter)
        self.findings: dict[str, Finding] = {}
        self._needs_restart = False
        self._seeds_dirty = True
        self._example_dir = ""
        self._old_example_dirs: set[str] = set()
        self._channel: grpc.Channel | None = None
        self._vocab: Vocabulary | None = None
        self._strategies: dict[str, SearchStrategy[Any]] = {}

    # -- driver ------------------------------------------------------------------

    @property
    def pid(self) -> int:
        assert self.driver.proc is not None
        return self.driver.proc.pid

    def start(self) -> None:
        self.driver.start()
        self.box.populate(self.pid)
        self.skeleton = self.box.state_skeleton()
        info = self.driver.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        self.node_id = info.node_id
        self.topology = dict(info.accessible_topology.segments)

    def restart(self) -> None:
        """A fresh driver on a fresh sandbox: killing the process ends its mount
        namespace, and with it the sandbox's tmpfs and every mount it made."""
        self._close_channel()
        self.driver.kill9()
        self.restarts += 1
        self._example_dir = ""
        self._old_example_dirs.clear()
        self.start()
        self._seeds_dirty = True

    def close(self) -> None:
        self._close_channel()
        self.driver.cleanup()

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None

    @property
    def channel(self) -> grpc.Channel:
        if self._channel is None:
            self._channel = grpc.insecure_channel(self.driver.endpoint)
        return self._channel

    def alive(self) -> bool:
        if self.driver.proc is None or self.driver.proc.poll() is not None:
            return False
        try:
            self.driver.stubs.identity.Probe(csi_pb2.ProbeRequest(), timeout=CALL_GUARD_SECONDS)
        except grpc.RpcError:
            return False
        return True

    # -- one example -------------------------------------------------------------

    def begin(self) -> None:
        if self._needs_restart or self.driver.proc is None or self.driver.proc.poll() is not None:
            self.restart()
            self._needs_restart = False
        if self._seeds_dirty:
            self.seeds.ensure(self.driver.stubs, self.node_id)
            self._seeds_dirty = False
        if self._example_dir:
            self._old_example_dirs.add(self._example_dir)
        self.examples += 1
        self._example_dir = self.box.make_example_dir(self.examples)

    def vocabulary(self) -> Vocabulary:
        """The seeds' ids and the paths a request may name; the same object (and so the
        same strategies) until a seed's id changes."""
        ids = self.seeds.ids()
        if self._vocab is not None and self._vocab.ids == ids:
            return self._vocab
        box = self.box
        some_volume = next(iter(self.seeds.volumes.values()), "none")
        bad_paths = [
            "", "target", "rel/t", f"{EX}/a/../b", f"{EX}/./t", f"{EX}//t", f"{EX}/target/",
            f"{EX}/{'x' * 256}", f"{EX}/{'x' * 256}/t", f"{EX}/t\x00x", f"{EX}/t\n",
            f"{EX}/{('d' * 200 + '/') * 21}t",
            box.canary_dir, box.canary_file, os.path.join(box.canary_dir, "file"), box.link,
            os.path.join(box.link, "t"), box.state_dir, os.path.join(box.state_dir, "volumes"),
            os.path.join(box.state_dir, "volumes", some_volume), f"{EX}/full-dir",
            f"{EX}/full-file", box.root, box.work_dir,
            "/",  # safe: the driver's mounts stay in its own mount namespace
        ]
        self._vocab = Vocabulary(
            ids=ids,
            names=self.seeds.names(),
            node_id=self.node_id,
            topology=self.topology,
            contexts=tuple(c for c in self.seeds.contexts.values() if c),
            paths=(f"{EX}/target", f"{EX}/stage", f"{EX}/made-dir", f"{EX}/made-file",
                   f"{EX}/missing/deeper/target", f"{EX}/t é", f"{EX}/a b", f"{EX}/t\\040x",
                   *self.seeds.every_path()),
            bad_paths=tuple(bad_paths),
            bad_ids=adversarial_ids(box.canary_dir),
        )
        self._strategies.clear()
        return self._vocab

    def strategy(self, key: str, build: Callable[[Vocabulary], SearchStrategy[Any]]
                 ) -> SearchStrategy[Any]:
        """``build(vocabulary)``, built once per vocabulary."""
        vocab = self.vocabulary()
        if key not in self._strategies:
            self._strategies[key] = build(vocab)
        return self._strategies[key]

    def requests(self, method: MethodDescriptor, valid: bool = False
                 ) -> SearchStrategy[Message]:
        return self.strategy(f"{method.full_name} {valid}",
                             lambda v: request(method.input_type, v, valid))

    def typed(self, method: MethodDescriptor, message: Message) -> Call:
        """The call of ``message``, its ``{ex}/…`` paths under this example's dir."""
        resolved = request_class(method)()
        resolved.CopyFrom(message)
        for fd, value in resolved.ListFields():
            if fd.name in PATH_FIELDS and value.startswith(EX):
                setattr(resolved, fd.name, self._example_dir + value[len(EX):])
        return Call.typed(method, resolved)

    def send(self, call: Call) -> Outcome:
        path = f"/{call.method.containing_service.full_name}/{call.method.name}"
        try:
            if call.method.server_streaming:
                # no serializers: the body goes out as the bytes it is
                stream = self.channel.unary_stream(path, None, None)
                for _ in stream(call.body, timeout=CALL_GUARD_SECONDS):
                    pass
            else:
                self.channel.unary_unary(path, None, None)(call.body, timeout=CALL_GUARD_SECONDS)
        except grpc.RpcError as exc:
            return Outcome(exc.code(), exc.details() or "")
        return Outcome(grpc.StatusCode.OK, "")

    def keeps_inside(self, call: Call) -> bool:
        """Whether every string of the call stays in the sandbox, as a path or as an id
        (``Sandbox.keeps_inside``).  Typed requests always do (their values are chosen so);
        a raw body with a changed byte may not, and is then never sent."""
        return call.message is None or all(
            self.box.keeps_inside(value, name in PATH_FIELDS)
            for name, value in _strings(call.message))

    def run(self, calls: list[Call], label: str) -> None:
        """Send ``calls`` in order, checking every property after each; then Probe.
        A call that could leave the sandbox (``keeps_inside``) is never sent."""
        leaving = [str(c) for c in calls if not self.keeps_inside(c)]
        if leaving:
            raise RuntimeError(f"not sent, it could leave the sandbox: {leaving}")
        allowance = Allowance.for_paths(self.box, [p for c in calls for p in c.given_paths()],
                                        self.box.mounts())
        skip = self._old_example_dirs
        tree, mounts = self.box.snapshot(skip), self.box.mounts()
        problems: list[tuple[str, str]] = []
        outcomes: list[Outcome] = []
        for call in calls:
            outcome = self.send(call)
            outcomes.append(outcome)
            name = rpc_name(call.method)
            self.counts[self._count_key(call, label)][outcome.code.name] += 1
            ok = outcome.code == grpc.StatusCode.OK
            if ok and call.method.name in REMOVING and self._names_a_seed(call):
                self._seeds_dirty = True
            if ok and call.method.name in BACKGROUND_REMOVAL and _names_a_path(call):
                after_tree = self._settled(skip)
            else:
                after_tree = self.box.snapshot(skip)
            after_mounts = self.box.mounts()
            problems += self._code_problems(call, outcome)
            problems += [(f"{self._area(p)} by {name}", p)
                         for p in changes_outside(tree, after_tree, allowance)]
            mount_problems = mount_violations(self.box, mounts, after_mounts, allowance)
            problems += [(f"{p.kind} by {name}", p.text) for p in mount_problems]
            if self._clean_up(mount_problems):  # what the clean-up changed is no news
                after_tree, after_mounts = self.box.snapshot(skip), self.box.mounts()
            tree, mounts = after_tree, after_mounts
        problems += self._health_problems()
        if problems:
            self._found(problems, calls, outcomes, label)

    def _clean_up(self, problems: list[MountProblem]) -> bool:
        """Undo what a violation left, so that it does not show again in later examples:
        a stray mount is unmounted in the driver's namespace; removed data (a seed's,
        or the state dir's own) needs a fresh driver.  True when something was unmounted."""
        for problem in problems:
            if problem.kind == "removed the data":
                self._needs_restart = True
            elif problem.kind == "unmounted":
                self._seeds_dirty = True
            elif problem.kind == "mounted" and not unmount_in(self.pid, problem.mount.point):
                self._needs_restart = True
        return any(p.kind == "mounted" for p in problems)

    def _names_a_seed(self, call: Call) -> bool:
        assert call.message is not None
        seeds = self.seeds.all_ids()
        return any(value in seeds for fd, field_value in call.message.ListFields()
                   if fd.type == fd.TYPE_STRING
                   for value in (field_value if fd.is_repeated else [field_value]))

    @staticmethod
    def _count_key(call: Call, label: str) -> str:
        if label != "raw":
            return rpc_name(call.method)
        return "(raw bodies that decode)" if call.message is not None \
            else "(raw bodies that do not decode)"

    def _settled(self, skip: set[str]) -> Tree:
        """Read the tree (and the state dir's own entries) until they stay the same for
        SETTLE_QUIET_SECONDS: volume data is removed on a worker thread after the answer."""
        deadline = time.monotonic() + SETTLE_GUARD_SECONDS
        last = (self.box.snapshot(skip), self.box.state_skeleton())
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            time.sleep(0.01)
            now = (self.box.snapshot(skip), self.box.state_skeleton())
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since >= SETTLE_QUIET_SECONDS:
                break
        return last[0]

    @staticmethod
    def _code_problems(call: Call, outcome: Outcome) -> list[tuple[str, str]]:
        name, code = rpc_name(call.method), outcome.code
        where = f"{code.name} ({outcome.details[:300]!r})"
        if call.message is None and code != grpc.StatusCode.INTERNAL:
            # one kind for every method: the server decodes all bodies the same way
            return [(f"undecodable body answered {code.name}", f"{name}: {where}")]
        if call.message is None and not NAMES_DECODING.search(outcome.details):
            return [("undecodable body answered INTERNAL without naming the decode failure",
                     f"{name}: {where}")]
        if code == grpc.StatusCode.UNKNOWN:
            return [(f"UNKNOWN from {name}", where)]
        if METADATA_LIMIT_HIT in outcome.details:
            return [(f"error details beyond gRPC's metadata limit from {name}", where)]
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return [(f"no answer from {name}", where)]
        if call.message is not None and code == grpc.StatusCode.INTERNAL:
            return [(f"INTERNAL for a decodable request to {name}", where)]
        return []

    def _area(self, problem: str) -> str:
        """'created dir in canary' from "created dir '<root>/canary/x'"."""
        what, _, quoted = problem.partition(" '")
        path = quoted.rstrip("'")
        if not is_under(path, self.box.root):
            return f"{what} outside the sandbox"
        rest = path[len(self.box.root):].lstrip("/")
        return f"{what} in {rest.split('/', 1)[0] or 'the sandbox root'}"

    def _health_problems(self) -> list[tuple[str, str]]:
        problems = []
        if not self.alive():
            problems.append(("server not alive", self.driver.stderr()[-1500:]))
            self._needs_restart = True
            return problems
        damaged = self.box.damaged_canaries()
        if damaged:
            problems.append(("canary damaged", ", ".join(damaged)))
            self._needs_restart = True
        used = self.box.used_share()
        if used > FULL_SHARE:
            problems.append(("the sandbox's filesystem filled up",
                             f"{used:.0%} of it used after this example"))
            self._needs_restart = True
        missing = self.skeleton - self.box.state_skeleton()
        if missing:
            problems.append(("state dir lost its own entries", ", ".join(sorted(missing))))
            self._needs_restart = True
        return problems

    def _found(self, problems: list[tuple[str, str]], calls: list[Call],
               outcomes: list[Outcome], label: str) -> None:
        example = "\n".join(f"  {c} → {o.code.name} {o.details[:200]!r}"
                            for c, o in zip(calls, outcomes, strict=True))
        if not self.report:
            text = "\n".join(f"- {kind}: {detail}" for kind, detail in problems)
            raise violation_type(problems[0][0])(f"{label}:\n{text}\nrequests:\n{example}")
        for kind, detail in problems:
            finding = self.findings.setdefault(kind, Finding())
            finding.count += 1
            shown = f"{detail}\n{example}"
            if not finding.example or len(shown) < len(finding.example):
                finding.example = shown

    # -- summary -----------------------------------------------------------------

    def summary(self) -> str:
        total = sum(sum(c.values()) for c in self.counts.values())
        lines = [f"CSI fuzz: {total} requests in {self.examples} examples, "
                 f"{self.restarts} driver restarts"]
        every_code = Counter[str]()
        for name in sorted(self.counts):
            codes = self.counts[name]
            every_code.update(codes)
            shown = ", ".join(f"{code} {n}" for code, n in codes.most_common())
            lines.append(f"  {name}: {sum(codes.values())} ({shown})")
        lines.append("  all: " + ", ".join(f"{c} {n}" for c, n in every_code.most_common()))
        if self.seeds.errors:
            lines.append("  seed calls that failed: " + ", ".join(
                f"{k}: {n}" for k, n in self.seeds.errors.most_common()))
        if self.report:
            lines.append(f"violations: {sum(f.count for f in self.findings.values())} "
                         f"of {len(self.findings)} kinds")
            for kind, finding in sorted(self.findings.items()):
                lines.append(f"* {kind} ({finding.count} times)\n  {finding.example}")
        return "\n".join(lines)
