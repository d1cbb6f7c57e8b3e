"""A definition's versions as kube-apiserver shows them in an error's value: the internal
(hub) Go structs apiextensions validates, written by Go's ``encoding/json`` — field names as
Go spells them (no JSON tags on internal types), every field present (``null`` for an unset
pointer, slice or map), map keys sorted, numbers of free-form JSON as float64, ``<``, ``>``
and ``&`` escaped. What every version carries alike has moved to the spec in that form, so
it is ``null`` in each version.
"""

from __future__ import annotations

import json
from typing import Any

_SCHEMA_FIELDS: tuple[tuple[str, str, str], ...] = (
    # (Go field, v1 JSON name, kind of value)
    ("ID", "id", "string"), ("Schema", "$schema", "string"), ("Ref", "$ref", "pointer"),
    ("Description", "description", "string"), ("Type", "type", "string"),
    ("Nullable", "nullable", "bool"), ("Format", "format", "string"),
    ("Title", "title", "string"), ("Default", "default", "json"),
    ("Maximum", "maximum", "number"), ("ExclusiveMaximum", "exclusiveMaximum", "bool"),
    ("Minimum", "minimum", "number"), ("ExclusiveMinimum", "exclusiveMinimum", "bool"),
    ("MaxLength", "maxLength", "pointer"), ("MinLength", "minLength", "pointer"),
    ("Pattern", "pattern", "string"), ("MaxItems", "maxItems", "pointer"),
    ("MinItems", "minItems", "pointer"), ("UniqueItems", "uniqueItems", "bool"),
    ("MultipleOf", "multipleOf", "number"), ("Enum", "enum", "json"),
    ("MaxProperties", "maxProperties", "pointer"),
    ("MinProperties", "minProperties", "pointer"), ("Required", "required", "pointer"),
    ("Items", "items", "items"), ("AllOf", "allOf", "schemas"), ("OneOf", "oneOf", "schemas"),
    ("AnyOf", "anyOf", "schemas"), ("Not", "not", "schema"),
    ("Properties", "properties", "schema map"),
    ("AdditionalProperties", "additionalProperties", "schema or bool"),
    ("PatternProperties", "patternProperties", "schema map"),
    ("Dependencies", "dependencies", "dependencies"),
    ("AdditionalItems", "additionalItems", "schema or bool"),
    ("Definitions", "definitions", "schema map"), ("ExternalDocs", "externalDocs", "docs"),
    ("Example", "example", "json"),
    ("XPreserveUnknownFields", "x-kubernetes-preserve-unknown-fields", "pointer"),
    ("XEmbeddedResource", "x-kubernetes-embedded-resource", "bool"),
    ("XIntOrString", "x-kubernetes-int-or-string", "bool"),
    ("XListMapKeys", "x-kubernetes-list-map-keys", "pointer"),
    ("XListType", "x-kubernetes-list-type", "pointer"),
    ("XMapType", "x-kubernetes-map-type", "pointer"),
    ("XValidations", "x-kubernetes-validations", "rules"),
)


class _Float(float):
    """A float64 (written as Go writes it: an integral value without a fraction)."""


def _dump(value: Any) -> str:
    """``value`` as Go's encoding/json writes it; dicts in their order (structs in field
    order, maps already sorted)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _Float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(float(value))
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                              ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
            text = text.replace(char, escaped)
        return text
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dump(str(k))}:{_dump(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _free_form(value: Any) -> Any:
    """Free-form JSON as Go's interface{} holds it: every number a float64."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return _Float(value)
    if isinstance(value, list):
        return [_free_form(v) for v in value]
    if isinstance(value, dict):
        return {k: _free_form(v) for k, v in sorted(value.items())}
    return value


def _schema(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return None
    out: dict[str, Any] = {}
    for go, name, kind in _SCHEMA_FIELDS:
        value = schema.get(name)
        if kind == "string":
            out[go] = value if isinstance(value, str) else ""
        elif kind == "bool":
            out[go] = bool(value)
        elif kind == "number":
            out[go] = None if value is None else _Float(value)
        elif kind == "json":
            out[go] = None if name not in schema else _free_form(value)
        elif kind == "schema":
            out[go] = _schema(value)
        elif kind == "schemas":
            out[go] = [_schema(v) for v in value] if isinstance(value, list) and value \
                else None
        elif kind == "schema map":
            out[go] = {k: _schema(v) for k, v in sorted(value.items())} \
                if isinstance(value, dict) and value else None
        elif kind == "items":
            out[go] = None if value is None else {
                "Schema": _schema(value) if isinstance(value, dict) else None,
                "JSONSchemas": [_schema(v) for v in value] if isinstance(value, list)
                and value else None}
        elif kind == "schema or bool":
            out[go] = None if value is None else {
                "Allows": value is not False,
                "Schema": _schema(value) if isinstance(value, dict) else None}
        elif kind == "dependencies":
            out[go] = {k: {"Schema": _schema(v) if isinstance(v, dict) else None,
                           "Property": v if isinstance(v, list) else None}
                       for k, v in sorted(value.items())} if isinstance(value, dict) else None
        elif kind == "docs":
            out[go] = None if not isinstance(value, dict) else {
                "Description": value.get("description", ""), "URL": value.get("url", "")}
        elif kind == "rules":
            out[go] = [_rule(r) for r in value] if isinstance(value, list) and value \
                else None
        else:  # a pointer or a slice: as it is, null when absent
            out[go] = value
    return out


def _rule(rule: Any) -> Any:
    rule = rule if isinstance(rule, dict) else {}
    return {"Rule": rule.get("rule", ""), "Message": rule.get("message", ""),
            "MessageExpression": rule.get("messageExpression", ""),
            "Reason": rule.get("reason"), "FieldPath": rule.get("fieldPath", ""),
            "OptionalOldSelf": rule.get("optionalOldSelf")}


def _subresources(value: Any) -> Any:
    if not isinstance(value, dict):
        return None
    scale = value.get("scale")
    return {"Status": {} if "status" in value else None,
            "Scale": None if not isinstance(scale, dict) else {
                "SpecReplicasPath": scale.get("specReplicasPath", ""),
                "StatusReplicasPath": scale.get("statusReplicasPath", ""),
                "LabelSelectorPath": scale.get("labelSelectorPath")}}


def _columns(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        return None
    return [{"Name": c.get("name", ""), "Type": c.get("type", ""),
             "Format": c.get("format", ""), "Description": c.get("description", ""),
             "Priority": c.get("priority", 0), "JSONPath": c.get("jsonPath", "")}
            for c in value if isinstance(c, dict)]


def _shared(versions: list[Any], key: str) -> bool:
    values = [v.get(key) if isinstance(v, dict) else None for v in versions]
    return all(v == values[0] for v in values)


def internal_schema(schema: Any) -> str:
    """A JSONSchemaProps as kube-apiserver writes it in an ``Invalid value``."""
    return _dump(_schema(schema))


def internal_versions(versions: list[Any]) -> str:
    """``spec.versions`` as kube-apiserver writes it in an ``Invalid value``."""
    moved = {key: _shared(versions, key) for key in
             ("schema", "subresources", "additionalPrinterColumns", "selectableFields")}
    out = []
    for v in versions:
        v = v if isinstance(v, dict) else {}
        schema = (v.get("schema") or {}).get("openAPIV3Schema") \
            if isinstance(v.get("schema"), dict) else None
        fields = v.get("selectableFields")
        out.append({
            "Name": v.get("name", ""), "Served": bool(v.get("served")),
            "Storage": bool(v.get("storage")), "Deprecated": bool(v.get("deprecated")),
            "DeprecationWarning": v.get("deprecationWarning"),
            "Schema": None if moved["schema"] or v.get("schema") is None
            else {"OpenAPIV3Schema": _schema(schema)},
            "Subresources": None if moved["subresources"]
            else _subresources(v.get("subresources")),
            "AdditionalPrinterColumns": None if moved["additionalPrinterColumns"]
            else _columns(v.get("additionalPrinterColumns")),
            "SelectableFields": None if moved["selectableFields"] or not fields
            else [{"JSONPath": f.get("jsonPath", "")} for f in fields if isinstance(f, dict)],
        })
    return _dump(out)
