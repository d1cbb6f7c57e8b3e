"""The JSON forms of apiextensions.k8s.io/v1's messages that hold free JSON.

A CustomResourceDefinition's ``openAPIV3Schema`` is a tree of ``JSONSchemaProps``, plain
messages but for four members whose JSON is not an object of fixed fields; each has a
message of its own in protobuf, and its JSON is decided by what the value is:

- ``JSON`` (``default``, ``example``, each ``enum`` member): ``raw`` holds the value's
  JSON text; an empty ``raw`` is JSON ``null``;
- ``JSONSchemaPropsOrArray`` (``items``): an object is ``schema``, an array is
  ``jSONSchemas``; neither (or an empty array) reads back as ``null``;
- ``JSONSchemaPropsOrBool`` (``additionalProperties``, ``additionalItems``): a boolean is
  ``allows``; an object is ``schema`` with ``allows`` true; anything else is refused
  ("boolean or JSON schema expected");
- ``JSONSchemaPropsOrStringArray`` (each value of ``dependencies``): an array of strings
  is ``property``, an object is ``schema``; neither reads back as ``null``.

The values decoded from JSON other than these shapes are left empty, as Go's decoders of
these types leave them. The schemas inside are walked by the generic converter, passed in
as ``write_schema``/``read_schema`` (:mod:`.protobuf` registers these functions under the
messages' names).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

PACKAGE = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1"
JSON_VALUE = f"{PACKAGE}.JSON"
OR_ARRAY = f"{PACKAGE}.JSONSchemaPropsOrArray"
OR_BOOL = f"{PACKAGE}.JSONSchemaPropsOrBool"
OR_STRING_ARRAY = f"{PACKAGE}.JSONSchemaPropsOrStringArray"

SchemaWriter = Callable[[Any, Any], None]  # sets a JSONSchemaProps message from its JSON
SchemaReader = Callable[[Any], Any]  # a JSONSchemaProps message's JSON


def write_json(target: Any, value: Any) -> None:
    target.SetInParent()
    if value is not None:
        target.raw = json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def read_json(source: Any) -> Any:
    if not source.raw:
        return None
    return json.loads(source.raw)


def write_or_array(target: Any, value: Any, write_schema: SchemaWriter) -> None:
    target.SetInParent()
    if isinstance(value, dict):
        write_schema(target.schema, value)
    elif isinstance(value, list):
        for item in value:
            write_schema(target.jSONSchemas.add(), item)


def read_or_array(source: Any, read_schema: SchemaReader) -> Any:
    if len(source.jSONSchemas):
        return [read_schema(item) for item in source.jSONSchemas]
    if source.HasField("schema"):
        return read_schema(source.schema)
    return None


def write_or_bool(target: Any, value: Any, write_schema: SchemaWriter) -> None:
    if isinstance(value, bool):
        target.allows = value
    elif isinstance(value, dict):
        target.allows = True
        write_schema(target.schema, value)
    else:
        raise ValueError("boolean or JSON schema expected")


def read_or_bool(source: Any, read_schema: SchemaReader) -> Any:
    if source.HasField("schema"):
        return read_schema(source.schema)
    return bool(source.allows)


def write_or_string_array(target: Any, value: Any, write_schema: SchemaWriter) -> None:
    target.SetInParent()
    if isinstance(value, dict):
        write_schema(target.schema, value)
    elif isinstance(value, list):
        for item in value:
            if not isinstance(item, str):
                raise ValueError(f"expected a string, not {item!r}")
            target.property.append(item)


def read_or_string_array(source: Any, read_schema: SchemaReader) -> Any:
    if len(source.property):
        return list(source.property)
    if source.HasField("schema"):
        return read_schema(source.schema)
    return None
