"""``fieldValidation`` on create, update and patch: what the server does with fields the
kind does not define and with a field sent twice in one JSON object.

The fields a built-in kind defines are the type table's
(:mod:`kubelet_sim.api.kube_types`, the same the OpenAPI documents are built from), closed
everywhere except inside the types that hold any JSON (RawExtension, FieldsV1,
apiextensions' JSON); the kinds served as custom resources (the snapshot kinds) use
:mod:`kubelet_sim.api.schema`. The schemas inside a CustomResourceDefinition's
``JSONSchemaPropsOr*`` unions are read as their own Go decoders read them: a value of the
wrong type is an error, unknown fields are dropped without a word (the decoder inside is
not the strict one).

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

from kubelet_sim.api import kube_types
from kubelet_sim.api.errors import BadRequest
from kubelet_sim.api.kube_types import TypeRef
from kubelet_sim.api.quantity import Quantity, QuantityError
from kubelet_sim.api.schema import Arr, Map, Node, Obj, kind_schema
from kubelet_sim.apiserver.http import nesting

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
    return nesting.loads_json(raw, object_pairs_hook=_object)


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
            problems.append(f"duplicate field {go_quoted(_join(path, key))}")
        for key, value in doc.items():
            problems += duplicate_fields(value, _join(path, key))
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            problems += duplicate_fields(item, f"{path}[{i}]")
    return problems


def drop_unknown_fields(doc: Any, kind: str, api_version: str) -> list[str]:
    """Remove the fields ``kind`` does not define from ``doc``; their problems, in order.

    A value of the wrong type (a string where the kind has an integer, an object where it
    has a list) is not a problem to warn about but a body that cannot be decoded:
    :class:`BadRequest` as kube-apiserver words it, whatever the directive."""
    key = kube_types.kind_type(api_version, kind)
    if key is not None:
        walk = _Walk()
        walk.value(doc, key, "", kind)
        if walk.type_error:
            raise BadRequest(f'{kind} in version "{api_version.rpartition("/")[2]}" cannot be '
                             f"handled as a {kind}: {walk.type_error}")
        return walk.problems
    schema = kind_schema(kind)  # a kind served as a custom resource
    return _prune(doc, schema, "") if schema is not None else []


def go_type_name(ref: TypeRef) -> str:
    """The Go type as Go prints it in a decoding error: ``int32``, ``v1.PodSpec``,
    ``[]v1.Container``, ``map[string]string``."""
    if isinstance(ref, dict) and "slice" in ref:
        return "[]" + go_type_name(ref["slice"])
    if isinstance(ref, dict) and "map" in ref:
        return f"map[{go_type_name(ref['map']['key'])}]{go_type_name(ref['map']['value'])}"
    if ref in kube_types.SCALARS:
        return "uint8" if ref == "byte" else str(ref)
    package, _, name = str(ref).rpartition(".")
    return f"{package.rpartition('/')[2]}.{name}"


def _json_kind(value: Any) -> str:
    """How Go's JSON decoder names a value it cannot store."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


class _Walk:
    """One pass over a sent object along its type: unknown fields removed and listed, the
    first value of a wrong type kept as Go's decoder reports it."""

    def __init__(self, fields: list[str] | None = None, struct: str = "") -> None:
        self.problems: list[str] = []
        self.type_error = ""
        # the JSON field names from the root, as Go tracks them
        self._fields: list[str] = list(fields or [])
        # a walk inside a type that decodes itself: the struct holding it, whose name Go's
        # outer decoder puts on the inner decoder's type errors
        self._outer_struct = struct

    def _wrong(self, value: Any, ref: TypeRef, struct: str, number: str = "") -> None:
        if self.type_error:
            return  # Go's decoder reports the first one
        what = _json_kind(value) + (f" {number}" if number else "")
        if not self._fields:  # the whole document: Go names the value, not a field
            self.type_error = (f"json: cannot unmarshal {what} into Go value of type "
                               f"{go_type_name(ref)}")
            return
        self.type_error = (f"json: cannot unmarshal {what} into Go struct field "
                           f"{self._outer_struct or struct}.{'.'.join(self._fields)} of type "
                           f"{go_type_name(ref)}")

    def value(self, doc: Any, ref: TypeRef, path: str, struct: str) -> None:
        if doc is None:
            return  # null is every type's zero value
        resolved = kube_types.resolve(ref)
        if isinstance(resolved, dict) and "slice" in resolved:
            item = resolved["slice"]
            if kube_types.resolve(item) == "byte":
                if not isinstance(doc, str):
                    self._wrong(doc, ref, struct)
            elif not isinstance(doc, list):
                self._wrong(doc, ref, struct)
            else:
                for i, element in enumerate(doc):
                    self.value(element, item, f"{path}[{i}]", struct)
            return
        if isinstance(resolved, dict) and "map" in resolved:
            if not isinstance(doc, dict):
                self._wrong(doc, ref, struct)
                return
            for key, element in doc.items():
                self.value(element, resolved["map"]["value"], f"{path}.{key}", struct)
            return
        if isinstance(resolved, str) and resolved in kube_types.SCALARS:
            self._scalar(doc, ref, resolved, struct)
            return
        info = kube_types.type_info(resolved) if isinstance(resolved, str) else None
        if info is not None and info.special is not None:
            self._special(doc, info.special, ref, struct)
            return
        if info is None or info.kind != "struct":
            return
        if not isinstance(doc, dict):
            self._wrong(doc, ref, struct)
            return
        name = resolved.rpartition(".")[2]
        for key in list(doc):
            f = info.field(key)
            if f is None:
                self.problems.append(f"unknown field {go_quoted(_join(path, key))}")
                del doc[key]
                continue
            self._fields.append(key)
            self.value(doc[key], f.type, _join(path, key), name)
            self._fields.pop()

    def _special(self, doc: Any, special: str, ref: TypeRef, struct: str) -> None:
        """The types that decode themselves: a Quantity is a string (or number) in its
        grammar, an IntOrString an int32 or a string, apiextensions' JSONSchemaPropsOrBool
        a boolean or a schema object; the others take what JSON has."""
        if self.type_error:
            return
        if special == "Quantity":
            if isinstance(doc, bool) or not isinstance(doc, (str, int, float)):
                self._wrong(doc, ref, struct)
                return
            try:
                Quantity.parse(doc if isinstance(doc, str) else str(doc))
            except QuantityError:
                self.type_error = ("quantities must match the regular expression "
                                   "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
        elif special == "IntOrString" and (isinstance(doc, bool)
                                           or not isinstance(doc, (str, int))):
            self._wrong(doc, "int32", struct)
        elif special == "JSONSchemaPropsOrBool" and not isinstance(doc, (bool, dict)):
            self.type_error = "boolean or JSON schema expected"  # its own decoder's words
        elif special in _SCHEMA_UNIONS:
            self._union(doc, special, kube_types.resolve(ref), struct)

    def _union(self, doc: Any, special: str, key: str, struct: str) -> None:
        """A schema (an object) or, for an array, schemas (``items``) or names
        (``dependencies``) — walked apart; any other value Go's decoder leaves empty."""
        inner = _Walk(self._fields, self._outer_struct or struct)
        schema = f"{key.rpartition('.')[0]}.JSONSchemaProps"
        if isinstance(doc, dict):
            inner.value(doc, schema, "", "JSONSchemaProps")
        elif isinstance(doc, list):
            item_type = schema if special == "JSONSchemaPropsOrArray" else "string"
            if special != "JSONSchemaPropsOrBool":
                for item in doc:
                    inner.value(item, item_type, "", "JSONSchemaProps")
        self.type_error = inner.type_error

    def _scalar(self, doc: Any, ref: TypeRef, scalar: str, struct: str) -> None:
        if scalar == "string" or scalar == "[]byte":
            ok = isinstance(doc, str)
        elif scalar == "bool":
            ok = isinstance(doc, bool)
        elif scalar in ("float32", "float64"):
            ok = isinstance(doc, (int, float)) and not isinstance(doc, bool)
        else:
            ok = isinstance(doc, int) and not isinstance(doc, bool) and _fits(doc, scalar)
            if not ok and isinstance(doc, (int, float)) and not isinstance(doc, bool):
                self._wrong(doc, ref, struct, json.dumps(doc))
                return
        if not ok:
            self._wrong(doc, ref, struct)


_SCHEMA_UNIONS = frozenset({"JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool",
                            "JSONSchemaPropsOrStringArray"})
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int": 64, "int64": 64}
_UBITS = {"uint8": 8, "byte": 8, "uint16": 16, "uint32": 32, "uint64": 64}


def _fits(value: int, scalar: str) -> bool:
    if scalar in _UBITS:
        return 0 <= value < 2 ** _UBITS[scalar]
    bits = _BITS.get(scalar, 64)
    return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)


def _prune(doc: Any, schema: Node, path: str) -> list[str]:
    """Unknown fields of a kind described by :mod:`kubelet_sim.api.schema`."""
    problems: list[str] = []
    if isinstance(schema, Obj) and isinstance(doc, dict):
        for key in list(doc):
            if key not in schema.fields:
                problems.append(f"unknown field {go_quoted(_join(path, key))}")
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


_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t", "\v": "\\v", '"': '\\"', "\\": "\\\\"}


def go_quoted(text: str) -> str:
    """``text`` as Go's ``%q`` writes it (how the strict decoder names a field): control
    and unprintable characters escaped, a lone surrogate as the U+FFFD Go's JSON decoder
    reads it as."""
    out = ['"']
    for c in text:
        code = ord(c)
        if c in _GO_ESCAPES:
            out.append(_GO_ESCAPES[c])
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        elif c.isprintable():
            out.append(c)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def warning_headers(warnings: list[str]) -> list[tuple[str, str]]:
    """RFC 7234 warning headers as the API server sends them (code 299, agent "-")."""
    # a line break cannot be in a header: Go's server writes it as a space
    return [("Warning", '299 - "{}"'.format(
        w.replace("\\", "\\\\").replace('"', '\\"').replace("\r", " ").replace("\n", " ")))
        for w in warnings]


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
