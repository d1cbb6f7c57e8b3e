"""Events, as ``kubectl describe`` and ``kubectl get events`` list them: client-go's
``record`` package role, shared by every component of a cluster.

:meth:`EventRecorder.record` writes a core/v1 Event through the API server: a new
object named ``<object name>.<hex nanoseconds>`` in the object's namespace (``default``
for cluster-scoped objects), or — for a repeat, by the correlator's rules
(:mod:`kubelet_sim.client.event_correlator`) — a patch of the first one's ``count``,
``lastTimestamp`` and ``message``. Like client-go, a failed write is logged and dropped:
events never fail the component that records them. The recorder also keeps what it wrote
(client-go's correlator cache), which the in-process readers below use; without an API
server (unit tests of one controller) it only keeps them.

Over a :class:`~kubelet_sim.client.kube_client.KubeClient` (an API server in another
process) the writes go out in the background, in order, as client-go's broadcaster sends
them: :meth:`EventRecorder.record` never waits for the network, and
:meth:`EventRecorder.flush` waits until what was recorded so far is written.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from kubelet_sim.api.errors import ApiError, NotFound
from kubelet_sim.api.model import KINDS, Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.event_correlator import Event, EventCorrelator
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import shared_cache
from kubelet_sim.utils.clock import Clock, RealClock

__all__ = ["NORMAL", "WARNING", "Event", "EventRecorder", "event_body"]

NORMAL = "Normal"
WARNING = "Warning"

log = logging.getLogger(__name__)


def event_body(event: Event, involved_version: str = "") -> dict[str, Any]:
    """The core/v1 Event object for ``event``, as client-go's ``makeEvent`` fills it."""
    involved: dict[str, Any] = {"kind": event.kind, "name": event.name,
                                "apiVersion": KINDS[event.kind].api_version
                                if event.kind in KINDS else "v1"}
    for wire, value in (("namespace", event.namespace), ("uid", event.uid),
                        ("resourceVersion", involved_version),
                        ("fieldPath", event.field_path)):
        if value:
            involved[wire] = value
    source = {"component": event.component, **({"host": event.host} if event.host else {})}
    first, last = _rfc3339(event.first_time), _rfc3339(event.last_time)
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": event.object_name, "namespace": event.namespace or "default"},
            "involvedObject": involved, "reason": event.reason, "message": event.message,
            "source": source, "firstTimestamp": first, "lastTimestamp": last,
            "count": event.count, "type": event.type,
            "reportingComponent": event.component, "reportingInstance": event.host}


def _rfc3339(seconds: float) -> str:
    return format_time(datetime.fromtimestamp(seconds, UTC))


@dataclass
class EventRecorder:
    """Writes events to ``api`` (when given) and remembers them in first-recorded order."""

    api: APIServer | KubeClient | None = None
    clock: Clock | None = None
    events: list[Event] = field(default_factory=list)
    _correlator: EventCorrelator = field(default_factory=EventCorrelator)
    _position: dict[str, int] = field(default_factory=dict)  # Event name -> index in events
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # over a KubeClient: the events waiting to be written, and the task writing them
    _queue: list[Event] = field(default_factory=list)
    _writer: asyncio.Task[None] | None = None
    _written: asyncio.Event | None = None

    def record(self, kind: str, namespace: str, name: str, event_type: str, reason: str,
               message: str, component: str, *, host: str = "", field_path: str = "") -> None:
        """One occurrence of an event about the object ``kind``/``namespace``/``name``
        (namespace "" for a cluster-scoped object), reported by ``component`` on ``host``;
        ``field_path`` names a part of it (``spec.containers{web}``)."""
        uid, version = self._involved(kind, name, namespace)
        occurrence = Event(kind, namespace, name, event_type, reason, message, component,
                           host=host, uid=uid, field_path=field_path)
        clock = self.clock or getattr(self.api, "clock", None) or RealClock()
        with self._lock:
            event = self._correlator.observe(occurrence, clock.now().timestamp())
            if event is None:
                log.info("event %s on %s %s/%s dropped by the spam filter", reason, kind,
                         namespace, name)
                return
            if event.object_name in self._position:
                self.events[self._position[event.object_name]] = event
            else:
                self._position[event.object_name] = len(self.events)
                self.events.append(event)
            self._write(event, version)

    def _involved(self, kind: str, name: str, namespace: str) -> tuple[str, str]:
        """The object's uid and resourceVersion (client-go takes them from the object)."""
        if not isinstance(self.api, APIServer) or kind not in KINDS:
            return "", ""  # (over a client, the writer looks them up)
        try:
            obj = self.api.get(kind, name, namespace)
        except ApiError:
            return "", ""
        return obj.metadata.uid, obj.metadata.resource_version

    def _write(self, event: Event, involved_version: str) -> None:
        if self.api is None:
            return
        if not isinstance(self.api, APIServer):
            self._send_later(event)
            return
        namespace = event.namespace or "default"
        try:
            if event.count > 1:
                try:
                    self.api.patch("Event", event.object_name, {
                        "count": event.count, "message": event.message,
                        "lastTimestamp": _rfc3339(event.last_time)}, namespace)
                    return
                except NotFound:
                    pass  # it went (a namespace cleanup, say): create it again, as client-go
            self.api.create(event_body(event, involved_version))
        except ApiError as err:  # e.g. the namespace is being deleted: drop the event
            log.info("event %s/%s (%s) not written: %s", namespace, event.object_name,
                     event.reason, err)

    # -- over a KubeClient: written in the background ------------------------------------

    def _send_later(self, event: Event) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            log.info("event %s on %s/%s not written: no event loop", event.reason,
                     event.namespace, event.name)
            return
        self._queue.append(event)
        if self._written is None:
            self._written = asyncio.Event()
        self._written.clear()
        if self._writer is None or self._writer.done():
            self._writer = loop.create_task(self._send_queued(), name="event-writer")

    async def _send_queued(self) -> None:
        assert isinstance(self.api, KubeClient) and not isinstance(self.api, APIServer)
        client = self.api
        while self._queue:
            event = self._queue.pop(0)
            namespace = event.namespace or "default"
            try:
                version = ""
                if event.count == 1 and event.kind in KINDS and not event.uid:
                    obj = await self._involved_object(client, event)
                    if obj is not None:
                        event = replace(event, uid=obj.metadata.uid)
                        version = obj.metadata.resource_version
                if event.count > 1:
                    try:
                        await client.patch("Event", event.object_name, {
                            "count": event.count, "message": event.message,
                            "lastTimestamp": _rfc3339(event.last_time)}, namespace)
                        continue
                    except NotFound:
                        pass
                await client.create(Resource.from_dict(event_body(event, version)))
            except ApiError as err:
                log.info("event %s/%s (%s) not written: %s", namespace, event.object_name,
                         event.reason, err)
        if self._written is not None:
            self._written.set()

    @staticmethod
    async def _involved_object(client: KubeClient, event: Event) -> Resource | None:
        """The object an event is about: from the informer cache when the component
        keeps its kind there (client-go takes it from the object it was handed), else
        read."""
        cache = shared_cache(feed_source(client))
        if event.kind in cache.kinds:
            return cache.get(event.kind, event.name, event.namespace)
        try:
            return await client.get(event.kind, event.name, event.namespace)
        except ApiError:
            return None

    async def flush(self) -> None:
        """Wait until every event recorded so far is written (at once in-process)."""
        if self._writer is not None and not self._writer.done() and self._written is not None:
            await self._written.wait()

    # -- readers (what `kubectl describe` lists for an object) -------------------------------

    def for_object(self, kind: str, name: str, namespace: str = "") -> list[Event]:
        return [e for e in self.events
                if e.kind == kind and e.name == name and e.namespace == namespace]

    def reasons(self, kind: str, name: str, namespace: str = "") -> list[str]:
        return [e.reason for e in self.for_object(kind, name, namespace)]

    def warnings(self, kind: str, name: str, namespace: str = "") -> list[Event]:
        """The object's Warning events, the most recently seen last."""
        return sorted((e for e in self.for_object(kind, name, namespace) if e.type == WARNING),
                      key=lambda e: e.last_seen)
