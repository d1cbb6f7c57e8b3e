"""Events, as ``kubectl describe`` lists them under an object, shared by every component.

The API server here has no Event kind, so one recorder per cluster keeps them in memory;
the controllers and the kubelets write to it (client-go's ``record`` package role). A
repeat of the same event bumps ``count`` and moves its ``last_seen``, as the recorder's
aggregation moves ``lastTimestamp``.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field, replace

NORMAL = "Normal"
WARNING = "Warning"


@dataclass(frozen=True)
class Event:
    """A core/v1 Event: the object it is about, ``type`` (Normal | Warning), ``reason``,
    ``message``, the reporting ``component``; ``last_seen`` orders events by their latest
    occurrence across the whole recorder."""

    kind: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str
    component: str
    count: int = 1
    last_seen: int = 0
    first_time: float = 0.0  # wall clock (seconds since the epoch) of the first occurrence
    last_time: float = 0.0  # ... and of the latest

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two occurrences the same event (aggregated into one with a count)."""
        return (self.kind, self.namespace, self.name, self.type, self.reason, self.message,
                self.component)


@dataclass
class EventRecorder:
    """Events in the order they were first recorded."""

    events: list[Event] = field(default_factory=list)
    _clock: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def record(self, kind: str, namespace: str, name: str, event_type: str, reason: str,
               message: str, component: str) -> None:
        now = time.time()
        event = Event(kind, namespace, name, event_type, reason, message, component,
                      last_seen=next(self._clock), first_time=now, last_time=now)
        for i, seen in enumerate(self.events):
            if seen.key == event.key:
                self.events[i] = replace(seen, count=seen.count + 1, last_seen=event.last_seen,
                                         last_time=now)
                return
        self.events.append(event)

    def for_object(self, kind: str, name: str, namespace: str = "") -> list[Event]:
        return [e for e in self.events
                if e.kind == kind and e.name == name and e.namespace == namespace]

    def reasons(self, kind: str, name: str, namespace: str = "") -> list[str]:
        return [e.reason for e in self.for_object(kind, name, namespace)]

    def warnings(self, kind: str, name: str, namespace: str = "") -> list[Event]:
        """The object's Warning events, the most recently seen last."""
        return sorted((e for e in self.for_object(kind, name, namespace) if e.type == WARNING),
                      key=lambda e: e.last_seen)
