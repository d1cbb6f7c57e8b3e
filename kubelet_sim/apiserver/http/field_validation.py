"""``fieldValidation`` on create, update and patch: what the server does with fields the
kind does not define (:mod:`kubelet_sim.api.schema`) and with a field sent twice in one
JSON object.

- ``Strict``: 400 BadRequest, ``strict decoding error: unknown field "spec.foo",
  duplicate field "metadata.name"``; nothing is written.
- ``Warn`` (the default when the parameter is absent): the write goes ahead without the
  unknown fields (the last of duplicates wins) and each problem comes back as a
  ``Warning: 299 - "..."`` response header, which kubectl prints.
- ``Ignore``: as Warn, silently.

Paths are written as Kubernetes writes them: ``spec.containers[0].foo``.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.api.schema import Arr, Map, Node, Obj, kind_schema

STRICT, WARN, IGNORE = "Strict", "Warn", "Ignore"


class _Decoded(dict[str, Any]):
    """A JSON object that remembers the keys it was given more than once."""

    duplicates: list[str]


def _object(pairs: list[tuple[str, Any]]) -> _Decoded:
    out = _Decoded()
    out.duplicates = []
    for key, value in pairs:
        if key in out and key not in out.duplicates:
            out.duplicates.append(key)
        out[key] = value
    return out


def decode(raw: bytes) -> Any:
    """JSON as ``json.loads`` reads it (the last duplicate wins), duplicates remembered."""
    return json.loads(raw, object_pairs_hook=_object)


def directive(request: web.Request) -> str:
    value = request.query.get("fieldValidation") or WARN
    if value not in (STRICT, WARN, IGNORE):
        raise BadRequest(f'fieldValidation must be one of "Ignore", "Warn", or "Strict", '
                         f'not "{value}"')
    return value


def duplicate_fields(doc: Any, path: str = "") -> list[str]:
    problems: list[str] = []
    if isinstance(doc, dict):
        for key in getattr(doc, "duplicates", ()):
            problems.append(f'duplicate field "{_join(path, key)}"')
        for key, value in doc.items():
            problems += duplicate_fields(value, _join(path, key))
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            problems += duplicate_fields(item, f"{path}[{i}]")
    return problems


def drop_unknown_fields(doc: Any, kind: str) -> list[str]:
    """Remove the fields ``kind`` does not define from ``doc``; their problems, in order."""
    schema = kind_schema(kind)
    return _prune(doc, schema, "") if schema is not None else []


def _prune(doc: Any, schema: Node, path: str) -> list[str]:
    problems: list[str] = []
    if isinstance(schema, Obj) and isinstance(doc, dict):
        for key in list(doc):
            if key not in schema.fields:
                problems.append(f'unknown field "{_join(path, key)}"')
                del doc[key]
            else:
                problems += _prune(doc[key], schema.fields[key], _join(path, key))
    elif isinstance(schema, Arr) and isinstance(doc, list):
        for i, item in enumerate(doc):
            problems += _prune(item, schema.items, f"{path}[{i}]")
    elif isinstance(schema, Map) and isinstance(doc, dict):
        for key, value in doc.items():
            problems += _prune(value, schema.values, f"{path}.{key}")
    return problems


def settle(problems: list[str], mode: str) -> list[str]:
    """Raise the Strict error, or return the warnings to send (none for Ignore)."""
    if not problems or mode == IGNORE:
        return []
    if mode == STRICT:
        raise BadRequest("strict decoding error: " + ", ".join(problems))
    return problems


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """RFC 7234 warning headers as the API server sends them (code 299, agent "-")."""
    return [("Warning", '299 - "{}"'.format(w.replace("\\", "\\\\").replace('"', '\\"')))
            for w in warnings]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
