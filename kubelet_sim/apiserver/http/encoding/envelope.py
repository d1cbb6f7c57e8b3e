"""Kubernetes' protobuf envelope and watch frames.

An object on the wire is the 4 bytes ``k8s\\x00`` then a ``runtime.Unknown`` whose
``typeMeta`` names the kind (apiVersion, kind) and whose ``raw`` is the kind's own message
(which carries no apiVersion/kind of its own). A watch stream over protobuf is frames: a
4-byte big-endian length, then a bare (unenveloped: the stream serializer is the raw one)
meta/v1 ``WatchEvent`` whose ``object`` is a ``RawExtension`` holding the enveloped object.
"""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf.message import DecodeError, Message

from . import protobuf

MAGIC = b"k8s\x00"
META = "meta.k8s.io/v1"
# kinds every group version serves from meta/v1 (Status is written as apiVersion v1)
_META_KINDS = frozenset({"Status", "DeleteOptions", "WatchEvent"})


class EnvelopeError(ValueError):
    """Bytes that are not a protobuf object this server knows (answered 400)."""


def message_of(api_version: str, kind: str) -> type[Message] | None:
    """The message class of a kind as a client names it, None without a protobuf form."""
    found = protobuf.kind_message(api_version, kind)
    if found is None and kind in _META_KINDS:
        found = protobuf.kind_message(META, kind)
    return found


def _unknown(api_version: str, kind: str, raw: bytes) -> bytes:
    unknown = protobuf.message_class("k8s.io.apimachinery.pkg.runtime.Unknown")
    assert unknown is not None
    envelope: Any = unknown()
    envelope.typeMeta.apiVersion = api_version
    envelope.typeMeta.kind = kind
    envelope.raw = raw
    envelope.contentEncoding = ""  # gogo writes these even when empty
    envelope.contentType = ""
    return MAGIC + envelope.SerializeToString()


def encode(doc: dict[str, Any]) -> bytes | None:
    """The enveloped protobuf of a JSON object, None when its kind has no protobuf form."""
    api_version, kind = str(doc.get("apiVersion", "")), str(doc.get("kind", ""))
    cls = message_of(api_version, kind)
    if cls is None:
        return None
    message = cls()
    protobuf.fill(message, doc)
    return _unknown(api_version, kind, message.SerializeToString(deterministic=True))


def unwrap(data: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw) of an enveloped object; EnvelopeError as kube-apiserver's
    decoder words it."""
    if not data:
        raise EnvelopeError("empty data")
    if not data.startswith(MAGIC):
        raise EnvelopeError("provided data does not appear to be a protobuf message, "
                            f"expected prefix {list(MAGIC)}")
    if len(data) == len(MAGIC):
        raise EnvelopeError("empty body")
    unknown = protobuf.message_class("k8s.io.apimachinery.pkg.runtime.Unknown")
    assert unknown is not None
    envelope: Any = unknown()
    try:
        envelope.ParseFromString(data[len(MAGIC):])
    except DecodeError as e:
        raise EnvelopeError(f"unexpected protobuf: {e}") from None
    api_version, kind = envelope.typeMeta.apiVersion, envelope.typeMeta.kind
    if not kind:
        raise EnvelopeError(f"Object 'Kind' is missing in '{api_version or '{}'}'")
    if not api_version:
        raise EnvelopeError(f"Object 'apiVersion' is missing in '{kind}'")
    return api_version, kind, bytes(envelope.raw)


def decode(data: bytes) -> dict[str, Any]:
    """The JSON object of an enveloped protobuf object (apiVersion and kind from the
    envelope)."""
    api_version, kind, raw = unwrap(data)
    cls = message_of(api_version, kind)
    if cls is None:
        group, _, version = api_version.rpartition("/")
        raise EnvelopeError(f'no kind "{kind}" is registered for version "{api_version}"'
                            if group or version else f'no kind "{kind}" is registered')
    message = cls()
    try:
        message.ParseFromString(raw)
        doc = protobuf.read(message)
    except (DecodeError, ValueError) as e:
        raise EnvelopeError(f"unexpected {kind} protobuf: {e}") from None
    return {"apiVersion": api_version, "kind": kind, **doc}


def watch_frame(event_type: str, obj: dict[str, Any]) -> bytes | None:
    """One length-prefixed frame of a protobuf watch stream, None when the object has no
    protobuf form."""
    embedded = encode(obj)
    if embedded is None:
        return None
    cls = protobuf.message_class("k8s.io.apimachinery.pkg.apis.meta.v1.WatchEvent")
    assert cls is not None
    event: Any = cls()
    event.type = event_type
    event.object.raw = embedded
    body = event.SerializeToString(deterministic=True)
    return struct.pack(">I", len(body)) + body
