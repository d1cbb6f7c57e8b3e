"""Events over HTTP: the events.k8s.io/v1 shape of the stored core/v1 Events, and the
columns ``kubectl get events`` prints.

An Event is stored once, as core/v1 (its kind in :mod:`kubelet_sim.api.model`);
``/apis/events.k8s.io/v1/.../events`` serves the same objects renamed as the API server's
conversion renames them (``involvedObject`` ↔ ``regarding``, ``message`` ↔ ``note``,
``reportingComponent`` ↔ ``reportingController``, ``source``/``firstTimestamp``/
``lastTimestamp``/``count`` ↔ their ``deprecated*`` names).
"""

from __future__ import annotations

import datetime
from typing import Any

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http.resources import ApiResource

GROUP = "events.k8s.io"

# core/v1 field -> events.k8s.io/v1 field (the others keep their names)
_RENAMED = {
    "involvedObject": "regarding",
    "message": "note",
    "reportingComponent": "reportingController",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
}
_BACK = {new: old for old, new in _RENAMED.items()}


def _rename(doc: dict[str, Any], names: dict[str, str], api_version: str) -> dict[str, Any]:
    out = {names.get(k, k): v for k, v in doc.items()}
    out["apiVersion"] = api_version
    return out


def shown(resource: ApiResource, doc: dict[str, Any]) -> dict[str, Any]:
    """A stored object as ``resource``'s group serves it."""
    if resource.kind == "Event" and resource.group == GROUP:
        return _rename(doc, _RENAMED, f"{GROUP}/v1")
    return doc


def served_as_stored(resource: ApiResource) -> bool:
    """Whether :func:`shown` leaves ``resource``'s objects unchanged."""
    return not (resource.kind == "Event" and resource.group == GROUP)


def stored(resource: ApiResource, doc: dict[str, Any]) -> dict[str, Any]:
    """A sent object in the stored (core/v1) shape."""
    if resource.kind == "Event" and resource.group == GROUP:
        return _rename(doc, _BACK, "v1")
    return doc


# -- kubectl get events ---------------------------------------------------------------------

def _since(stamp: Any, now: datetime.datetime | None = None) -> str:
    """Kubernetes' short HumanDuration of the time since an RFC 3339 stamp."""
    if not stamp:
        return "<unknown>"
    then = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    seconds = max(0, int(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 180:
        return f"{minutes}m"
    return f"{minutes // 60}h" if minutes < 48 * 60 else f"{minutes // 1440}d"


def _first_seen(event: Resource) -> str:
    return _since(event.body.get("firstTimestamp") or event.body.get("eventTime"))


def _last_seen(event: Resource) -> str:
    series = event.body.get("series") or {}
    if series.get("lastObservedTime"):
        return _since(series["lastObservedTime"])
    last = event.body.get("lastTimestamp")
    return _since(last) if last else _first_seen(event)


def _count(event: Resource) -> int:
    series = event.body.get("series") or {}
    return int(series.get("count") or event.body.get("count") or 1)


def _object(event: Resource) -> str:
    involved = event.body.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    return f"{kind}/{involved['name']}" if involved.get("name") else kind


def _source(event: Resource) -> str:
    source = event.body.get("source") or {}
    component = source.get("component") or event.body.get("reportingComponent") or ""
    host = source.get("host") or event.body.get("reportingInstance") or ""
    return f"{component}, {host}" if component and host else str(component)


# name, type, priority, cell: the columns of the API server's event printer, in its order
COLUMNS: list[tuple[str, str, int, Any]] = [
    ("Last Seen", "string", 0, _last_seen),
    ("Type", "string", 0, lambda e: e.body.get("type", "")),
    ("Reason", "string", 0, lambda e: e.body.get("reason", "")),
    ("Object", "string", 0, _object),
    ("Subobject", "string", 1,
     lambda e: (e.body.get("involvedObject") or {}).get("fieldPath", "")),
    ("Source", "string", 1, _source),
    ("Message", "string", 0, lambda e: str(e.body.get("message", "")).strip()),
    ("First Seen", "string", 1, _first_seen),
    ("Count", "integer", 1, _count),
    ("Name", "string", 1, lambda e: e.name),
]
