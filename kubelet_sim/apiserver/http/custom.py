"""Custom resources over HTTP: the resources a CustomResourceDefinition serves (every
served version of its kind), how an object is shown in the version asked for (a
conversion strategy of None changes only ``apiVersion``; the version's defaults are
applied on read as apiextensions does), the fields its schema prunes, the Table of its
``additionalPrinterColumns``, the ``scale`` subresource (autoscaling/v1 Scale) and the
media types: custom resources are JSON only (a protobuf body or a strategic merge patch is
415, an Accept allowing only protobuf 406)."""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import BadRequest, Conflict, FieldError, InvalidObject
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.crd import columns
from kubelet_sim.apiserver.crd import schema as structural
from kubelet_sim.apiserver.crd.definition import CustomKind, CustomVersion
from kubelet_sim.apiserver.crd.registry import CustomResources
from kubelet_sim.apiserver.http import events
from kubelet_sim.apiserver.http import field_validation as fields
from kubelet_sim.apiserver.http.encoding.negotiation import read_body
from kubelet_sim.apiserver.http.resources import (
    DEPRECATED,
    ApiResource,
    group_versions,
    lookup,
)
from kubelet_sim.apiserver.http.status import fail
from kubelet_sim.apiserver.http.workers import Workers
from kubelet_sim.apiserver.http.workload_tables import format_selector
from kubelet_sim.apiserver.patch.json_patch import apply_json_patch, decode_operations
from kubelet_sim.apiserver.patch.merge import apply_merge_patch
from kubelet_sim.apiserver.server import APIServer

PROTOBUF = "application/vnd.kubernetes.protobuf"
_ACCEPTED = ("application/json", "application/yaml")
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/apply-patch+yaml")
_NAME_DESCRIPTION = ("Name must be unique within a namespace. Is required when creating "
                     "resources, although some resources may allow a client to request the "
                     "generation of an appropriate name automatically.")


@dataclass(frozen=True)
class CustomApiResource(ApiResource):
    """A resource served from a CustomResourceDefinition, in one of its versions."""

    definition: CustomKind | None = field(default=None, compare=False)
    served_version: CustomVersion | None = field(default=None, compare=False)

    @property
    def stored_kind(self) -> str:
        return self.definition.store_kind if self.definition else self.kind


def custom_parts(r: ApiResource) -> tuple[CustomKind, CustomVersion] | None:
    if isinstance(r, CustomApiResource) and r.definition and r.served_version:
        return r.definition, r.served_version
    return None


def served_resources(custom: CustomResources) -> list[ApiResource]:
    return [CustomApiResource(k.kind, k.group, v.name, k.plural, k.namespaced, v.status,
                              k.short_names, k.categories, has_scale=v.scale is not None,
                              definition=k, served_version=v)
            for k in custom.kinds() for v in k.versions if v.served]


def served_group_versions(custom: CustomResources) -> dict[str, list[ApiResource]]:
    """Every group/version served: the built-in ones and the definitions'."""
    return group_versions(served_resources(custom))


def resolve(custom: CustomResources, group: str, version: str,
            plural: str) -> ApiResource | None:
    """The resource at a path: a definition's first (it replaces a built-in it adopts)."""
    for r in served_resources(custom):
        if (r.group, r.version, r.plural) == (group, version, plural):
            return r
    return lookup(group, version, plural)


def deprecation_warning(r: ApiResource) -> str | None:
    """The Warning every request of a deprecated version is answered with."""
    parts = custom_parts(r)
    if parts is None:
        return DEPRECATED.get((r.group_version, r.kind))
    if not parts[1].deprecated:
        return None
    return parts[1].deprecation_warning or f"{r.group_version} {r.kind} is deprecated"


# -- versions --------------------------------------------------------------------------------

def shown(r: ApiResource, doc: dict[str, Any]) -> dict[str, Any]:
    """A stored object as ``r``'s version serves it."""
    parts = custom_parts(r)
    if parts is None:
        return events.shown(r, doc)
    doc["apiVersion"] = r.group_version
    structural.apply_defaults(doc, parts[1].schema)
    return doc


def served_as_stored(r: ApiResource) -> bool:
    """Whether :func:`shown` leaves every object of ``r`` as stored."""
    return custom_parts(r) is None and events.served_as_stored(r)


def stored(r: ApiResource, doc: dict[str, Any]) -> dict[str, Any]:
    """A sent object in the stored version."""
    parts = custom_parts(r)
    if parts is None:
        return events.stored(r, doc)
    if doc.get("apiVersion") == r.group_version:
        doc["apiVersion"] = f"{r.group}/{parts[0].storage_version.name}"
    return doc


def unknown_fields(r: ApiResource, doc: Any) -> list[str]:
    """Drop the fields ``r`` does not define from ``doc``; their problems, in order."""
    parts = custom_parts(r)
    if parts is None:
        return fields.drop_unknown_fields(
            doc, r.kind, str(doc.get("apiVersion") or r.group_version))
    return [f"unknown field {fields.go_quoted(path)}"
            for path in structural.prune(doc, parts[1].schema)]


# -- media types -------------------------------------------------------------------------------

def refuse_other_media(request: web.Request) -> None:
    """Custom resources speak JSON only: 415 for a protobuf body or a strategic merge
    patch, 406 when the client accepts nothing this path can send."""
    sent = request.headers.get("Content-Type", "").split(";")[0].strip()
    if request.method in ("POST", "PUT", "PATCH") and sent == PROTOBUF:
        raise fail(415, "UnsupportedMediaType",
                   f'the body of the request was in an unknown format - accepted media types '
                   f'include: {", ".join(_ACCEPTED)}')
    if request.method == "PATCH" and sent == "application/strategic-merge-patch+json":
        # no Go struct, no patch strategies: a strategic merge patch has no meaning here
        raise fail(415, "UnsupportedMediaType",
                   "the body of the request was in an unknown format - accepted media types "
                   f'include: {", ".join(PATCH_TYPES)}')
    accept = request.headers.get("Accept", "")
    if not accept:
        return
    for media in accept.split(","):
        kind = media.split(";")[0].strip()
        if kind in (*_ACCEPTED, "*/*", "application/*", ""):
            return
    raise fail(406, "NotAcceptable", "only the following media types are accepted: "
               f'{", ".join(_ACCEPTED)}')


# -- Table ---------------------------------------------------------------------------------------

def table(r: ApiResource, items: list[Resource], resource_version: str, include: str,
          continue_token: str = "", api_version: str = "meta.k8s.io/v1") -> dict[str, Any]:
    """``kubectl get``: Name, then the version's printer columns (or Age without any)."""
    parts = custom_parts(r)
    assert parts is not None
    printed = list(parts[1].columns) or [
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": "", "priority": 0}]
    definitions = [{"name": "Name", "type": "string", "format": "name",
                    "description": _NAME_DESCRIPTION, "priority": 0}]
    definitions += [{"name": c["name"], "type": c["type"], "format": c.get("format", ""),
                     "description": c.get("description", ""),
                     "priority": int(c.get("priority") or 0)} for c in printed]
    rows = []
    for obj in items:
        doc = shown(r, obj.to_dict())
        cells: builtins.list[Any] = [obj.name]
        for c in printed:
            try:
                value = columns.evaluate(doc, c["jsonPath"])
            except ValueError:
                value = None
            cells.append(columns.cell(value, c["type"]))
        rows.append({"cells": cells, "object": _row_object(doc, include, api_version)})
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": api_version, "metadata": meta,
            "columnDefinitions": definitions, "rows": rows}


def _row_object(doc: dict[str, Any], include: str, api_version: str) -> dict[str, Any]:
    if include == "Object":
        return doc
    if include == "None":
        return {}
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": doc["metadata"]}


# -- scale -------------------------------------------------------------------------------------

# Built-in kinds with a scale subresource (Deployment, ReplicaSet, StatefulSet): the same
# paths, and the selector as the text of ``spec.selector``.
_BUILT_IN_SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}


def _scale_paths(r: ApiResource) -> dict[str, Any]:
    parts = custom_parts(r)
    if parts is None:
        return _BUILT_IN_SCALE
    assert parts[1].scale is not None
    return parts[1].scale


def scale_of(r: ApiResource, obj: Resource) -> dict[str, Any]:
    """The autoscaling/v1 Scale of ``obj``."""
    paths, doc = _scale_paths(r), obj.to_dict()
    meta = obj.metadata
    status: dict[str, Any] = {"replicas": int(columns.evaluate(
        doc, paths["statusReplicasPath"]) or 0)}
    if paths is _BUILT_IN_SCALE:
        status["selector"] = format_selector(obj.spec.get("selector")).replace("<none>", "")
    elif paths.get("labelSelectorPath"):
        selector = columns.evaluate(doc, paths["labelSelectorPath"])
        if isinstance(selector, str) and selector:
            status["selector"] = selector
    metadata = {"name": meta.name, "namespace": meta.namespace, "uid": meta.uid,
                "resourceVersion": meta.resource_version,
                "creationTimestamp": meta.creation_timestamp}
    return {"kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: v for k, v in metadata.items() if v},
            "spec": {"replicas": int(columns.evaluate(doc, paths["specReplicasPath"]) or 0)},
            "status": status}


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    keys = [s for s in columns.steps(path) if isinstance(s, str)]
    node = doc
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


async def serve_scale(api: APIServer, request: web.Request, r: ApiResource, name: str,
                      namespace: str, workers: Workers, dry_run: bool) -> dict[str, Any]:
    """GET, PUT or PATCH (merge or JSON patch on the Scale) of ``<plural>/<name>/scale``;
    the write runs in ``workers``' write pool (``dry_run``: ``dryRun=All``, not stored)."""
    current = api.get(r.stored_kind, name, namespace)
    if request.method == "GET":
        return scale_of(r, current)
    if request.method not in ("PUT", "PATCH"):
        raise fail(405, "MethodNotAllowed", f"{request.method} is not supported on scale")
    try:  # a PUT of a built-in kind's Scale may come in protobuf (client-go's scale client)
        sent = await read_body(request) if request.method == "PUT" \
            else fields.decode(await request.read() or b"{}")
    except ValueError as e:
        raise BadRequest(f"the body of the request could not be decoded: {e}") from None
    scale = scale_of(r, current)
    if request.method == "PUT":
        wanted = sent
    elif request.headers.get("Content-Type", "").startswith("application/json-patch+json"):
        wanted = apply_json_patch(scale, decode_operations(sent, True))
    else:
        wanted = apply_merge_patch(scale, sent)
    if not isinstance(wanted, dict):
        raise BadRequest("the body must be a JSON object")
    sent_version = (wanted.get("metadata") or {}).get("resourceVersion")
    if sent_version and sent_version != current.metadata.resource_version:
        raise Conflict(f'Operation cannot be fulfilled on {r.plural}.{r.group} "{name}": the '
                       "object has been modified; please apply your changes to the latest "
                       "version and try again")
    replicas = (wanted.get("spec") or {}).get("replicas")
    if isinstance(replicas, bool) or not isinstance(replicas, int) or replicas < 0:
        raise InvalidObject("Scale.autoscaling", name, [FieldError(
            "FieldValueInvalid", "spec.replicas",
            f"Invalid value: {json.dumps(replicas)}: must be greater than or equal to 0")])
    doc = current.to_dict()
    _set(doc, _scale_paths(r)["specReplicasPath"], replicas)
    return scale_of(r, await workers.write(api.update, Resource.from_dict(doc),
                                           dry_run=dry_run))
