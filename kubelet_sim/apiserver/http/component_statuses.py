"""The deprecated core/v1 ComponentStatus (``kubectl get componentstatuses``, ``cs``), as
kube-apiserver v1.35 still serves it: get and list only, every answer with the Warning
``v1 ComponentStatus is deprecated in v1.19+``, computed per request and never stored.

Each component has one ``Healthy`` condition. kube-apiserver probes the scheduler's and
the controller-manager's ``/healthz`` on 127.0.0.1 (ports 10259 and 10257) and its
storage: here ``up`` runs the scheduler and the controllers in its own process, so they
are ``True`` with message ``ok`` when it does (:class:`Components`), and answer as a
refused probe when they are not run (``apiserver``: status ``Unknown``, the dial error);
``etcd-0`` is the API server's own store, always ``ok``. A list's label and field
selectors filter as kube-apiserver's default predicate does (the objects have no labels;
``metadata.name`` is the field). One difference: a name that is no component is a 404
NotFound here, where kube-apiserver answers a 500 ``Component not found: <name>``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON
from kubelet_sim.api.selectors import FieldSelector, LabelSelector
from kubelet_sim.apiserver.http.encoding import output, respond
from kubelet_sim.apiserver.http.paths import Target

__all__ = ["Components", "component_statuses", "serve"]

_FIELDS = frozenset({"metadata.name", "metadata.namespace"})


@dataclass(frozen=True)
class Components:
    """Which control-plane components run beside the API server."""

    scheduler: bool = False
    controller_manager: bool = False


def _condition(port: int | None, running: bool) -> JSON:
    if running:
        return {"type": "Healthy", "status": "True", "message": "ok"}
    url = f"https://127.0.0.1:{port}/healthz"
    return {"type": "Healthy", "status": "Unknown",
            "error": f'Get "{url}": dial tcp 127.0.0.1:{port}: connect: connection refused'}


def component_statuses(components: Components) -> list[JSON]:
    """The ComponentStatus objects, in the order kubectl usually shows them."""
    found = (("scheduler", _condition(10259, components.scheduler)),
             ("controller-manager", _condition(10257, components.controller_manager)),
             ("etcd-0", _condition(None, True)))
    return [{"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
             "conditions": [condition]} for name, condition in found]


def _selected(request: web.Request, items: list[JSON]) -> list[JSON]:
    labels = LabelSelector.parse(request.query.get("labelSelector"))
    fields = FieldSelector.parse(request.query.get("fieldSelector"), _FIELDS)

    def chosen(obj: JSON) -> bool:
        name = str(obj["metadata"]["name"])
        return labels.matches({}) and fields.matches(
            lambda path: name if path == "metadata.name" else "")

    return [o for o in items if chosen(o)]


def _healthy(obj: JSON) -> JSON:
    return next((c for c in obj.get("conditions") or [] if c.get("type") == "Healthy"), {})


def _cells(obj: JSON) -> list[str]:
    """kubectl's printer: NAME, STATUS (Unknown without a Healthy condition), MESSAGE,
    ERROR."""
    healthy = _healthy(obj)
    status = "Unknown" if not healthy else \
        "Healthy" if healthy.get("status") == "True" else "Unhealthy"
    return [obj["metadata"]["name"], status, healthy.get("message", ""),
            healthy.get("error", "")]


def _table(request: web.Request, items: list[JSON]) -> dict[str, Any]:
    api_version = output(request).meta_api_version
    include = request.query.get("includeObject", "Metadata")

    def row_object(obj: JSON) -> JSON:
        if include == "Object":
            return obj
        if include == "None":
            return {}
        return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
                "metadata": obj["metadata"]}

    return {"kind": "Table", "apiVersion": api_version, "metadata": {},
            "columnDefinitions": [
                {"name": name, "type": "string", "format": "name" if name == "Name" else "",
                 "description": "", "priority": 0}
                for name in ("Name", "Status", "Message", "Error")],
            "rows": [{"cells": _cells(o), "object": row_object(o)} for o in items]}


def serve(request: web.Request, target: Target, components: Components) -> web.Response:
    """A GET of ``componentstatuses`` or ``componentstatuses/<name>`` (the caller refuses
    every other verb)."""
    items = component_statuses(components)
    wants_table = output(request).as_kind == "Table"
    if target.name:
        named = [o for o in items if o["metadata"]["name"] == target.name]
        if not named:
            raise NotFound("componentstatuses", target.name)
        return respond(request, _table(request, named) if wants_table else named[0])
    items = _selected(request, items)
    if wants_table:
        return respond(request, _table(request, items))
    return respond(request, {"kind": "ComponentStatusList", "apiVersion": "v1",
                             "metadata": {}, "items": items})
