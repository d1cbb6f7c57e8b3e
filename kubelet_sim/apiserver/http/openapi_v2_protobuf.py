"""The Swagger 2.0 document in protobuf, as client-go asks for ``/openapi/v2``
(``application/com.github.proto-openapi.spec.v2@v1.0+protobuf``: gnostic's
``openapi.v2.Document``). client-go sends only that Accept and does not fall back to JSON,
so ``kubectl explain --output=plaintext-openapiv2`` and every client validating against
v2 need it.

Written straight to the wire from the JSON document: only the parts of the message set
the document uses (the message and field numbers are gnostic's ``OpenAPIv2.proto``).
Extensions and defaults travel as gnostic's ``Any`` with their value as YAML text (JSON
is YAML), which is how kube-openapi's readers decode them.
"""

from __future__ import annotations

import json
from typing import Any

MEDIA_TYPE = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # as asked for
# as answered: kube-openapi writes the version with a dot (an "@" does not parse as a media
# type in Go, so client-go would refuse the answer)
CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _message(number: int, body: bytes) -> bytes:
    """A length-delimited field (a message, a string); written even when empty."""
    return _varint(number << 3 | 2) + _varint(len(body)) + body


def _string(number: int, text: str) -> bytes:
    return _message(number, text.encode()) if text else b""


def _strings(number: int, texts: list[str]) -> bytes:
    return b"".join(_message(number, t.encode()) for t in texts)


def _bool(number: int, value: bool) -> bytes:
    return _varint(number << 3) + b"\x01" if value else b""


def _any(value: Any) -> bytes:
    """gnostic's Any: ``yaml`` (2) holds the value's text."""
    return _string(2, json.dumps(value))


def _extensions(number: int, node: dict[str, Any]) -> bytes:
    """Every ``x-`` key as a NamedAny (name 1, value 2)."""
    return b"".join(_message(number, _string(1, k) + _message(2, _any(v)))
                    for k, v in node.items() if k.startswith("x-"))


def schema(node: dict[str, Any]) -> bytes:
    """openapi.v2.Schema."""
    out = _string(1, node.get("$ref", "")) + _string(2, node.get("format", ""))
    out += _string(4, node.get("description", ""))
    if "default" in node:
        out += _message(5, _any(node["default"]))
    out += _bool(16, bool(node.get("uniqueItems")))
    out += _strings(19, node.get("required", []))
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out += _message(21, _message(1, schema(extra)))
    elif isinstance(extra, bool):
        out += _message(21, _varint(2 << 3) + (b"\x01" if extra else b"\x00"))
    if "type" in node:
        kinds = node["type"] if isinstance(node["type"], list) else [node["type"]]
        out += _message(22, _strings(1, kinds))
    if "items" in node:
        out += _message(23, _message(1, schema(node["items"])))
    for part in node.get("allOf", []):
        out += _message(24, schema(part))
    if "properties" in node:
        out += _message(25, b"".join(_message(1, _string(1, name) + _message(2, schema(s)))
                                     for name, s in node["properties"].items()))
    return out + _extensions(31, node)


def _parameter(node: dict[str, Any]) -> bytes:
    """openapi.v2.ParametersItem → Parameter: a body or a query/path parameter."""
    if node["in"] == "body":
        body = (_string(1, node.get("description", "")) + _string(2, node["name"])
                + _string(3, "body") + _bool(4, bool(node.get("required")))
                + _message(5, schema(node.get("schema", {}))))
        return _message(1, _message(1, body))
    common = (_bool(1, bool(node.get("required"))) + _string(2, node["in"])
              + _string(3, node.get("description", "")) + _string(4, node["name"]))
    if node["in"] == "path":  # PathParameterSubSchema: type 5, uniqueItems 19
        sub = _message(4, common + _string(5, node.get("type", ""))
                       + _bool(19, bool(node.get("uniqueItems"))))
    else:  # QueryParameterSubSchema: type 6, uniqueItems 20
        sub = _message(3, common + _string(6, node.get("type", ""))
                       + _bool(20, bool(node.get("uniqueItems"))))
    return _message(1, _message(2, sub))


def _operation(node: dict[str, Any]) -> bytes:
    out = _strings(1, node.get("tags", [])) + _string(3, node.get("description", ""))
    out += _string(5, node.get("operationId", ""))
    out += _strings(6, node.get("produces", [])) + _strings(7, node.get("consumes", []))
    out += b"".join(_message(8, _parameter(p)) for p in node.get("parameters", []))
    codes = b""
    for code, response in node.get("responses", {}).items():
        value = _string(1, response.get("description", ""))
        if "schema" in response:
            value += _message(2, _message(1, schema(response["schema"])))
        codes += _message(1, _string(1, code) + _message(2, _message(1, value)))
    out += _message(9, codes)
    out += _strings(10, node.get("schemes", []))
    return out + _extensions(13, node)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def _path_item(node: dict[str, Any]) -> bytes:
    out = b"".join(_message(number, _operation(node[method]))
                   for method, number in _METHODS.items() if method in node)
    out += b"".join(_message(9, _parameter(p)) for p in node.get("parameters", []))
    return out + _extensions(10, node)


def document(doc: dict[str, Any]) -> bytes:
    """openapi.v2.Document of a Swagger 2.0 JSON document."""
    info = doc.get("info", {})
    out = _string(1, doc["swagger"])
    out += _message(2, _string(1, info.get("title", "")) + _string(2, info.get("version", "")))
    out += _message(8, b"".join(_message(2, _string(1, p) + _message(2, _path_item(item)))
                                for p, item in doc.get("paths", {}).items()))
    out += _message(9, b"".join(_message(1, _string(1, name) + _message(2, schema(s)))
                                for name, s in doc.get("definitions", {}).items()))
    for requirement in doc.get("security", []):
        out += _message(12, b"".join(
            _message(1, _string(1, name) + _message(2, _strings(1, scopes)))
            for name, scopes in requirement.items()))
    definitions = b""
    for name, item in doc.get("securityDefinitions", {}).items():
        if item.get("type") == "apiKey":  # SecurityDefinitionsItem.api_key_security (2)
            key = (_string(1, "apiKey") + _string(2, item.get("name", ""))
                   + _string(3, item.get("in", "")) + _string(4, item.get("description", "")))
            definitions += _message(1, _string(1, name) + _message(2, _message(2, key)))
    if definitions:
        out += _message(13, definitions)
    return out + _extensions(16, doc)

