"""client-go's EventCorrelator: which occurrences of an event become one Event object.

Two rules, in this order, as ``tools/record/events_cache.go`` applies them:

* **similar** events — same source, involved object, type and reason, different message —
  are counted per object within a 10-minute window; from the 10th distinct message on,
  they are folded into one event whose message starts
  ``(combined from similar events): `` and that counts up like a repeat;
* **the same** event (all of the above plus the message and the object's field path)
  seen again is not a new object: its ``count`` goes up and ``lastTimestamp`` moves,
  written as a patch of the Event recorded first (same name, same ``firstTimestamp``).

Then the spam filter: per source and involved object, a token bucket of 25 events
refilled at one per 5 minutes (``EventSourceObjectSpamFilter``); an occurrence without a
token is dropped (counted in the recorder's memory, never written).

Event names are ``<object name>.<UnixNano in hex>`` as client-go's ``makeEvent`` names
them; the nanoseconds never repeat within one recorder, so two events at the same instant
of a fake clock do not collide.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

MAX_SIMILAR_MESSAGES = 10  # client-go's defaultAggregateMaxEvents
SIMILAR_WINDOW_SECONDS = 600.0  # defaultAggregateIntervalInSeconds
COMBINED_PREFIX = "(combined from similar events): "
SPAM_BURST = 25  # defaultSpamBurst
SPAM_QPS = 1.0 / 300.0  # defaultSpamQPS


@dataclass
class _Bucket:
    """A token bucket holding up to ``SPAM_BURST`` tokens, refilled at ``SPAM_QPS``."""

    tokens: float = float(SPAM_BURST)
    at: float | None = None

    def take(self, now: float) -> bool:
        if self.at is not None:
            self.tokens = min(float(SPAM_BURST), self.tokens + (now - self.at) * SPAM_QPS)
        self.at = now
        if self.tokens < 1.0:
            return False
        self.tokens -= 1.0
        return True


@dataclass(frozen=True)
class Event:
    """A core/v1 Event as the recorder last wrote it: the object it is about (``kind``,
    ``namespace`` — "" for cluster-scoped objects —, ``name``, ``uid``, ``field_path``),
    ``type`` (Normal | Warning), ``reason``, ``message``, the reporting ``component``
    and ``host``; ``object_name`` is the Event's own name; ``last_seen`` orders events by
    their latest occurrence across the recorder; times are seconds since the epoch."""

    kind: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str
    component: str
    count: int = 1
    last_seen: int = 0
    first_time: float = 0.0
    last_time: float = 0.0
    host: str = ""
    uid: str = ""
    field_path: str = ""
    object_name: str = ""

    @property
    def similar_key(self) -> tuple[str, ...]:
        """What similar occurrences share (the message is what differs)."""
        return (self.component, self.host, self.kind, self.namespace, self.name, self.uid,
                self.type, self.reason)

    @property
    def spam_key(self) -> tuple[str, ...]:
        """What the spam filter rations: the source and the involved object."""
        return (self.component, self.host, self.kind, self.namespace, self.name, self.uid)

    @property
    def key(self) -> tuple[str, ...]:
        """What makes two occurrences the same event (counted on one object)."""
        return (*self.similar_key, self.field_path, self.message)


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class EventCorrelator:
    """The recorder's memory of what it wrote. :meth:`observe` turns one occurrence into
    the Event to write: ``count == 1`` is a new object, a higher count a patch of
    ``object_name``; None when the spam filter drops it."""

    _similar: dict[tuple[str, ...], _Similar] = field(default_factory=dict)
    _spam: dict[tuple[str, ...], _Bucket] = field(default_factory=dict)
    _seen: dict[tuple[str, ...], Event] = field(default_factory=dict)
    _sequence: int = 0
    _last_nanos: int = 0

    def observe(self, occurrence: Event, now: float) -> Event | None:
        key = self._aggregate(occurrence, now)
        message = occurrence.message if key == occurrence.key else \
            COMBINED_PREFIX + occurrence.message
        self._sequence += 1
        previous = self._seen.get(key)
        if previous is None:
            event = replace(occurrence, message=message, count=1, last_seen=self._sequence,
                            first_time=now, last_time=now,
                            object_name=f"{occurrence.name}.{self._nanos(now):x}")
        else:
            event = replace(previous, message=message, count=previous.count + 1,
                            last_seen=self._sequence, last_time=now)
        self._seen[key] = event
        if not self._spam.setdefault(occurrence.spam_key, _Bucket()).take(now):
            return None
        return event

    def _aggregate(self, occurrence: Event, now: float) -> tuple[str, ...]:
        """The key the occurrence is counted under: its own, or its similar events' once
        there are too many distinct messages in the window."""
        similar = self._similar.setdefault(occurrence.similar_key, _Similar())
        if now - similar.last > SIMILAR_WINDOW_SECONDS:
            similar.messages.clear()
        similar.messages.add(occurrence.message)
        similar.last = now
        if len(similar.messages) < MAX_SIMILAR_MESSAGES:
            return occurrence.key
        return (*occurrence.similar_key, "", COMBINED_PREFIX)

    def _nanos(self, now: float) -> int:
        self._last_nanos = max(int(now * 1e9), self._last_nanos + 1)
        return self._last_nanos
