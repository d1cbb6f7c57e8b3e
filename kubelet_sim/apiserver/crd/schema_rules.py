"""The rules an ``openAPIV3Schema`` of an ``apiextensions.k8s.io/v1`` definition must
follow before anything is served from it, in the three passes apiextensions-apiserver
makes, with its field paths and wording:

* the OpenAPI pass (every node, value validations included): JSON-Schema features
  Kubernetes does not support (``id``, ``$schema``, ``$ref``, ``definitions``,
  ``dependencies``, ``patternProperties``, ``additionalItems``, ``items`` as an array,
  ``type: null``, ``uniqueItems``), defaults where none may be (top-level metadata),
  ``properties`` beside ``additionalProperties``, the list and map extensions;
* the structural pass (the schema without its ``anyOf``/``allOf``/``oneOf``/``not``): a
  type at every level unless int-or-string or preserving unknown fields, an object root
  without ``additionalProperties``, metadata restricted to name and generateName,
  embedded resources, value validations that only restrict what the structure declares;
  its problems come sorted by their text, as apiextensions sorts them;
* the defaults: each must survive pruning unchanged and validate against its own node.

When the schema cannot be read as structural at all (an unsupported feature anywhere),
the structural and default passes are skipped, as they are upstream. CEL rules are
checked for their form only (a rule present, messages on one line), never compiled.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

from kubelet_sim.api.errors import FieldError
from kubelet_sim.apiserver.crd.internal_form import internal_schema
from kubelet_sim.apiserver.crd.schema import (
    EMBEDDED,
    INT_OR_STRING,
    PRESERVE,
    Schema,
    prune,
    shown_value,
    validate,
)

_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_META = ("metadata", "kind", "apiVersion")
_JUNCTORS = ("anyOf", "allOf", "oneOf")
# the JSON names of the fields a root schema may hold when the status subresource is on,
# in the order of the Go struct the check walks
_ROOT_FIELDS_ORDER = (
    "id", "$schema", "$ref", "description", "type", "format", "title", "default", "maximum",
    "exclusiveMaximum", "minimum", "exclusiveMinimum", "maxLength", "minLength", "pattern",
    "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
    "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties",
    "additionalProperties", "patternProperties", "dependencies", "additionalItems",
    "definitions", "externalDocs", "example", "nullable", PRESERVE, EMBEDDED, INT_OR_STRING,
    "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
    "x-kubernetes-validations")
_ALLOWED_AT_STATUS_ROOT = (
    "description", "type", "format", "title", "maximum", "exclusiveMaximum", "minimum",
    "exclusiveMinimum", "maxLength", "minLength", "pattern", "maxItems", "minItems",
    "uniqueItems", "multipleOf", "required", "items", "properties", "externalDocs", "example",
    PRESERVE, "x-kubernetes-validations")
_ALLOWED_AT_STATUS_ROOT_GO = (
    "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum "
    "MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items "
    "Properties ExternalDocs Example XPreserveUnknownFields XValidations]")
# the features a structural schema cannot hold, in the order the conversion refuses them
_UNREADABLE = (("id", "id"), ("$schema", "schema"), ("$ref", "$ref"),
               ("patternProperties", "patternProperties"), ("dependencies", "dependencies"),
               ("additionalItems", "additionalItems"), ("definitions", "definitions"))
_INT_OR_STRING_ANY_OF = [{"type": "integer"}, {"type": "string"}]
_VALIDATION_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid",
                       "FieldValueRequired")


def _forbidden(path: str, text: str) -> FieldError:
    return FieldError("FieldValueForbidden", path, f"Forbidden: {text}")


def _required(path: str, text: str) -> FieldError:
    return FieldError("FieldValueRequired", path, f"Required value: {text}")


def _invalid(path: str, value: Any, text: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, f"Invalid value: {shown_value(value)}: {text}")


def _not_supported(path: str, value: Any, supported: tuple[str, ...]) -> FieldError:
    listed = ", ".join(f'"{s}"' for s in supported)
    return FieldError("FieldValueNotSupported", path,
                      f"Unsupported value: {shown_value(value)}: supported values: {listed}")


def _props(schema: Schema) -> dict[str, Any]:
    found = schema.get("properties")
    return found if isinstance(found, dict) else {}


def _dict(value: Any) -> Schema | None:
    return value if isinstance(value, dict) else None


# -- the whole check ------------------------------------------------------------------------

def schema_errors(schema: Any, path: str, status_enabled: bool) -> list[FieldError]:
    """Every problem of the ``openAPIV3Schema`` at ``path`` (``….openAPIV3Schema``), in
    apiextensions' order: root checks, structural ones, defaults, then the OpenAPI pass."""
    if not isinstance(schema, dict):
        return [_invalid(path, schema, "must be an object")]
    errors: list[FieldError] = []
    if status_enabled:
        errors += _status_root_errors(schema, path)
    if schema.get("nullable"):
        errors.append(_forbidden(f"{path}.nullable", "nullable cannot be true at the root"))
    unreadable = _unreadable(schema)
    if unreadable is None:
        structural = sorted(_invariants(schema, "root", path) + _completeness(schema, path),
                            key=str)
        errors += structural or _default_errors(schema, path, embedded_root=True)
    errors += _openapi_errors(schema, path, _Context(), True)
    if not errors and unreadable is not None:
        errors.append(_invalid(path, "", unreadable))
    return errors


def _status_root_errors(schema: Schema, path: str) -> list[FieldError]:
    for name in _ROOT_FIELDS_ORDER:
        if name not in schema or schema[name] in (None, False, "", [], {}):
            continue
        if name == "type":
            if schema["type"] != "object":
                return [_invalid(f"{path}.type", schema["type"], 'only "object" is allowed as '
                                 "the type at the root of the schema if the status "
                                 "subresource is enabled")]
            continue
        if name not in _ALLOWED_AT_STATUS_ROOT:
            return [FieldError("FieldValueInvalid", path, f"Invalid value: "
                               f"{internal_schema(schema)}: only {_ALLOWED_AT_STATUS_ROOT_GO} "
                               "fields are allowed at the root of the schema if the status "
                               "subresource is enabled")]
    return []


def _children(schema: Schema) -> Iterator[Any]:
    yield from _props(schema).values()
    for key in ("additionalProperties", "not"):
        yield schema.get(key)
    for key in (*_JUNCTORS, "items"):
        value = schema.get(key)
        if isinstance(value, list):
            yield from value
        else:
            yield value
    for key in ("definitions", "dependencies"):
        value = schema.get(key)
        if isinstance(value, dict):
            yield from value.values()


def _unreadable(schema: Any) -> str | None:
    """Why the schema cannot be turned into a structural one (None: it can)."""
    if not isinstance(schema, dict):
        return None
    for key, name in _UNREADABLE:
        if schema.get(key) not in (None, "", {}):
            return f"OpenAPIV3Schema '{name}' is not supported"
    if isinstance(schema.get("items"), list) and schema["items"]:
        return "OpenAPIV3Schema 'items' must be a schema, but is an array"
    for child in _children(schema):
        found = _unreadable(child)
        if found:
            return found
    return None


# -- the OpenAPI pass -----------------------------------------------------------------------

@dataclass(frozen=True)
class _Context:
    defaults_forbidden: str | None = None  # why no default may be set here (None: allowed)
    inside_meta: bool = False


def _node_errors(schema: Schema, path: str, ctx: _Context) -> list[FieldError]:
    errors: list[FieldError] = []
    typ = schema.get("type")
    if typ and typ not in _TYPES:
        errors.append(_not_supported(f"{path}.type", typ, _TYPES))
    if "default" in schema and ctx.defaults_forbidden is not None:
        errors.append(_forbidden(f"{path}.default",
                                 f"must not be set {ctx.defaults_forbidden}".rstrip()))
    if schema.get("id"):
        errors.append(_forbidden(f"{path}.id", "id is not supported"))
    if schema.get("additionalItems") is not None:
        errors.append(_forbidden(f"{path}.additionalItems", "additionalItems is not supported"))
    if schema.get("patternProperties"):
        errors.append(_forbidden(f"{path}.patternProperties",
                                 "patternProperties is not supported"))
    if schema.get("definitions"):
        errors.append(_forbidden(f"{path}.definitions", "definitions is not supported"))
    if schema.get("dependencies") is not None:
        errors.append(_forbidden(f"{path}.dependencies", "dependencies is not supported"))
    if schema.get("$ref"):
        errors.append(_forbidden(f"{path}.$ref", "$ref is not supported"))
    if typ == "null":
        errors.append(_forbidden(f"{path}.type",
                                 "type cannot be set to null, use nullable as an alternative"))
    if isinstance(schema.get("items"), list) and schema["items"]:
        errors.append(_forbidden(f"{path}.items",
                                 "items must be a schema object and not an array"))
    if ctx.inside_meta and schema.get(EMBEDDED):
        errors.append(_forbidden(f"{path}.{EMBEDDED}", "must not be used inside of resource "
                                 "meta"))
    return errors


def _openapi_errors(schema: Any, path: str, ctx: _Context, root: bool) -> list[FieldError]:
    if not isinstance(schema, dict):
        return []
    errors = _node_errors(schema, path, ctx)
    if schema.get("uniqueItems"):
        errors.append(_forbidden(f"{path}.uniqueItems", "uniqueItems cannot be set to true "
                                 "since the runtime complexity becomes quadratic"))
    extra = schema.get("additionalProperties")
    if extra is not None:
        if _props(schema) and (extra is False or isinstance(extra, dict)):
            errors.append(_forbidden(f"{path}.additionalProperties",
                                     "additionalProperties and properties are mutual "
                                     "exclusive"))
        sub = ctx
        if ctx.inside_meta:
            sub = replace(ctx, defaults_forbidden="inside additionalProperties applying to "
                          "object metadata")
        errors += _openapi_errors(extra, f"{path}.additionalProperties", sub, False)
    for name, sub_schema in _props(schema).items():
        sub = ctx
        if (root or schema.get(EMBEDDED)) and name in _META:
            sub = replace(sub, inside_meta=True)
            if root:
                sub = replace(sub, defaults_forbidden=f"in top-level {name}")
        errors += _openapi_errors(sub_schema, f"{path}.properties[{name}]", sub, False)
    errors += _openapi_errors(schema.get("not"), f"{path}.not", ctx, False)
    for key in ("allOf", "oneOf", "anyOf"):
        for i, sub_schema in enumerate(schema.get(key) or []):
            errors += _openapi_errors(sub_schema, f"{path}.{key}[{i}]", ctx, False)
    for name, sub_schema in (_dict(schema.get("definitions")) or {}).items():
        errors += _openapi_errors(sub_schema, f"{path}.definitions[{name}]", ctx, False)
    items = schema.get("items")
    if isinstance(items, dict):
        errors += _openapi_errors(items, f"{path}.items", ctx, False)
    elif isinstance(items, list):
        for i, sub_schema in enumerate(items):
            errors += _openapi_errors(sub_schema, f"{path}.items[{i}]", ctx, False)
    for name, sub_schema in (_dict(schema.get("dependencies")) or {}).items():
        errors += _openapi_errors(sub_schema, f"{path}.dependencies[{name}]", ctx, False)
    if schema.get(PRESERVE) is False:
        errors.append(_invalid(f"{path}.{PRESERVE}", False, "must be true or undefined"))
    errors += _list_and_map_errors(schema, path)
    errors += _rule_errors(schema, path)
    return errors


def _must_be(schema: Schema, path: str, wanted: str, because: str) -> list[FieldError]:
    typ = schema.get("type")
    if typ == wanted:
        return []
    text = f"must be {wanted} if {because} is specified"
    return [_required(f"{path}.type", text) if not typ else _invalid(f"{path}.type", typ, text)]


def _list_and_map_errors(schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    map_type = schema.get("x-kubernetes-map-type")
    list_type = schema.get("x-kubernetes-list-type")
    keys = schema.get("x-kubernetes-list-map-keys") or []
    items = schema.get("items")
    if map_type is not None:
        errors += _must_be(schema, path, "object", "x-kubernetes-map-type")
        if map_type not in ("atomic", "granular"):
            errors.append(_not_supported(f"{path}.x-kubernetes-map-type", map_type,
                                         ("atomic", "granular")))
    if list_type is not None and schema.get("type") != "array":
        errors += _must_be(schema, path, "array", "x-kubernetes-list-type")
    elif list_type == "set" and isinstance(items, dict):
        if items.get("type") == "array" and \
                items.get("x-kubernetes-list-type") not in (None, "atomic"):
            errors.append(_invalid(f"{path}.items.x-kubernetes-list-type",
                                   items["x-kubernetes-list-type"], "must be atomic as item "
                                   "of a list with x-kubernetes-list-type=set"))
        elif items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
            errors.append(_invalid(f"{path}.items.x-kubernetes-map-type",
                                   items.get("x-kubernetes-list-type"), "must be atomic as item "
                                   "of a list with x-kubernetes-list-type=set"))
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        errors.append(_not_supported(f"{path}.x-kubernetes-list-type", list_type,
                                     ("atomic", "set", "map")))
    if keys:
        if list_type is None:
            errors.append(_required(f"{path}.x-kubernetes-list-type",
                                    "must be map if x-kubernetes-list-map-keys is non-empty"))
        elif list_type != "map":
            errors.append(_invalid(f"{path}.x-kubernetes-list-type", list_type,
                                   "must be map if x-kubernetes-list-map-keys is non-empty"))
    if list_type == "map":
        errors += _map_list_errors(schema, path, keys, items)
    if list_type in ("set", "map") and isinstance(items, dict):
        errors += _keyed_list_errors(items, path, list_type, keys)
    return errors


def _map_list_errors(schema: Schema, path: str, keys: list[Any],
                     items: Any) -> list[FieldError]:
    errors: list[FieldError] = []
    if not keys:
        errors.append(_required(f"{path}.x-kubernetes-list-map-keys",
                                "must not be empty if x-kubernetes-list-type is map"))
    if items is None:
        errors.append(_required(f"{path}.items",
                                "must have a schema if x-kubernetes-list-type is map"))
    elif not isinstance(items, dict):
        errors.append(_invalid(f"{path}.items", items, "must only have a single schema if "
                               "x-kubernetes-list-type is map"))
    elif items.get("type") != "object":
        errors.append(_invalid(f"{path}.items.type", items.get("type", ""), "must be object "
                               "if parent array's x-kubernetes-list-type is map"))
    else:
        seen: set[str] = set()
        for key in keys:
            prop = _props(items).get(key)
            if prop is None:
                errors.append(_invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                       "entries must all be names of item properties"))
            elif isinstance(prop, dict) and prop.get("type") in ("array", "object"):
                errors.append(_invalid(f"{path}.items.properties[{key}].type", "object",
                                       "must be a scalar type if parent array's "
                                       "x-kubernetes-list-type is map"))
            if key in seen:
                errors.append(_invalid(f"{path}.x-kubernetes-list-map-keys", keys,
                                       "must not contain duplicate entries"))
            seen.add(str(key))
    return errors


def _keyed_list_errors(items: Schema, path: str, list_type: str,
                       keys: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if items.get("nullable"):
        errors.append(_forbidden(f"{path}.items.nullable",
                                 f"cannot be nullable when x-kubernetes-list-type is {list_type}"))
    if list_type != "map":
        return errors
    required = set(items.get("required") or [])
    for key in keys:
        prop = _props(items).get(key)
        if not isinstance(prop, dict):
            continue
        at = f"{path}.items.properties[{key}]"
        if key not in required and "default" not in prop:
            errors.append(_required(f"{at}.default", "this property is in "
                                    "x-kubernetes-list-map-keys, so it must have a default or "
                                    "be a required property"))
        if prop.get("nullable"):
            errors.append(_forbidden(f"{at}.nullable", "this property is in "
                                     "x-kubernetes-list-map-keys, so it cannot be nullable"))
    return errors


def _rule_errors(schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    for i, rule in enumerate(schema.get("x-kubernetes-validations") or []):
        if not isinstance(rule, dict):
            continue
        at = f"{path}.x-kubernetes-validations[{i}]"
        text = str(rule.get("rule") or "").strip()
        message = str(rule.get("message") or "")
        if not text:
            errors.append(_required(f"{at}.rule", "rule is not specified"))
        elif message and not message.strip():
            errors.append(_invalid(f"{at}.message", message, "must be non-empty if specified"))
        elif "\n" in message.strip() or "\r" in message.strip():
            errors.append(_invalid(f"{at}.message", message, "must not contain line breaks"))
        elif ("\n" in text or "\r" in text) and not message.strip():
            errors.append(_required(f"{at}.message",
                                    "message must be specified if rule contains line breaks"))
        expression = rule.get("messageExpression")
        if expression and not str(expression).strip():
            errors.append(_required(f"{at}.messageExpression",
                                    "messageExpression must be non-empty if specified"))
        reason = rule.get("reason")
        if reason is not None and reason not in _VALIDATION_REASONS:
            errors.append(_not_supported(f"{at}.reason", reason, _VALIDATION_REASONS))
    return errors


# -- the structural pass --------------------------------------------------------------------

def _is_int_or_string_any_of(schema: Schema) -> bool:
    return schema.get("anyOf") == _INT_OR_STRING_ANY_OF


def _is_int_or_string_all_of(schema: Schema) -> bool:
    all_of = schema.get("allOf")
    return isinstance(all_of, list) and bool(all_of) and isinstance(all_of[0], dict) and \
        _is_int_or_string_any_of(all_of[0])


def _invariants(schema: Any, level: str, path: str) -> list[FieldError]:
    """The structural invariants of one node of the structure (and of its children)."""
    if not isinstance(schema, dict):
        return []
    errors: list[FieldError] = []
    typ = schema.get("type") or ""
    items = schema.get("items")
    if typ == "array" and items is None:
        errors.append(_required(f"{path}.items", "must be specified"))
    errors += _invariants(items, "item", f"{path}.items")
    for name, sub in _props(schema).items():
        errors += _invariants(sub, "field", f"{path}.properties[{name}]")
    extra = schema.get("additionalProperties")
    if extra is not None:
        if level == "root":
            errors.append(_forbidden(f"{path}.additionalProperties", "must not be used at the "
                                     "root"))
        errors += _invariants(extra, "field", f"{path}.additionalProperties")
    if schema.get(INT_OR_STRING) and schema.get(PRESERVE):
        errors.append(_invalid(f"{path}.{PRESERVE}", True,
                               "must be false if x-kubernetes-int-or-string is true"))
    if schema.get(INT_OR_STRING) and schema.get(EMBEDDED):
        errors.append(_invalid(f"{path}.{EMBEDDED}", True,
                               "must be false if x-kubernetes-int-or-string is true"))
    errors += _value_validation(schema, _is_int_or_string_any_of(schema),
                                _is_int_or_string_all_of(schema), path)
    embedded = bool(schema.get(EMBEDDED))
    if embedded and typ != "object":
        text = "must be object if x-kubernetes-embedded-resource is true"
        errors.append(_invalid(f"{path}.type", typ, text) if typ
                      else _required(f"{path}.type", text))
    elif not typ and not schema.get(INT_OR_STRING) and not schema.get(PRESERVE):
        where = {"root": "at the root", "item": "for specified array items",
                 "field": "for specified object fields"}[level]
        errors.append(_required(f"{path}.type", f"must not be empty {where}"))
    if embedded and extra is not None:
        errors.append(_forbidden(f"{path}.additionalProperties",
                                 "must not be used if x-kubernetes-embedded-resource is set"))
    if level == "root" and typ and typ != "object":
        errors.append(_invalid(f"{path}.type", typ, "must be object at the root"))
    check_meta = level == "root" or embedded
    for name in ("kind", "apiVersion"):
        sub = _props(schema).get(name)
        if check_meta and isinstance(sub, dict) and sub.get("type") != "string":
            errors.append(_invalid(f"{path}.properties[{name}].type", sub.get("type", ""),
                                   "must be string"))
    meta = _props(schema).get("metadata")
    if isinstance(meta, dict):
        errors += _metadata_errors(meta, check_meta, level == "root",
                                   f"{path}.properties[metadata]")
    if embedded and not schema.get(PRESERVE) and not _props(schema):
        errors.append(_required(f"{path}.properties", "must not be empty if "
                                "x-kubernetes-embedded-resource is true without "
                                "x-kubernetes-preserve-unknown-fields"))
    return errors


def _metadata_errors(meta: Schema, check_meta: bool, root: bool,
                     path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if check_meta and meta.get("type") != "object":
        errors.append(_invalid(f"{path}.type", meta.get("type", ""), "must be object"))
    if root:
        rest = {k: v for k, v in meta.items() if k not in ("type", "default")
                and v not in (None, False, "", [], {})}
        if set(_props(meta)) <= {"name", "generateName"}:
            rest.pop("properties", None)
        if rest:
            errors.append(_forbidden(path, "must not specify anything other than name and "
                                     "generateName, but metadata is implicitly specified"))
    return errors


def _value_validation(schema: Schema, skip_any_of: bool, skip_first_all_of_any_of: bool,
                      path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not skip_any_of:
        for i, sub in enumerate(schema.get("anyOf") or []):
            errors += _nested(sub, False, f"{path}.anyOf[{i}]")
    for i, sub in enumerate(schema.get("allOf") or []):
        errors += _nested(sub, skip_first_all_of_any_of and i == 0, f"{path}.allOf[{i}]")
    for i, sub in enumerate(schema.get("oneOf") or []):
        errors += _nested(sub, False, f"{path}.oneOf[{i}]")
    errors += _nested(schema.get("not"), False, f"{path}.not")
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            re.compile(pattern)
        except re.error as e:
            errors.append(_invalid(f"{path}.pattern", pattern, "must be a valid regular "
                                   f"expression, but isn't: {e}"))
    return errors


_NESTED_FORBIDDEN = (
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    (PRESERVE, "must be false to be structural"),
    (EMBEDDED, "must be false to be structural"),
    (INT_OR_STRING, "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
)


def _nested(schema: Any, skip_any_of: bool, path: str) -> list[FieldError]:
    """A schema under anyOf/allOf/oneOf/not: it may only restrict values."""
    if not isinstance(schema, dict):
        return []
    errors = _value_validation(schema, skip_any_of, False, path)
    errors += _nested(schema.get("items"), False, f"{path}.items")
    for name, sub in _props(schema).items():
        errors += _nested(sub, False, f"{path}.properties[{name}]")
    for key, text in _NESTED_FORBIDDEN:
        value = schema.get(key)
        if (key == "default" and key in schema) or value not in (None, False, "", [], {}):
            errors.append(_forbidden(f"{path}.{key}", text))
    if "metadata" in _props(schema):
        errors.append(_forbidden(f"{path}.properties[metadata]",
                                 "must not be specified in a nested context"))
    return errors


def _completeness(schema: Schema, path: str) -> list[FieldError]:
    """Every field a root value validation names must be declared by the structure."""
    errors: list[FieldError] = []
    for key, sub in _junctions(schema):
        errors += _complete(sub, schema, path, f"{path}.{key}")
    return errors


def _junctions(schema: Schema) -> Iterator[tuple[str, Any]]:
    if schema.get("not") is not None:
        yield "not", schema["not"]
    for key in ("allOf", "anyOf", "oneOf"):
        for i, sub in enumerate(schema.get(key) or []):
            yield f"{key}[{i}]", sub


def _complete(nested: Any, structure: Any, s_path: str, v_path: str) -> list[FieldError]:
    if not isinstance(nested, dict):
        return []
    if not isinstance(structure, dict):
        return [_required(s_path, f"because it is defined in {v_path}")]
    errors: list[FieldError] = []
    for key, sub in _junctions(nested):
        errors += _complete(sub, structure, s_path, f"{v_path}.{key}")
    if nested.get("items") is not None:
        errors += _complete(nested["items"], structure.get("items"), f"{s_path}.items",
                            f"{v_path}.items")
    for name, sub in _props(nested).items():
        declared = _props(structure).get(name)
        if declared is None:
            errors.append(_required(f"{s_path}.properties[{name}]", "because it is defined in "
                                    f"{v_path}.properties[{name}]"))
        else:
            errors += _complete(sub, declared, f"{s_path}.properties[{name}]",
                                f"{v_path}.properties[{name}]")
    return errors


# -- defaults -------------------------------------------------------------------------------

def _default_errors(schema: Any, path: str, embedded_root: bool = False,
                    inside_meta: bool = False) -> list[FieldError]:
    """Each ``default`` of the structure, pruned and validated against its own node."""
    if not isinstance(schema, dict):
        return []
    errors: list[FieldError] = []
    if "default" in schema and not inside_meta:
        value = schema["default"]
        pruned = copy.deepcopy(value)
        prune(pruned, schema, root=bool(schema.get(EMBEDDED)))
        if pruned != value:
            errors.append(_invalid(f"{path}.default", value, "must not have unknown fields"))
        errors += validate(value, schema, f"{path}.default", root=bool(schema.get(EMBEDDED)))
    errors += _default_errors(schema.get("items"), f"{path}.items")
    root = embedded_root or bool(schema.get(EMBEDDED))
    for name, sub in _props(schema).items():
        errors += _default_errors(sub, f"{path}.properties[{name}]",
                                  inside_meta=root and name in _META)
    errors += _default_errors(schema.get("additionalProperties"),
                              f"{path}.additionalProperties")
    return errors
