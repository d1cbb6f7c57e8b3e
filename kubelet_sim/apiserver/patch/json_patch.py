"""JSON patch (RFC 6902) with the rules of the library kube-apiserver uses
(evanphx/json-patch v4), which differ from the RFC in ways clients rely on:

- ``replace`` of a missing object member adds it (csi-snapshotter replaces
  ``/metadata/annotations`` and ``/status`` on objects without them);
- array indexes are read as Go's ``strconv.Atoi`` reads them: a sign and leading zeros
  are allowed, negative indexes count from the end; ``-`` appends (``add`` only);
- ``copy`` and ``move`` from a missing member carry ``null``; ``remove`` of one fails;
- a path without a leading ``/`` is looked up from its second segment on.

Errors answer as kube-apiserver answers them: a body that does not decode as a list of
operations is 400; more than 10,000 operations is 413; an operation that does not apply
is 422 ``Invalid`` with the generic message (the library's own is not passed on).
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubelet_sim.api.errors import BadRequest, RequestEntityTooLarge, Unprocessable

MAX_OPERATIONS = 10000
NOT_APPLIED = "the server rejected our request due to an error in our request"
_ATOI = re.compile(r"[+-]?[0-9]+")
_GO_TYPE = {dict: "object", list: "array", str: "string", bool: "bool", int: "number",
            float: "number", type(None): "null"}


class _Failed(Exception):
    """One operation did not apply (the message is the library's, for logs and tests)."""


def decode_operations(ops: Any, strict_decoding: bool) -> list[dict[str, Any]]:
    """The operations of a JSON patch body, or the 400/413 kube-apiserver answers.

    With ``fieldValidation`` Warn or Strict (the default is Warn) the server first decodes
    the body into typed operations, so a ``path``, ``op`` or ``from`` that is not a string
    is a 400 there; with Ignore only the list shape is checked and such an operation
    fails when applied (422)."""
    target = "[]handlers.jsonPatchOp" if strict_decoding else "jsonpatch.Patch"
    prefix = "error decoding patch: " if strict_decoding else ""
    if not isinstance(ops, list):
        raise BadRequest(f"{prefix}json: cannot unmarshal {_go_kind(ops)} into Go value of "
                         f"type {target}")
    for op in ops:
        if not isinstance(op, dict):
            element = "handlers.jsonPatchOp" if strict_decoding else "jsonpatch.Operation"
            raise BadRequest(f"{prefix}json: cannot unmarshal {_go_kind(op)} into Go value "
                             f"of type {element}")
        if strict_decoding:
            for name in ("op", "path", "from"):
                if name in op and op[name] is not None and not isinstance(op[name], str):
                    raise BadRequest(f"{prefix}json: cannot unmarshal {_go_kind(op[name])} "
                                     f"into Go struct field jsonPatchOp.{name} of type string")
    if len(ops) > MAX_OPERATIONS:
        raise RequestEntityTooLarge(f"The allowed maximum operations in a JSON patch is "
                                    f"{MAX_OPERATIONS}, got {len(ops)}")
    return ops


def apply_json_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """``ops`` (from :func:`decode_operations`) applied to a copy of ``doc``; 422 when one
    does not apply."""
    root = json.loads(json.dumps(doc))
    try:
        for op in ops:
            root = _apply_one(root, op)
    except _Failed as failed:
        raise Unprocessable(NOT_APPLIED) from failed
    return root


def explain_failure(doc: Any, ops: list[dict[str, Any]]) -> str | None:
    """Why ``ops`` do not apply to ``doc`` (the library's words), None if they do."""
    try:
        apply_json_patch(doc, ops)
    except Unprocessable as err:
        return str(err.__cause__)
    return None


# -- one operation ---------------------------------------------------------------------

def _apply_one(root: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op") if isinstance(op.get("op"), str) else "unknown"
    if kind == "add":
        container, key = _locate(root, _path(op, "path", kind), kind)
        _add(container, key, _value(op))
    elif kind == "remove":
        container, key = _locate(root, _path(op, "path", kind), kind)
        _remove(container, key)
    elif kind == "replace":
        path = _path(op, "path", kind)
        if path == "":
            value = _value(op)
            if not isinstance(value, (dict, list)):
                raise _Failed("replace operation value must be object or array")
            return value
        container, key = _locate(root, path, kind)
        _get(container, key)  # an array index must exist; an object member may not
        _set(container, key, _value(op))
    elif kind == "move":
        container, key = _locate(root, _path(op, "from", kind), kind, "from ")
        value = _get(container, key)
        _remove(container, key)
        container, key = _locate(root, _path(op, "path", kind), kind, "destination ")
        _add(container, key, value)
    elif kind == "copy":
        container, key = _locate(root, _path(op, "from", kind), kind, "from ")
        value = json.loads(json.dumps(_get(container, key)))
        container, key = _locate(root, _path(op, "path", kind), kind, "destination ")
        _add(container, key, value)
    elif kind == "test":
        _test(root, op)
    else:
        raise _Failed(f"Unexpected kind: {kind}")
    return root


def _test(root: Any, op: dict[str, Any]) -> None:
    path = _path(op, "path", "test")
    if path == "":
        if "value" in op and _equal(root, op["value"]):
            return
        raise _Failed(f"testing value {path} failed: test failed")
    container, key = _locate(root, path, "test")
    found = _get(container, key)
    if found is None:
        if "value" in op and op["value"] is None:
            return
        raise _Failed(f"testing value {path} failed: test failed")
    if "value" not in op or not _equal(found, op["value"]):
        raise _Failed(f"testing value {path} failed: test failed")


def _path(op: dict[str, Any], name: str, kind: str) -> str:
    value = op.get(name)
    if not isinstance(value, str):
        raise _Failed(f"{kind} operation failed to decode {name}")
    return value


def _value(op: dict[str, Any]) -> Any:
    return json.loads(json.dumps(op.get("value")))


def _locate(root: Any, path: str, kind: str, which: str = "") -> tuple[Any, str]:
    """The container holding the last segment of ``path``, and that segment."""
    parts = path.split("/")
    if len(parts) < 2:
        raise _Failed(f"{kind} operation does not apply: doc is missing {which}path: {path}")
    node = root
    for part in parts[1:-1]:
        try:
            node = _get(node, _unescape(part))
        except _Failed:
            node = None
        if not isinstance(node, (dict, list)):
            raise _Failed(f"{kind} operation does not apply: doc is missing {which}path: "
                          f"{path}")
    return node, _unescape(parts[-1])


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _index(key: str) -> int:
    if not _ATOI.fullmatch(key) or abs(int(key)) >= 2**63:
        raise _Failed(f'strconv.Atoi: parsing "{key}": invalid syntax')
    return int(key)


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    idx = _index(key)
    if idx < 0:
        if idx < -len(container):
            raise _Failed(f"Unable to access invalid index: {idx}: invalid index referenced")
        idx += len(container)
    if idx >= len(container):
        raise _Failed(f"Unable to access invalid index: {idx}: invalid index referenced")
    return container[idx]


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    idx = _index(key)
    container[idx + len(container) if idx < 0 else idx] = value


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    idx = _index(key)
    size = len(container) + 1
    if idx >= size or idx < -size:
        raise _Failed(f"error in add for path: Unable to access invalid index: {idx}")
    container.insert(idx + size if idx < 0 else idx, value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _Failed(f"Unable to remove nonexistent key: {key}: missing value")
        del container[key]
        return
    idx = _index(key)
    if idx >= len(container) or idx < -len(container):
        raise _Failed(f"Unable to access invalid index: {idx}: invalid index referenced")
    del container[idx]


def _equal(left: Any, right: Any) -> bool:
    """Equality as the library compares: objects and arrays by content, scalars by their
    JSON text (so 1 and 1.0, or 1 and true, differ)."""
    if isinstance(left, dict) or isinstance(right, dict):
        return (isinstance(left, dict) and isinstance(right, dict) and left.keys() ==
                right.keys() and all(_equal(left[k], right[k]) for k in left))
    if isinstance(left, list) or isinstance(right, list):
        return (isinstance(left, list) and isinstance(right, list) and len(left) ==
                len(right) and all(_equal(a, b) for a, b in zip(left, right, strict=True)))
    return json.dumps(left) == json.dumps(right)


def _go_kind(value: Any) -> str:
    return _GO_TYPE.get(type(value), "value")
