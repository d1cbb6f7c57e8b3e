"""The ConfigMap kind's validation, as kube-apiserver's ``ValidateConfigMap`` and
``ValidateConfigMapUpdate`` word it: keys are config keys (``[-._a-zA-Z0-9]+``, at most
253 characters, not ``.``/``..`` nor starting with ``..``), a key is in ``data`` or
``binaryData`` but not both, everything together is at most 1 MiB, and once
``immutable: true`` is stored nothing but metadata may change."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.model import Resource

MAX_SIZE = 1024 * 1024  # core.MaxSecretSize: a ConfigMap's limit too
_KEY = re.compile(r"[-._a-zA-Z0-9]+")
KEY_RULE = ("a valid config key must consist of alphanumeric characters, '-', '_' or '.' "
            "(e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation "
            "is '[-._a-zA-Z0-9]+')")
IMMUTABLE = "field is immutable when `immutable` is set"


def config_key_errors(key: str) -> list[str]:
    """``IsConfigMapKey``: what is wrong with a ConfigMap or Secret key."""
    errors = []
    if len(key) > 253:
        errors.append("must be no more than 253 characters")
    if not _KEY.fullmatch(key):
        errors.append(KEY_RULE)
    if key == ".":
        errors.append("must not be '.'")
    elif key == "..":
        errors.append("must not be '..'")
    elif key.startswith(".."):
        errors.append("must not start with '..'")
    return errors


def _map(cm: Resource, name: str, errors: list[FieldError]) -> dict[str, Any]:
    value = cm.body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(FieldError("FieldValueInvalid", name,
                                 f"Invalid value: {json.dumps(value)}: must be a map"))
        return {}
    return value


def _decoded_size(value: Any) -> int:
    try:
        return len(base64.b64decode(str(value), validate=True))
    except (binascii.Error, ValueError):
        return len(str(value))


def validate_config_map(cm: Resource) -> None:
    errors: list[FieldError] = []
    data, binary = _map(cm, "data", errors), _map(cm, "binaryData", errors)
    size = 0
    for key, value in data.items():
        for why in config_key_errors(str(key)):
            errors.append(FieldError("FieldValueInvalid", f"data[{key}]",
                                     f"Invalid value: {json.dumps(key)}: {why}"))
        if key in binary:
            errors.append(FieldError("FieldValueInvalid", f"data[{key}]",
                                     f"Invalid value: {json.dumps(key)}: duplicate of key "
                                     "present in binaryData"))
        if not isinstance(value, str):
            errors.append(FieldError("FieldValueInvalid", f"data[{key}]",
                                     f"Invalid value: {json.dumps(value)}: must be a string"))
        size += len(str(value).encode())
    for key, value in binary.items():
        for why in config_key_errors(str(key)):
            errors.append(FieldError("FieldValueInvalid", f"binaryData[{key}]",
                                     f"Invalid value: {json.dumps(key)}: {why}"))
        size += _decoded_size(value)
    if size > MAX_SIZE:
        errors.append(FieldError("FieldValueTooLong", "",
                                 f"Too long: may not be more than {MAX_SIZE} bytes"))
    immutable = cm.body.get("immutable")
    if immutable is not None and not isinstance(immutable, bool):
        errors.append(FieldError("FieldValueInvalid", "immutable",
                                 f"Invalid value: {json.dumps(immutable)}: must be a boolean"))
    if errors:
        raise InvalidObject("ConfigMap", cm.name, errors)


def validate_config_map_update(old: Resource, new: Resource) -> None:
    if old.body.get("immutable") is not True:
        return
    errors: list[FieldError] = []
    if new.body.get("immutable") is not True:
        errors.append(FieldError("FieldValueForbidden", "immutable", f"Forbidden: {IMMUTABLE}"))
    for name in ("data", "binaryData"):
        if (old.body.get(name) or {}) != (new.body.get(name) or {}):
            errors.append(FieldError("FieldValueForbidden", name, f"Forbidden: {IMMUTABLE}"))
    if errors:
        raise InvalidObject("ConfigMap", new.name, errors)
