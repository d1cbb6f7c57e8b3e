"""Errors as the API server writes them: ``Status`` objects with a reason and a code."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import (
    AlreadyExists,
    ApiError,
    ApplyConflict,
    Conflict,
    ExpiredContinue,
    Invalid,
    InvalidObject,
    InvalidOptions,
    NotFound,
    ObjectForbidden,
    TooLargeResourceVersion,
    TooManyRequests,
)


def status_body(code: int, reason: str, message: str,
                details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                            "status": "Failure", "message": message, "reason": reason,
                            "code": code}
    if details:
        body["details"] = details
    return body


def forbidden_body(group: str, resource: str, name: str, why: str) -> dict[str, Any]:
    """The 403 an authorizer's denial is (apierrors.NewForbidden): ``pods "web" is
    forbidden: <why>``, ``pods is forbidden: ...`` without a name, ``forbidden: ...``
    for a non-resource path; the details name the resource (always present, maybe
    empty)."""
    qualified = f"{resource}.{group}" if group else resource
    if not qualified:
        message = f"forbidden: {why}"
    else:
        message = f'{qualified}{f" {json.dumps(name)}" if name else ""} is forbidden: {why}'
    details = {k: v for k, v in (("name", name), ("group", group), ("kind", resource)) if v}
    return {**status_body(403, "Forbidden", message), "details": details}


def error_body(err: ApiError, plural: str = "", group: str = "") -> dict[str, Any]:
    """The Status for one of the core's typed errors; ``plural`` and ``group`` name the
    request's resource (``storageclasses.storage.k8s.io "x" not found``)."""
    details: dict[str, Any] = {}
    message = err.message
    resource = f"{plural}.{group}" if plural and group else plural
    if isinstance(err, (NotFound, AlreadyExists)):
        details = {"name": err.name, **({"group": group} if group else {}),
                   "kind": plural or err.kind}
        if plural:  # as Kubernetes words it: pods "web" not found
            what = "not found" if isinstance(err, NotFound) else "already exists"
            message = f'{resource} "{err.name}" {what}'
    if isinstance(err, InvalidObject):
        group = err.qualified_kind.partition(".")[2]
        details = {"name": err.name, "kind": err.qualified_kind.partition(".")[0],
                   "causes": [{"reason": e.reason, "message": e.detail, "field": e.field}
                              for e in err.errors]}
        if group:
            details["group"] = group
    elif isinstance(err, Invalid):
        details = {"causes": [{"reason": "FieldValueInvalid", "message": err.detail,
                               "field": err.field}]}
    if isinstance(err, ObjectForbidden):  # as kube-apiserver's admission plugins word it
        message = err.worded(err.resource or resource or err.kind)
        details = {"name": err.name} if err.name else {}
        if group and not err.resource:
            details["group"] = group
        details["kind"] = err.resource or plural or err.kind
    if isinstance(err, TooManyRequests) and err.causes:
        details = {"causes": err.causes}
    if isinstance(err, Conflict) and err.name:
        # the resource, as kube-apiserver names it ("pods"; a subresource keeps its own)
        details = {"name": err.name, "kind": err.kind if "/" in err.kind else plural or err.kind}
        if group and "/" not in err.kind:
            details["group"] = group
        if plural and err.detail:  # as Kubernetes words it: ... on pods "web": ...
            message = f'Operation cannot be fulfilled on {resource} "{err.name}": {err.detail}'

    if isinstance(err, ApplyConflict):
        details = {"causes": err.causes}
    if isinstance(err, InvalidOptions):
        details = {"name": "", "group": "meta.k8s.io", "kind": err.options_kind,
                   "causes": err.causes}
    if isinstance(err, TooLargeResourceVersion):
        details = {"causes": [{"reason": "ResourceVersionTooLarge",
                               "message": "Too large resource version"}],
                   "retryAfterSeconds": 1}
    body = status_body(err.code, err.reason, message, details or None)
    if isinstance(err, ExpiredContinue):
        body["metadata"] = {"continue": err.continue_token}
    return body


def status_response(body: dict[str, Any]) -> web.Response:
    return web.Response(status=int(body["code"]), text=json.dumps(body),
                        content_type="application/json")


def fail(code: int, reason: str, message: str,
         details: dict[str, Any] | None = None) -> web.HTTPException:
    """An aiohttp exception whose body is the Status (raise it from a handler)."""
    exc = web.HTTPException(text=json.dumps(status_body(code, reason, message, details)),
                            content_type="application/json")
    exc.set_status(code)
    return exc
