"""A CustomResourceDefinition's structural ``openAPIV3Schema`` applied to a custom
resource, as apiextensions-apiserver applies it: pruning (fields the schema does not
declare are dropped unless ``x-kubernetes-preserve-unknown-fields``), defaulting
(``default`` of a missing field, or of a null one that is not nullable) and validation
(types, required, enum, pattern, bounds, lengths, item counts, ``nullable``,
``x-kubernetes-int-or-string``, ``x-kubernetes-embedded-resource``,
``x-kubernetes-list-type`` set/map uniqueness, ``format: date-time``).

Schemas are the plain dicts of the CRD (``{"type": "object", "properties": ...}``); paths
are written as Kubernetes writes them: ``spec.items[0].name``. CEL rules
(``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime
from typing import Any

from kubelet_sim.api.errors import FieldError

Schema = dict[str, Any]

# the root fields every object has, whatever its schema says
_ROOT_META = ("apiVersion", "kind", "metadata")
PRESERVE = "x-kubernetes-preserve-unknown-fields"
INT_OR_STRING = "x-kubernetes-int-or-string"
EMBEDDED = "x-kubernetes-embedded-resource"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# -- pruning -------------------------------------------------------------------------------

def prune(doc: Any, schema: Schema, path: str = "", root: bool = True) -> list[str]:
    """Drop from ``doc`` (in place) every field ``schema`` does not declare; the paths of
    the dropped fields, in document order (the ``unknown field`` problems)."""
    dropped: list[str] = []
    if isinstance(doc, dict):
        keep = set(_ROOT_META) if root else set()
        if schema.get(EMBEDDED):
            keep |= set(_ROOT_META)
        properties: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key in list(doc):
            if key in keep and (key == "metadata" or key not in properties):
                continue  # ObjectMeta has its own checks
            if key in properties:
                dropped += prune(doc[key], properties[key], _join(path, key), False)
            elif isinstance(extra, dict):
                dropped += prune(doc[key], extra, _join(path, key), False)
            elif schema.get(PRESERVE) or extra is True or schema.get(INT_OR_STRING):
                continue
            else:
                dropped.append(_join(path, key))
                del doc[key]
    elif isinstance(doc, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(doc):
            dropped += prune(item, schema["items"], f"{path}[{i}]", False)
    return dropped


# -- defaulting ----------------------------------------------------------------------------

def apply_defaults(doc: Any, schema: Schema) -> None:
    """Set the ``default`` of every missing field (and of every null field that is not
    nullable) in ``doc``, in place, top down as apiextensions does."""
    if isinstance(doc, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for key, sub in properties.items():
            if "default" not in sub:
                continue
            if key not in doc or (doc[key] is None and not sub.get("nullable")):
                doc[key] = copy.deepcopy(sub["default"])
        for key, value in doc.items():
            if key in properties:
                apply_defaults(value, properties[key])
            elif isinstance(schema.get("additionalProperties"), dict):
                apply_defaults(value, schema["additionalProperties"])
    elif isinstance(doc, list) and isinstance(schema.get("items"), dict):
        for item in doc:
            apply_defaults(item, schema["items"])


# -- validation ----------------------------------------------------------------------------

def type_name(value: Any) -> str:
    """The JSON type of ``value`` as the validation messages name it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def shown_value(value: Any) -> str:
    """A value in an error message: strings quoted, the rest as JSON."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _fits(value: Any, wanted: str) -> bool:
    actual = type_name(value)
    return actual == wanted or (wanted == "number" and actual == "integer")


def _invalid(path: str, value: Any, text: str) -> FieldError:
    return FieldError("FieldValueInvalid", path, f"Invalid value: {shown_value(value)}: {text}")


def _date_time(text: str) -> bool:
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return False
    return "T" in text.upper()


def validate(doc: Any, schema: Schema, path: str = "", root: bool = True) -> list[FieldError]:
    """The problems of ``doc`` against ``schema``, in document order (empty: valid)."""
    errors: list[FieldError] = []
    if doc is None:
        if schema.get("nullable") or not schema.get("type"):
            return []
        return [_invalid(path, "null", f'{path} in body must be of type {schema["type"]}: '
                         '"null"')]
    if schema.get(INT_OR_STRING):
        if type_name(doc) not in ("integer", "string"):
            return [_invalid(path, type_name(doc), f"{path} in body must be of type "
                             f'integer,string: "{type_name(doc)}"')]
    elif (wanted := schema.get("type")) and not _fits(doc, wanted):
        return [_invalid(path, type_name(doc),
                         f'{path} in body must be of type {wanted}: "{type_name(doc)}"')]
    if "enum" in schema and doc not in schema["enum"]:
        supported = ", ".join(shown_value(v) for v in schema["enum"])
        errors.append(FieldError("FieldValueNotSupported", path,
                                 f"Unsupported value: {shown_value(doc)}: supported values: "
                                 f"{supported}"))
    if isinstance(doc, str):
        errors += _string(doc, schema, path)
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        errors += _number(doc, schema, path)
    elif isinstance(doc, list):
        errors += _array(doc, schema, path)
    elif isinstance(doc, dict):
        errors += _object(doc, schema, path, root)
    return errors


def _string(doc: str, schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "maxLength" in schema and len(doc) > int(schema["maxLength"]):
        most = int(schema["maxLength"])
        errors.append(FieldError("FieldValueTooLong", path, "Too long: may not be more than "
                                 f"{most} {'byte' if most == 1 else 'bytes'}"))
    if "minLength" in schema and len(doc) < int(schema["minLength"]):
        errors.append(_invalid(path, doc, f"{path} in body should be at least "
                               f"{schema['minLength']} chars long"))
    if "pattern" in schema and not re.search(schema["pattern"], doc):
        errors.append(_invalid(path, doc, f"{path} in body should match '{schema['pattern']}'"))
    if schema.get("format") == "date-time" and not _date_time(doc):
        errors.append(_invalid(path, doc, f'{path} in body must be of type date-time: "{doc}"'))
    return errors


def _number(doc: float, schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "minimum" in schema:
        low = schema["minimum"]
        if schema.get("exclusiveMinimum") and doc <= low:
            errors.append(_invalid(path, doc, f"{path} in body should be greater than {low}"))
        elif doc < low:
            errors.append(_invalid(path, doc, f"{path} in body should be greater than or "
                                   f"equal to {low}"))
    if "maximum" in schema:
        high = schema["maximum"]
        if schema.get("exclusiveMaximum") and doc >= high:
            errors.append(_invalid(path, doc, f"{path} in body should be less than {high}"))
        elif doc > high:
            errors.append(_invalid(path, doc, f"{path} in body should be less than or equal "
                                   f"to {high}"))
    return errors


def _array(doc: list[Any], schema: Schema, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if "minItems" in schema and len(doc) < int(schema["minItems"]):
        errors.append(_invalid(path, len(doc), f"{path} in body should have at least "
                               f"{schema['minItems']} items"))
    if "maxItems" in schema and len(doc) > int(schema["maxItems"]):
        most = int(schema["maxItems"])
        errors.append(FieldError("FieldValueTooMany", path, f"Too many: {len(doc)}: must "
                                 f"have at most {most} {'item' if most == 1 else 'items'}"))
    list_type = schema.get("x-kubernetes-list-type")
    if list_type in ("set", "map"):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        seen: list[Any] = []
        for i, item in enumerate(doc):
            key = ({k: item.get(k) for k in keys} if list_type == "map"
                   and isinstance(item, dict) else item)
            if key in seen:
                errors.append(FieldError("FieldValueDuplicate", f"{path}[{i}]",
                                         f"Duplicate value: {shown_value(key)}"))
            else:
                seen.append(key)
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(doc):
            errors += validate(item, items, f"{path}[{i}]", False)
    return errors


def _object(doc: dict[str, Any], schema: Schema, path: str, root: bool) -> list[FieldError]:
    errors: list[FieldError] = []
    properties: dict[str, Schema] = schema.get("properties") or {}
    for name in schema.get("required") or []:
        if name not in doc:
            errors.append(FieldError("FieldValueRequired", _join(path, name), "Required value"))
    if schema.get(EMBEDDED):
        for name in ("apiVersion", "kind"):
            if not doc.get(name):
                errors.append(FieldError("FieldValueRequired", _join(path, name),
                                         "Required value: must not be empty"))
    extra = schema.get("additionalProperties")
    for key, value in doc.items():
        if root and key in _ROOT_META:
            continue
        if key in properties:
            errors += validate(value, properties[key], _join(path, key), False)
        elif isinstance(extra, dict):
            errors += validate(value, extra, _join(path, key), False)
    return errors
