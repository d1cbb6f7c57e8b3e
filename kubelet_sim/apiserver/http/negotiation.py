"""Content negotiation as kube-apiserver does it: which media type (and which ``as=``
transformation) the response is written in, from the Accept header; how the request body
is read, from Content-Type.

Responses: ``application/json`` (also ``*/*``, ``application/*``, no Accept),
``application/yaml``, and ``application/vnd.kubernetes.protobuf`` (answered as JSON until
:func:`encode_protobuf` has an encoder). ``;as=Table``, ``;as=PartialObjectMetadata`` (get,
watch) and ``;as=PartialObjectMetadataList`` (list) with ``g=meta.k8s.io`` and ``v=v1`` or
``v1beta1`` transform the answer. The first acceptable media range wins; none acceptable
is 406 NotAcceptable.

Request bodies: JSON, YAML, or protobuf (through :func:`decode_protobuf`); anything else
is 415 UnsupportedMediaType.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import web

from kubelet_sim.apiserver.http.status import fail

JSON, YAML, PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
SERVED = (JSON, YAML, PROTOBUF)  # in kube-apiserver's order, as its errors list them
META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
_IGNORED_PARAMS = ("q", "charset", "pretty", "stream", "includeObject")


@dataclass(frozen=True)
class Output:
    """What a response is written as: a media type, and ``as_kind`` (a transformation,
    "" for the object itself) in ``meta.k8s.io/<version>``."""

    media: str = JSON
    as_kind: str = ""
    version: str = "v1"

    @property
    def meta_api_version(self) -> str:
        return f"{META_GROUP}/{self.version}"


def _clauses(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for clause in accept.split(","):
        media, *raw = (part.strip() for part in clause.split(";"))
        if not media:
            continue
        params = {}
        for item in raw:
            key, _, value = item.partition("=")
            params[key.strip()] = value.strip().strip('"')
        out.append((media.lower(), params))
    return out


def _acceptable(media: str, params: dict[str, str]) -> Output | None:
    served = {"*/*": JSON, "application/*": JSON, JSON: JSON, YAML: YAML,
              PROTOBUF: PROTOBUF}.get(media)
    if served is None or params.get("q") == "0":
        return None
    rest = {k: v for k, v in params.items() if k not in _IGNORED_PARAMS}
    if not rest:
        return Output(served)
    as_kind, group, version = rest.pop("as", ""), rest.pop("g", ""), rest.pop("v", "")
    if rest or as_kind not in TRANSFORMS or group != META_GROUP or version not in META_VERSIONS:
        return None
    return Output(served, as_kind, version)


def negotiate(request: web.Request) -> Output:
    """The response's :class:`Output` for ``request``'s Accept header (406 when no media
    range in it can be produced)."""
    accept = request.headers.get("Accept", "").strip()
    if not accept:
        return Output()
    for media, params in _clauses(accept):
        chosen = _acceptable(media, params)
        if chosen is not None:
            return chosen
    raise fail(406, "NotAcceptable",
               f"only the following media types are accepted: {', '.join(SERVED)}")


def not_acceptable(message: str) -> web.HTTPException:
    """A transformation the object cannot take (e.g. PartialObjectMetadata of a list)."""
    return fail(406, "NotAcceptable", message)


# -- bodies -------------------------------------------------------------------------------

def encode_protobuf(body: dict[str, Any]) -> bytes | None:
    """The protobuf wire form of ``body``; None while this server has no protobuf encoder
    (the answer is then JSON, which every Kubernetes client also reads)."""
    return None


def decode_protobuf(raw: bytes) -> Any:
    """A protobuf request body as the JSON-shaped object it encodes; 415 while this
    server has no protobuf decoder."""
    raise unsupported_media_type()


def unsupported_media_type() -> web.HTTPException:
    return fail(415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                f"include: {', '.join(SERVED)}")


def content_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", "").split(";")[0].strip().lower()


def decode_body(request: web.Request, raw: bytes, json_decode: Any) -> Any:
    """The request body by its Content-Type: JSON (``json_decode``, also when no type is
    given), YAML, protobuf; 415 for any other type."""
    kind = content_type(request)
    if kind in ("", JSON, "*/*"):
        return json_decode(raw or b"{}")
    if kind == YAML:
        if not raw.strip():
            return {}
        return yaml.safe_load(raw)
    if kind == PROTOBUF:
        return decode_protobuf(raw)
    raise unsupported_media_type()


def encode(body: Any, output: Output) -> tuple[bytes, str]:
    """The response bytes and their Content-Type."""
    if output.media == YAML:
        return yaml.safe_dump(body, sort_keys=False).encode(), YAML
    if output.media == PROTOBUF:
        wire = encode_protobuf(body)
        if wire is not None:
            return wire, PROTOBUF
    return json.dumps(body).encode(), JSON
