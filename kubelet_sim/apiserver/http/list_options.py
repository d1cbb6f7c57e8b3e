"""The checks kube-apiserver makes on a get, list or watch's ``resourceVersion`` and
``resourceVersionMatch`` before it reads anything, so a bad value is an error Status and
never a started watch stream.

- ``resourceVersionMatch`` outside ``NotOlderThan``/``Exact`` (a watch: only
  ``NotOlderThan``, and only with ``sendInitialEvents``), or without a resourceVersion, and
  ``sendInitialEvents`` on a list: 422 Invalid on ``ListOptions.meta.k8s.io``, as the
  handlers' ValidateListOptions answers.
- A resourceVersion that is not a number: 400 BadRequest ``invalid resource version:
  resourceVersion: Invalid value: "abc": ...``, the etcd store's wording (kube-apiserver's
  watch cache lets the inner error through as a 500; a bad input is a 4xx here).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kubelet_sim.apiserver.http.status import fail

EXACT, NOT_OLDER_THAN = "Exact", "NotOlderThan"


def _quoted(values: list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _invalid(causes: list[dict[str, str]]) -> web.HTTPException:
    errors = [f"{c['field']}: {c['message']}" for c in causes]
    joined = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"  # Go's aggregate
    return fail(422, "Invalid", f'ListOptions.meta.k8s.io "" is invalid: {joined}',
                {"group": "meta.k8s.io", "kind": "ListOptions", "name": "", "causes": causes})


def _forbidden(field: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def _unsupported(field: str, value: str, allowed: list[str]) -> dict[str, str]:
    return {"reason": "FieldValueNotSupported", "field": field,
            "message": f'Unsupported value: "{value}": supported values: {_quoted(allowed)}'}


def check(query: Any, watch: bool) -> None:
    """Raise the Status a request with these query parameters gets, if any."""
    version = query.get("resourceVersion", "")
    match = query.get("resourceVersionMatch", "")
    initial = query.get("sendInitialEvents")
    causes: list[dict[str, str]] = []
    field = "resourceVersionMatch"
    if watch and match:
        if initial is None:
            causes.append(_forbidden(field, "resourceVersionMatch is forbidden for watch "
                                            "unless sendInitialEvents is provided"))
        if match != NOT_OLDER_THAN:
            causes.append(_unsupported(field, match, [NOT_OLDER_THAN]))
    elif match:
        if not version:
            causes.append(_forbidden(field, "resourceVersionMatch is forbidden unless "
                                            "resourceVersion is provided"))
        if query.get("continue"):
            causes.append(_forbidden(field, "resourceVersionMatch is forbidden when continue "
                                            "is provided"))
        if match not in (EXACT, NOT_OLDER_THAN):
            causes.append(_unsupported(field, match, [EXACT, NOT_OLDER_THAN, ""]))
        if match == EXACT and version == "0":
            causes.append(_forbidden(field, 'resourceVersionMatch "exact" is forbidden for '
                                            'resourceVersion "0"'))
    if not watch and initial is not None:
        causes.append(_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    if causes:
        raise _invalid(causes)
    if version and not version.isdigit():
        raise fail(400, "BadRequest", f'invalid resource version: resourceVersion: Invalid '
                   f'value: "{version}": strconv.ParseUint: parsing "{version}": invalid syntax')
