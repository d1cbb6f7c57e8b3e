"""The call trace: every gRPC call and every CNI exec the simulator makes, in order.

One JSON object per line: ``ts`` (seconds since the trace began), ``seq``,
``node``, ``component`` (kubelet, external-provisioner, containerd, ...),
``call`` (``csi.Controller/CreateVolume``, ``cni ADD emu-bridge``, ...),
``request`` (a short summary, secrets never included) and ``result`` (``OK`` or
the status/error code with its message). Components write through a `Trace`;
the demo prints it and ``--trace FILE`` keeps it.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
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

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=False, default=str)


@dataclass
class Trace:
    """An append-only, thread-safe list of events, optionally mirrored to a file."""

    sink: TextIO | None = None
    events: list[TraceEvent] = field(default_factory=list)
    _start: float = field(default_factory=time.monotonic)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def to_file(cls, path: Path) -> Trace:
        return cls(sink=path.open("a", encoding="utf-8"))

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
            event = TraceEvent(
                seq=len(self.events) + 1,
                ts=round(time.monotonic() - self._start, 6),
                node=node,
                component=component,
                call=call,
                request=dict(request or {}),
                result=result,
                duration_ms=round(duration_ms, 3),
            )
            self.events.append(event)
            if self.sink is not None:
                self.sink.write(event.to_json() + "\n")
                self.sink.flush()
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
