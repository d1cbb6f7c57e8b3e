"""The call trace: every gRPC call and every CNI exec the simulator makes, in order.

One JSON object per line: ``phase`` (``start-up``, ``apply``, ``scenario 4``, ...),
``seq`` (from 1 in each phase), ``ts`` (seconds since the trace began), ``node``,
``component`` (kubelet, external-provisioner, containerd, ...), ``call``
(``csi.Controller/CreateVolume``, ``cni ADD emu-bridge``, ...), ``request`` (a short
summary, secrets never included) and ``result`` (``OK`` or the status/error code with its
message). Components write through a `Trace`; the CLI prints it and ``--trace-file FILE``
keeps it. The CLI starts a new phase once the cluster is up, so the calls a user's
command caused are numbered from 1 and the start-up calls are told apart.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO


@dataclass(frozen=True)
class TraceEvent:
    seq: int
    ts: float
    node: str
    component: str
    call: str
    request: dict[str, Any]
    result: str
    duration_ms: float = 0.0
    phase: str = ""

    def to_json(self) -> str:
        fields = asdict(self)
        return json.dumps({"phase": fields.pop("phase"), **fields}, default=str)


@dataclass
class Trace:
    """An append-only, thread-safe list of events, optionally mirrored to a file."""

    sink: TextIO | None = None
    events: list[TraceEvent] = field(default_factory=list)
    phase: str = ""
    _seq: int = 0  # the last number given in the current phase
    _start: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # called with every event as it is recorded (e.g. the cluster's metrics)
    listeners: list[Callable[[TraceEvent], None]] = field(default_factory=list)
    # called with an event and the whole request it summarizes (a CSI request message,
    # its secrets included) by the clients that make calls: in-process observers only
    # (the conformance suite's secrets cases); nothing they see is written or kept here
    request_observers: list[Callable[[TraceEvent, object], None]] = field(
        default_factory=list)

    @classmethod
    def to_file(cls, path: Path, *, phase: str = "") -> Trace:
        """A trace mirrored to ``path`` (truncated: one command's calls per file)."""
        return cls(sink=path.open("w", encoding="utf-8"), phase=phase)

    @classmethod
    def of_process(cls, path: Path) -> Trace:
        """A component process's trace (``--trace-file``): appended to ``path`` (a
        restarted process adds to it), ``ts`` on the machine's monotonic clock, so the
        files of several processes merge into one order (:func:`read_trace_files`)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        return cls(sink=path.open("a", encoding="utf-8"), _start=0.0)

    def begin(self, phase: str) -> None:
        """Events from now on belong to ``phase`` and are numbered from 1 again."""
        with self._lock:
            self.phase = phase
            self._seq = 0

    def in_phase(self, phase: str) -> list[TraceEvent]:
        return [e for e in self if e.phase == phase]

    def record(
        self,
        *,
        node: str,
        component: str,
        call: str,
        request: dict[str, Any] | None = None,
        result: str = "OK",
        duration_ms: float = 0.0,
    ) -> TraceEvent:
        with self._lock:
            self._seq += 1
            event = TraceEvent(
                seq=self._seq,
                ts=round(time.monotonic() - self._start, 6),
                node=node,
                component=component,
                call=call,
                request=dict(request or {}),
                result=result,
                duration_ms=round(duration_ms, 3),
                phase=self.phase,
            )
            self.events.append(event)
            if self.sink is not None:
                self.sink.write(event.to_json() + "\n")
                self.sink.flush()
        for listener in self.listeners:
            listener(event)
        return event

    def calls(self, *, node: str | None = None, component: str | None = None) -> list[str]:
        """The `call` names in order, optionally only for one node or component."""
        return [
            e.call
            for e in self.events
            if (node is None or e.node == node) and (component is None or e.component == component)
        ]

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(list(self.events))

    def close(self) -> None:
        if self.sink is not None:
            self.sink.close()
            self.sink = None


def read_trace_files(paths: Iterable[Path]) -> list[TraceEvent]:
    """The events of :meth:`Trace.of_process` files, in the order of their ``ts`` (a
    line still being written is left for the next read)."""
    events = []
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text(encoding="utf-8").splitlines():
                with contextlib.suppress(ValueError, TypeError):
                    events.append(TraceEvent(**json.loads(line)))
    return sorted(events, key=lambda e: e.ts)


# -- the printed form -------------------------------------------------------------------------

START_UP = "start-up"
SUMMARY_WIDTH = 110  # characters of request summary on one printed line


def summarize(request: Mapping[str, Any], *, width: int = SUMMARY_WIDTH,
              aliases: Mapping[str, str] | None = None) -> str:
    """``key=value`` for the request's non-empty fields, in order, cut at a field boundary:
    as many whole fields as fit in ``width`` (the first always, however long), then
    ``…+N fields`` for the N left out. ``aliases`` replace long prefixes (the work dir)."""
    parts = [f"{key}={_value(value, aliases or {})}" for key, value in request.items()
             if value not in ("", None, [], {})]
    shown: list[str] = []
    used = 0
    for part in parts:
        if shown and used + 1 + len(part) > width:
            break
        used += len(part) + (1 if shown else 0)
        shown.append(part)
    left = len(parts) - len(shown)
    return " ".join(shown) + (f" …+{left} field{'s' if left > 1 else ''}" if left else "")


def _value(value: object, aliases: Mapping[str, str]) -> str:
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"),
                                                           default=str)
    for prefix, alias in aliases.items():
        text = text.replace(prefix, alias)
    return text


def format_event(event: TraceEvent, aliases: Mapping[str, str] | None = None) -> str:
    return (f"  {event.seq:>3} {event.node:<13} {event.component:<21} {event.call:<38} "
            f"{event.result:<4} {summarize(event.request, aliases=aliases)}")


def trace_lines(trace: Trace, phase: str, *, start_up: str = START_UP,
                aliases: Mapping[str, str] | None = None) -> list[str]:
    """The calls of ``phase``, numbered from 1, after one line saying what the cluster's
    start-up (phase ``start_up``) called before them."""
    lines = []
    earlier = trace.in_phase(start_up)
    if earlier:
        counts = Counter(e.call.rsplit("/", 1)[-1] + ("" if e.result == "OK" else " (failed)")
                         for e in earlier)
        listed = ", ".join(f"{call} x{n}" if n > 1 else call for call, n in counts.items())
        lines.append(f"  (before call 1, the cluster's start-up made {len(earlier)} calls: "
                     f"{listed})")
    calls = [format_event(e, aliases) for e in trace.in_phase(phase)]
    return lines + (calls or ["  (no gRPC call or CNI exec)"])
