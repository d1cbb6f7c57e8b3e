"""Events for kubectl: the cluster's event recorder served read-only as core/v1 Events.

``kubectl describe`` lists an object's events with a field selector on
``involvedObject.*``; ``kubectl get events`` lists them with LAST SEEN, TYPE, REASON,
OBJECT and MESSAGE. The components record events in memory (client-go's recorder role,
aggregated by count); they are not stored as API objects, so they take no
resourceVersion and cannot be watched or written through the API.
"""

from __future__ import annotations

import contextlib
import datetime
import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from kubelet_sim.api.errors import BadRequest, NotFound
from kubelet_sim.api.model import KINDS
from kubelet_sim.apiserver.server import APIServer


class Event(Protocol):
    """One recorded event (client.events.Event has these; no import: the API server
    sits below the clients that record)."""

    @property
    def kind(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def reason(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def component(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def last_seen(self) -> int: ...
    @property
    def first_time(self) -> float: ...
    @property
    def last_time(self) -> float: ...


class EventSource(Protocol):
    @property
    def events(self) -> Sequence[Event]: ...


class NoEvents:
    events: Sequence[Event] = ()

FIELDS = {
    "metadata.name": lambda o: o["metadata"]["name"],
    "metadata.namespace": lambda o: o["metadata"]["namespace"],
    "involvedObject.kind": lambda o: o["involvedObject"]["kind"],
    "involvedObject.namespace": lambda o: o["involvedObject"].get("namespace", ""),
    "involvedObject.name": lambda o: o["involvedObject"]["name"],
    "involvedObject.uid": lambda o: o["involvedObject"].get("uid", ""),
    "involvedObject.apiVersion": lambda o: o["involvedObject"]["apiVersion"],
    "involvedObject.resourceVersion": lambda o: "",
    "involvedObject.fieldPath": lambda o: "",
    "reason": lambda o: o["reason"],
    "reportingComponent": lambda o: o["reportingComponent"],
    "source": lambda o: o["source"]["component"],
    "type": lambda o: o["type"],
}


def _time(seconds: float) -> str:
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def event_object(index: int, event: Event, api: APIServer) -> dict[str, Any]:
    namespace = event.namespace or "default"
    involved: dict[str, Any] = {"kind": event.kind, "name": event.name,
                                "apiVersion": KINDS[event.kind].api_version
                                if event.kind in KINDS else "v1"}
    if event.namespace:
        involved["namespace"] = event.namespace
    with contextlib.suppress(Exception):  # the object is gone, or not served: no uid
        involved["uid"] = api.get(event.kind, event.name, event.namespace).metadata.uid
    name = f"{event.name}.{index:016x}"
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": namespace,
                     "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"event/{namespace}/{name}")),
                     "resourceVersion": str(event.last_seen),
                     "creationTimestamp": _time(event.first_time)},
        "involvedObject": involved, "reason": event.reason, "message": event.message,
        "type": event.type, "count": event.count,
        "source": {"component": event.component}, "reportingComponent": event.component,
        "reportingInstance": "", "firstTimestamp": _time(event.first_time),
        "lastTimestamp": _time(event.last_time),
    }


def _matcher(field_selector: str) -> Any:
    terms = []
    for term in filter(None, (t.strip() for t in field_selector.split(","))):
        negate = "!=" in term
        key, _, value = term.partition("!=" if negate else "=")
        key, value = key.strip(), value.strip().removeprefix("=")
        if key not in FIELDS:
            raise BadRequest(f'"{key}" is not a known field selector: only '
                             f'{", ".join(sorted(FIELDS))}')
        terms.append((FIELDS[key], value, negate))
    return lambda obj: all((get(obj) != value) if neg else (get(obj) == value)
                           for get, value, neg in terms)


def list_events(recorder: EventSource, api: APIServer, namespace: str,
                field_selector: str) -> list[dict[str, Any]]:
    matches = _matcher(field_selector)
    objects = [event_object(i, e, api) for i, e in enumerate(recorder.events)]
    return [o for o in objects if (not namespace or o["metadata"]["namespace"] == namespace)
            and matches(o)]


def get_event(recorder: EventSource, api: APIServer, namespace: str,
              name: str) -> dict[str, Any]:
    for obj in list_events(recorder, api, namespace, ""):
        if obj["metadata"]["name"] == name:
            return obj
    raise NotFound("Event", name, namespace)


def table(objects: list[dict[str, Any]], resource_version: str) -> dict[str, Any]:
    columns = ["Last Seen", "Type", "Reason", "Object", "Message"]
    rows = []
    now = datetime.datetime.now(datetime.UTC)
    for o in objects:
        last = datetime.datetime.fromisoformat(o["lastTimestamp"].replace("Z", "+00:00"))
        seconds = max(0, int((now - last).total_seconds()))
        seen = f"{seconds}s" if seconds < 120 else f"{seconds // 60}m"
        involved = o["involvedObject"]
        rows.append({"cells": [seen, o["type"], o["reason"],
                               f"{involved['kind'].lower()}/{involved['name']}", o["message"]],
                     "object": {"kind": "PartialObjectMetadata",
                                "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]}})
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1",
            "metadata": {"resourceVersion": resource_version},
            "columnDefinitions": [{"name": c, "type": "string", "format": "", "description": "",
                                   "priority": 0} for c in columns],
            "rows": rows}
