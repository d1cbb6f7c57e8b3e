"""Secret and ServiceAccount (core/v1) as kube-apiserver stores and validates them.

A Secret's ``data`` values are base64 on the wire (Go's ``[]byte``): a value that is not
is a body that cannot be decoded (400). ``stringData`` is write-only: on every write its
entries are encoded into ``data`` (overwriting a key of both) and it is never stored.
``type`` defaults to ``Opaque``. Validation, as ValidateSecret does: each key a valid
config key, the decoded values at most 1 MiB together, the keys a type needs (a
service-account-token's ``kubernetes.io/service-account.name`` annotation,
``.dockercfg`` / ``.dockerconfigjson`` as JSON, ``username`` or ``password`` for
basic-auth, ``ssh-privatekey``, ``tls.crt`` and ``tls.key``). On update ``type`` never
changes, and once ``immutable: true`` neither ``immutable`` nor ``data`` may change.
A ServiceAccount's ``secrets`` and ``imagePullSecrets`` name objects by ``name``.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from kubelet_sim.api.errors import BadRequest, Invalid
from kubelet_sim.api.model import Resource

MAX_SECRET_SIZE = 1024 * 1024  # core.MaxSecretSize
OPAQUE = "Opaque"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
SERVICE_ACCOUNT_NAME_ANNOTATION = "kubernetes.io/service-account.name"
_CONFIG_KEY = re.compile(r"[-._a-zA-Z0-9]+")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\r\n]*")

# type -> the data keys it needs (all of them), and whether their values are JSON
_REQUIRED_KEYS: dict[str, tuple[tuple[str, ...], bool]] = {
    "kubernetes.io/dockercfg": ((".dockercfg",), True),
    "kubernetes.io/dockerconfigjson": ((".dockerconfigjson",), True),
    "kubernetes.io/ssh-auth": (("ssh-privatekey",), False),
    "kubernetes.io/tls": (("tls.key", "tls.crt"), False),
}


def decode_value(value: Any) -> bytes:
    """A ``data`` value as bytes; ValueError naming the offset as Go's decoder does."""
    if not isinstance(value, str):
        raise ValueError("illegal base64 data at input byte 0")
    cleaned = value.replace("\r", "").replace("\n", "")
    bad = _BASE64.fullmatch(value)
    if bad is None:
        offset = next(i for i, ch in enumerate(value) if not _BASE64.fullmatch(ch))
        raise ValueError(f"illegal base64 data at input byte {offset}")
    try:
        return base64.b64decode(cleaned, validate=True)
    except binascii.Error:
        raise ValueError(f"illegal base64 data at input byte {len(cleaned) // 4 * 4}") from None


def prepare_secret(secret: Resource) -> None:
    """What decoding and the v1 conversion do to a written Secret: ``data`` checked as
    base64 (BadRequest), ``stringData`` folded into ``data`` and dropped, ``type`` set."""
    body = secret.body
    data = body.get("data")
    if isinstance(data, dict):
        for value in data.values():
            try:
                decode_value(value)
            except ValueError as err:
                raise BadRequest(f'Secret in version "v1" cannot be handled as a Secret: '
                                 f"{err}") from None
    string_data = body.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        merged = dict(data) if isinstance(data, dict) else {}
        for key, value in string_data.items():
            merged[key] = base64.b64encode(str(value).encode()).decode()
        body["data"] = merged
    if not body.get("type"):
        body["type"] = OPAQUE


def config_key(key: str, path: str) -> None:
    """IsConfigMapKey: alphanumerics, ``-``, ``_``, ``.``; not ``.``, ``..`` or ``..*``."""
    problem = ""
    if len(key) > 253:
        problem = "must be no more than 253 characters"
    elif not _CONFIG_KEY.fullmatch(key):
        problem = ("a valid config key must consist of alphanumeric characters, '-', '_' or "
                   "'.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for "
                   "validation is '[-._a-zA-Z0-9]+')")
    elif key == ".":
        problem = "must not be '.'"
    elif key == "..":
        problem = "must not be '..'"
    elif key.startswith(".."):
        problem = "must not start with '..'"
    if problem:
        raise Invalid(path, f"Invalid value: {json.dumps(key)}: {problem}")


def validate_secret(secret: Resource) -> None:
    body = secret.body
    data = body.get("data") or {}
    if not isinstance(data, dict):
        raise Invalid("data", "must be an object")
    total = 0
    for key, value in data.items():
        config_key(key, f"data[{key}]")
        total += len(decode_value(value))
    if total > MAX_SECRET_SIZE:
        raise Invalid("data", f"Too long: may not be more than {MAX_SECRET_SIZE} bytes")
    kind = body.get("type") or OPAQUE
    if kind == SERVICE_ACCOUNT_TOKEN:
        if not secret.metadata.annotations.get(SERVICE_ACCOUNT_NAME_ANNOTATION):
            raise Invalid(f"metadata.annotations[{SERVICE_ACCOUNT_NAME_ANNOTATION}]",
                          "Required value")
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            raise Invalid("data[username]", "Required value")
    elif kind in _REQUIRED_KEYS:
        keys, is_json = _REQUIRED_KEYS[kind]
        for key in keys:
            if key not in data:
                raise Invalid(f"data[{key}]", "Required value")
            if is_json:
                try:
                    json.loads(decode_value(data[key]))
                except ValueError as err:
                    raise Invalid(f"data[{key}]", f"Invalid value: \"<secret contents "
                                  f"redacted>\": {err}") from None
    immutable = body.get("immutable")
    if immutable is not None and not isinstance(immutable, bool):
        raise Invalid("immutable", "must be a boolean")


def validate_secret_update(old: Resource, new: Resource) -> None:
    """ValidateSecretUpdate: the type stays; an immutable Secret's data and flag stay."""
    old_type, new_type = old.body.get("type") or OPAQUE, new.body.get("type") or OPAQUE
    if old_type != new_type:
        raise Invalid("type", f"Invalid value: {json.dumps(new_type)}: field is immutable")
    if old.body.get("immutable") is True:
        if new.body.get("immutable") is not True:
            raise Invalid("immutable", "Forbidden: field is immutable when `immutable` is set")
        if (old.body.get("data") or {}) != (new.body.get("data") or {}):
            raise Invalid("data", "Forbidden: field is immutable when `immutable` is set")


def validate_service_account(account: Resource) -> None:
    for field in ("secrets", "imagePullSecrets"):
        refs = account.body.get(field) or []
        if not isinstance(refs, list):
            raise Invalid(field, "must be a list")
        for i, ref in enumerate(refs):
            if not isinstance(ref, dict):
                raise Invalid(f"{field}[{i}]", "must be an object")
    automount = account.body.get("automountServiceAccountToken")
    if automount is not None and not isinstance(automount, bool):
        raise Invalid("automountServiceAccountToken", "must be a boolean")
