"""PATCH and field management at the HTTP edge: which patch types an endpoint takes, the
``fieldManager`` and ``force`` options, and the managedFields of create, update and
patch. The patch semantics themselves are :mod:`kubelet_sim.apiserver.patch`.
"""

from __future__ import annotations

import datetime
from typing import Any

import yaml
from aiohttp import web

from kubelet_sim.api.errors import (
    BadRequest,
    InvalidOptions,
    RequestEntityTooLarge,
    UnsupportedMediaType,
)
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.apiserver.http import nesting
from kubelet_sim.apiserver.http.connections import MAX_REQUEST_BODY_BYTES
from kubelet_sim.apiserver.http.custom import custom_parts
from kubelet_sim.apiserver.http.field_validation import IGNORE
from kubelet_sim.apiserver.http.paths import Target
from kubelet_sim.apiserver.patch import (
    Write,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    decode_operations,
    has_schema,
    kind_node,
    manager_from_user_agent,
    track_update,
)
from kubelet_sim.apiserver.patch.managed import FIELD_MANAGER_MAX_LENGTH
from kubelet_sim.apiserver.patch.schema import UNTYPED_NODE, Node, custom_resource_node

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
BUILT_IN_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH)
# custom resources take no strategic merge patch: their schema has no patch strategies
CUSTOM_PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, APPLY_PATCH)


async def read_body(request: web.Request) -> bytes:
    """The request's body, or the 413 kube-apiserver answers past its 3 MiB limit."""
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise RequestEntityTooLarge(f"limit is {MAX_REQUEST_BODY_BYTES}") from None


def patch_type(request: web.Request, target: Target) -> str:
    """The request's patch type, or the 415 kube-apiserver answers for one the endpoint
    does not take."""
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
    r = target.resource
    accepted = BUILT_IN_PATCH_TYPES if has_schema(r.group_version, r.kind) \
        else CUSTOM_PATCH_TYPES
    if content_type not in accepted:
        raise UnsupportedMediaType("the body of the request was in an unknown format - "
                                   "accepted media types include: " + ", ".join(accepted))
    return content_type


def field_manager(request: web.Request, options_kind: str, applying: bool = False) -> str:
    """The manager a write is recorded under: ``fieldManager``, else the User-Agent's
    first segment. Apply requires it (422), and it must be short and printable."""
    sent = request.query.get("fieldManager", "")
    problems: list[dict[str, str]] = []
    if applying and not sent:
        problems.append({"reason": "FieldValueRequired", "field": "fieldManager",
                         "message": "Required value: is required for apply patch"})
    if len(sent) > FIELD_MANAGER_MAX_LENGTH:
        problems.append({"reason": "FieldValueTooLong", "field": "fieldManager",
                         "message": f"Too long: may not be more than "
                                    f"{FIELD_MANAGER_MAX_LENGTH} bytes"})
    for at, char in enumerate(sent):
        if not char.isprintable():
            problems.append({"reason": "FieldValueInvalid", "field": "fieldManager",
                             "message": f"Invalid value: {sent!r}: invalid character "
                                        f"U+{ord(char):04X} (at position {at})"})
    if not applying and "force" in request.query:
        problems.append({"reason": "FieldValueForbidden", "field": "force",
                         "message": "Forbidden: may not be specified for non-apply patch"})
    if problems:
        raise InvalidOptions(options_kind, problems)
    return sent or manager_from_user_agent(request.headers.get("User-Agent", ""))


def force(request: web.Request) -> bool:
    """``force`` read as Go's ``strconv.ParseBool`` reads a query parameter."""
    raw = request.query.get("force")
    if raw in (None, "", "0", "f", "F", "false", "FALSE", "False"):
        return False
    if raw in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    raise BadRequest(f'strconv.ParseBool: parsing "{raw}": invalid syntax')


def node_of(target: Target) -> Node:
    """The schema of the endpoint's kind: the type table's, a definition's structural
    schema for a custom resource, else untyped (as structured-merge-diff handles a
    custom resource without a schema)."""
    custom = custom_parts(target.resource)
    if custom is not None:
        return custom_resource_node(custom[1].schema)
    return kind_node(target.resource.group_version, target.resource.kind) or UNTYPED_NODE


def write_of(target: Target, now: datetime.datetime) -> Write:
    """Where a write to ``target`` lands, at ``now`` (the API server's clock)."""
    r = target.resource
    return Write(node_of(target), r.group_version, target.subresource, r.has_status,
                 format_time(now))


def patched(kind: str, doc: dict[str, Any], patch: Any, target: Target,
            validation: str) -> Any:
    """``doc`` (the object as served) with a JSON, merge or strategic merge patch."""
    if kind == JSON_PATCH:
        return apply_json_patch(doc, decode_operations(patch, validation != IGNORE))
    if kind == MERGE_PATCH:
        return apply_merge_patch(doc, patch)
    return apply_strategic_merge_patch(doc, patch, node_of(target))


def decode_apply(raw: bytes) -> dict[str, Any]:
    """An apply configuration: YAML (JSON is YAML), one object."""
    try:
        config = nesting.loads_yaml(raw.decode("utf-8")) if raw else None
    except (yaml.YAMLError, UnicodeDecodeError, nesting.TooDeep) as err:
        raise BadRequest(f"error decoding YAML: {err}") from None
    if not isinstance(config, dict):
        raise BadRequest(f"error decoding YAML: cannot unmarshal {type(config).__name__} "
                         "into an object")
    return config


def check_apply_config(config: dict[str, Any], target: Target) -> None:
    """What kube-apiserver checks of an apply configuration before merging it."""
    r = target.resource
    if config.get("apiVersion") != r.group_version:
        raise BadRequest(f"Incorrect version specified in apply patch. Specified patch "
                         f"version: {config.get('apiVersion') or ''}, expected: "
                         f"{r.group_version}")
    if config.get("kind") != r.kind:
        raise BadRequest(f"apply patch kind {config.get('kind') or ''!r} does not match "
                         f"the endpoint's kind {r.kind!r}")
    meta = config.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise BadRequest("metadata must be an object")
    meta = meta or {}
    if meta.get("managedFields") is not None:
        raise BadRequest("metadata.managedFields must be nil")
    if meta.get("name", target.name) != target.name:
        raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the "
                         f"name on the URL ({target.name})")
    if r.namespaced and meta.get("namespace", target.namespace) != target.namespace:
        raise BadRequest("the namespace of the provided object does not match the "
                         "namespace sent on the request")


def record_update(obj: Resource, live: dict[str, Any] | None, shown_doc: dict[str, Any],
                  manager: str, target: Target, now: datetime.datetime) -> None:
    """Set ``obj``'s managedFields for a create (``live`` None) or update by ``manager``;
    ``shown_doc`` is ``obj`` as the endpoint serves it, defaults applied."""
    managed = track_update(live, shown_doc, manager, write_of(target, now))
    obj.metadata.managed_fields = managed or []
