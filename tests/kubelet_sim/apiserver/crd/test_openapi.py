"""A definition's schema as the OpenAPI documents publish it: Swagger 2.0's subset, and
its validation keywords on v2's protobuf wire."""

from __future__ import annotations

import struct
from typing import Any

from kubelet_sim.apiserver.crd.openapi import v2_compatible
from kubelet_sim.apiserver.http import openapi_v2_protobuf


def test_v2_drops_the_v3_only_combinators() -> None:
    port = {"x-kubernetes-int-or-string": True,
            "anyOf": [{"type": "integer"}, {"type": "string"}]}
    assert v2_compatible(port) == {"x-kubernetes-int-or-string": True}
    shaped = {"type": "string", "oneOf": [{"pattern": "a"}], "not": {"enum": ["b"]},
              "allOf": [{"maxLength": 3}]}
    assert v2_compatible(shaped) == {"type": "string"}


def test_a_nullable_value_is_untyped_empty_and_not_required_in_v2() -> None:
    schema: dict[str, Any] = {"type": "object", "required": ["a", "b"], "properties": {
        "a": {"type": "object", "nullable": True, "properties": {"x": {"type": "string"}}},
        "b": {"type": "string"}}}
    assert v2_compatible(schema) == {"type": "object", "required": ["b"], "properties": {
        "a": {}, "b": {"type": "string"}}}


def test_a_value_keeping_unknown_fields_loses_its_properties_in_v2() -> None:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
              "properties": {"x": {"type": "string"}}}
    assert v2_compatible(schema) == {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}
    untyped_items = {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                     "items": {"type": "string"}}
    assert v2_compatible(untyped_items) == {"x-kubernetes-preserve-unknown-fields": True}


def test_v2_leaves_the_given_schema_unchanged() -> None:
    schema = {"type": "object", "properties": {"a": {"nullable": True, "type": "string"}}}
    v2_compatible(schema)
    assert schema == {"type": "object", "properties": {"a": {"nullable": True,
                                                              "type": "string"}}}


def test_validation_keywords_travel_in_gnostics_schema_fields() -> None:
    encoded = openapi_v2_protobuf.schema({"type": "integer", "minimum": 2, "maximum": 9.5})
    assert b"\x49" + struct.pack("<d", 2.0) in encoded  # minimum: field 9, 64-bit
    assert b"\x39" + struct.pack("<d", 9.5) in encoded  # maximum: field 7
    encoded = openapi_v2_protobuf.schema({"type": "string", "maxLength": 5, "pattern": "^a"})
    assert b"\x58\x05" in encoded  # max_length: field 11, varint
    assert b"\x6a\x02^a" in encoded  # pattern: field 13
    encoded = openapi_v2_protobuf.schema({"type": "string", "enum": ["red"]})
    assert b"\xa2\x01\x07\x12\x05\"red\"" in encoded  # enum: field 20, Any{yaml: "red"}
    # proto3: a zero bound is not on the wire
    assert openapi_v2_protobuf.schema({"minimum": 0}) == b""
