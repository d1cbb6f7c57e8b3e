"""``continue`` tokens as kube-apiserver's storage writes and reads them
(k8s.io/apiserver ``pkg/storage/continue.go``): unpadded URL-safe base64 of the JSON
``{"v":"meta.k8s.io/v1","rv":<the list's resourceVersion>,"start":"<key after the last
item>"}``. The start key is the last returned object's storage key relative to the
list's key prefix (``<namespace>/<name>`` across namespaces, ``<name>`` within one
namespace or for a cluster-scoped kind) followed by a NUL, so the next page starts right
after it. ``rv`` -1 continues at the newest resourceVersion (the token a 410 answer
carries); 0 is refused.

A token that does not decode is a 400 ``invalid continue token: ...`` with the storage's
wording; the part quoting Go's JSON decoder is worded as Go words its common errors."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Any

from kubelet_sim.api.errors import BadRequest

API_VERSION = "meta.k8s.io/v1"
LATEST = -1  # rv of a token that continues at the newest resourceVersion
_INVALID = "continue key is not valid"
_ALPHABET = re.compile(r"[A-Za-z0-9_-]*")
_INTEGER = re.compile(r"-?(0|[1-9][0-9]*)")
_FIELDS = {"v": "string", "rv": "int64", "start": "string"}


@dataclass(frozen=True)
class Continuation:
    """Where a continued list starts: the full storage key (prefix included) and the
    resourceVersion it is served at (:data:`LATEST`: the newest)."""

    key: str
    resource_version: int


def encode(start: str, resource_version: int) -> str:
    """The token for a list that goes on at ``start`` (relative to the key prefix)."""
    doc = {"v": API_VERSION, "rv": resource_version, "start": start}
    raw = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def after(key: str, prefix: str, resource_version: int) -> str:
    """The token of a page whose last object has storage key ``key``."""
    if not key.startswith(prefix):
        raise ValueError(f"key {key!r} is not under the prefix {prefix!r}")
    return encode(key[len(prefix):] + "\x00", resource_version)


def _bad(why: str) -> BadRequest:
    return BadRequest(f"invalid continue token: {why}")


class _Number(str):
    """A JSON number as its text (Go decodes it into the field's type, or refuses it)."""


class _Object(list[tuple[str, Any]]):
    """A JSON object as its members in order (Go's decoder lets a later one win)."""


class _NotJson(ValueError):
    """NaN or Infinity, which Python's decoder takes and Go's refuses."""


def _constant(text: str) -> Any:
    raise _NotJson(text)


def _base64(token: str) -> bytes:
    """RawURLEncoding's strict decoding: the first byte off the alphabet, or a lone last
    character, is ``illegal base64 data at input byte N``."""
    found = _ALPHABET.match(token)
    bad = found.end() if found is not None else 0
    if bad < len(token):
        raise _bad(f"{_INVALID}: illegal base64 data at input byte {bad}")
    if len(token) % 4 == 1:
        raise _bad(f"{_INVALID}: illegal base64 data at input byte {len(token) - 1}")
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (binascii.Error, ValueError) as e:  # not reached with the checks above
        raise _bad(f"{_INVALID}: {e}") from None


def _json_type(value: Any) -> str:
    """How Go's decoder names a JSON value it cannot store."""
    if isinstance(value, _Number):
        return "number"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, _Object):
        return "object"
    return "array"


# Python's decoder's complaint → where Go's says the character was unexpected
_CONTEXT = {"Expecting value": "looking for beginning of value",
            "Expecting property name enclosed in double quotes":
                "looking for beginning of object key string",
            "Expecting ':' delimiter": "after object key",
            "Expecting ',' delimiter": "after object key:value pair",
            "Extra data": "after top-level value",
            "Invalid control character at": "in string literal"}


def _syntax_error(text: str, error: json.JSONDecodeError) -> str:
    if error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated"):
        return "unexpected end of JSON input"
    context = _CONTEXT.get(error.msg, "looking for beginning of value")
    return f"invalid character {text[error.pos]!r} {context}"


def _fields(data: bytes) -> dict[str, Any]:
    """The token's fields as Go's ``json.Unmarshal`` fills the struct: names matched
    case-insensitively, nulls and unknown names skipped, a value of the wrong type
    refused naming the field."""
    text = data.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text, parse_int=_Number, parse_float=_Number,
                         parse_constant=_constant, object_pairs_hook=_Object)
    except json.JSONDecodeError as e:
        raise _bad(f"{_INVALID}: {_syntax_error(text, e)}") from None
    except _NotJson as e:
        raise _bad(f"{_INVALID}: invalid character {str(e)[0]!r} looking for beginning of "
                   "value") from None
    if doc is None:
        return {}
    if not isinstance(doc, _Object):
        raise _bad(f"{_INVALID}: json: cannot unmarshal {_json_type(doc)} into Go value of "
                   "type storage.continueToken")
    fields: dict[str, Any] = {}
    problem = ""
    for name, value in doc:
        field = name.lower()
        if field not in _FIELDS or value is None:
            continue
        wanted = _FIELDS[field]
        if wanted == "int64":
            ok = (isinstance(value, _Number) and _INTEGER.fullmatch(value) is not None
                  and -(2**63) <= int(value) < 2**63)
            shown = f"number {value}" if isinstance(value, _Number) else _json_type(value)
        else:
            ok = isinstance(value, str) and not isinstance(value, _Number)
            shown = _json_type(value)
        if not ok:
            problem = problem or (f"json: cannot unmarshal {shown} into Go struct field "
                                  f"continueToken.{field} of type {wanted}")
            continue
        fields[field] = int(value) if wanted == "int64" else str(value)
    if problem:
        raise _bad(f"{_INVALID}: {problem}")
    return fields


def _clean(key: str) -> bool:
    """Whether ``key`` is what Go's ``path.Clean`` leaves unchanged (no empty, ``.`` or
    ``..`` segment, no trailing slash): a start key cannot climb out of its prefix."""
    return key == "/" or all(part not in ("", ".", "..") for part in key[1:].split("/"))


def decode(token: str, prefix: str) -> Continuation:
    """Where the list ``token`` continues starts (its key under ``prefix``), or the
    BadRequest kube-apiserver answers for it."""
    fields = _fields(_base64(token))
    version = fields.get("v", "")
    if version != API_VERSION:
        raise _bad(f"{_INVALID}: server does not recognize this encoded version {version}")
    if fields.get("rv", 0) == 0:
        raise _bad(f"{_INVALID}: incorrect encoded start resourceVersion (version "
                   f"{API_VERSION})")
    start = fields.get("start", "")
    if not start:
        raise _bad(f"{_INVALID}: encoded start key empty (version {API_VERSION})")
    key = start if start.startswith("/") else "/" + start
    if not _clean(key):
        raise _bad(f"{_INVALID}: {start}")
    return Continuation(prefix + key[1:], fields["rv"])
