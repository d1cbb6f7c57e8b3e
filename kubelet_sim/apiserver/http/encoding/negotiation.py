"""Content negotiation: which wire format a request is read in and answered in.

As kube-apiserver negotiates it. Answers: ``application/json`` (also ``*/*``,
``application/*``, no Accept), ``application/yaml`` and, for a kind with a protobuf form,
``application/vnd.kubernetes.protobuf``; ``;as=Table`` (JSON/YAML only: Table has no
protobuf form), ``;as=PartialObjectMetadata`` (get, watch) and
``;as=PartialObjectMetadataList`` (list) with ``g=meta.k8s.io`` and ``v=v1`` or ``v1beta1``
transform the answer. q-values order the ranges, a more specific range wins a tie, then
the header's order; the first range that can be produced wins, none is 406 NotAcceptable.
Errors are Status objects in the negotiated form (protobuf clients read a protobuf Status).

Request bodies: JSON, YAML, or protobuf (``k8s\\x00``-enveloped) for a kind with a
protobuf form; a protobuf PATCH, a protobuf body for a kind without one (custom
resources) or any other type is 415 UnsupportedMediaType.

The REST handlers never see any of this: :func:`negotiate` records the choice on the
request, :func:`read_body` gives them the JSON object whatever the wire, and
:func:`respond` / :class:`WatchStream` write what they answer in the chosen form.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml
from aiohttp import payload, web
from aiohttp.abc import AbstractStreamWriter
from aiohttp.typedefs import LooseHeaders
from multidict import CIMultiDict

from kubelet_sim.apiserver.http import field_validation as fields
from kubelet_sim.apiserver.http import nesting
from kubelet_sim.apiserver.http.connections import MAX_REQUEST_BODY_BYTES
from kubelet_sim.apiserver.http.resources import ApiResource
from kubelet_sim.apiserver.http.status import fail, status_body

from . import envelope
from .turns import write_slice

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = f"{PROTOBUF};stream=watch"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
META_GROUP = "meta.k8s.io"
META_VERSIONS = ("v1", "v1beta1")
TRANSFORMS = ("Table", "PartialObjectMetadata", "PartialObjectMetadataList")
WRITE_SLICE = 128 * 1024  # bytes of an answer written before the loop serves others
ENCODE_PIECES_FROM = 100  # list members past which a JSON answer is encoded member by member
_IGNORED_PARAMS = ("charset", "pretty", "stream", "includeObject")
_SERVED = {"*/*": JSON, "application/*": JSON, JSON: JSON, YAML: YAML, PROTOBUF: PROTOBUF}
_log = logging.getLogger(__name__)


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


@dataclass(frozen=True)
class _Range:
    media: str  # type/subtype
    params: dict[str, str]
    q: float
    order: int

    @property
    def specificity(self) -> int:
        kind, _, sub = self.media.partition("/")
        return (kind != "*") + (sub != "*") + bool(self.params)


@dataclass(frozen=True)
class _Negotiated:
    output: Output
    resource: ApiResource | None
    has_protobuf: bool  # the kind has a protobuf form


# where the choice lives on the request (typed keys from aiohttp 3.14; a name before)
_KEY: Any = (web.RequestKey("wire", _Negotiated) if hasattr(web, "RequestKey")
             else "kubelet_sim.apiserver.http.wire")


def _ranges(accept: str) -> list[_Range]:
    out = []
    for order, raw in enumerate(accept.split(",")):
        media, *parts = (p.strip() for p in raw.split(";"))
        if not media:
            continue
        params = {}
        for part in parts:
            key, _, value = part.partition("=")
            params[key.strip()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            out.append(_Range(media.lower(), params, q, order))
    return sorted(out, key=lambda r: (-r.q, -r.specificity, r.order))


def _has_protobuf(resource: ApiResource) -> bool:
    return envelope.message_of(resource.group_version, resource.kind) is not None


def _acceptable(r: _Range, has_protobuf: bool) -> Output | None:
    """The answer ``r`` asks for, None when this server cannot write it."""
    served = _SERVED.get(r.media)
    if served is None:
        return None
    rest = {k: v for k, v in r.params.items() if k not in _IGNORED_PARAMS}
    if not rest:
        return Output(served) if served != PROTOBUF or has_protobuf else None
    as_kind, group, version = rest.pop("as", ""), rest.pop("g", ""), rest.pop("v", "")
    if rest or as_kind not in TRANSFORMS or group != META_GROUP or version not in META_VERSIONS:
        return None
    if served == PROTOBUF and envelope.message_of(f"{META_GROUP}/{version}", as_kind) is None:
        return None  # Table (and v1beta1's metadata) have no protobuf form
    return Output(served, as_kind, version)


def served_types(has_protobuf: bool) -> list[str]:
    """The media types a kind is read and written in, in kube-apiserver's order."""
    return [JSON, YAML, PROTOBUF] if has_protobuf else [JSON, YAML]


def negotiate(request: web.Request, resource: ApiResource | None) -> web.Response | None:
    """Record on ``request`` how it is read and answered; a 406 Status (JSON) when no
    range of its Accept header can be produced (None otherwise)."""
    has_protobuf = resource is not None and _has_protobuf(resource)
    accept = request.headers.get("Accept", "").strip()
    chosen: Output | None = Output()
    if accept:
        chosen = next((out for r in _ranges(accept)
                       if (out := _acceptable(r, has_protobuf)) is not None), None)
    request[_KEY] = _Negotiated(chosen or Output(), resource, has_protobuf)
    if chosen is None:
        return _json_status(status_body(
            406, "NotAcceptable", "only the following media types are accepted: "
            f"{', '.join(served_types(has_protobuf))}"))
    return None


def _negotiated(request: web.Request) -> _Negotiated:
    found = request.get(_KEY)
    return found if isinstance(found, _Negotiated) else _Negotiated(Output(), None, False)


def output(request: web.Request) -> Output:
    """The answer's form :func:`negotiate` chose (JSON when it did not run)."""
    return _negotiated(request).output


def not_acceptable(message: str) -> web.HTTPException:
    """A transformation the object cannot take (e.g. PartialObjectMetadata of a list)."""
    return fail(406, "NotAcceptable", message)


# -- request bodies --------------------------------------------------------------------------

def content_type(request: web.Request) -> str:
    return request.headers.get("Content-Type", "").split(";")[0].strip().lower()


def _unsupported(types: list[str] | tuple[str, ...]) -> web.HTTPException:
    return fail(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                f"format - accepted media types include: {', '.join(types)}")


async def read_body(request: web.Request,
                    json_decode: Callable[[bytes], Any] = fields.decode) -> Any:
    """The request's object as JSON, from a JSON, YAML or enveloped protobuf body (a
    syntax error is a ValueError for the caller to answer; 415 for another type, 413
    past the server's body limit)."""
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise fail(413, "RequestEntityTooLarge",
                   f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}") from None
    kind = content_type(request)
    if kind in ("", JSON, "*/*"):
        return json_decode(raw or b"{}")
    wire = _negotiated(request)
    if kind == YAML:
        if not raw.strip():
            return {}
        try:
            return nesting.loads_yaml(raw)
        except yaml.YAMLError as e:
            raise ValueError(str(e)) from None
    if kind != PROTOBUF:
        raise _unsupported(served_types(wire.has_protobuf))
    if request.method == "PATCH":  # a patch is never an object
        raise _unsupported(PATCH_TYPES)
    if not wire.has_protobuf:
        raise _unsupported(served_types(False))
    try:
        return envelope.decode(raw)
    except envelope.EnvelopeError as e:
        kind_name = wire.resource.kind if wire.resource else "object"
        raise fail(400, "BadRequest", f"the object provided is unrecognized (must be of "
                   f"type {kind_name}): {e}") from None


# -- answers ---------------------------------------------------------------------------------

def _json_status(body: dict[str, Any]) -> web.Response:
    return web.Response(status=int(body["code"]), body=json.dumps(body).encode(),
                        content_type=JSON)


def _protobuf(obj: Any) -> bytes | None:
    """The object in protobuf, None when it has no protobuf form; an object the schema
    cannot hold (a bug here, never the client's) is logged and answered in JSON."""
    if not isinstance(obj, dict):
        return None
    try:
        return envelope.encode(obj)
    except (ValueError, TypeError) as e:
        _log.warning("answering %s %s in JSON: no protobuf form: %s", obj.get("kind"),
                     (obj.get("metadata") or {}).get("name"), e)
        return None


class _YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, writing a mapping of any dict type (a decoded body that
    remembers duplicate keys, echoed by the reviews) as the mapping it is."""


_YamlDumper.add_multi_representer(dict, yaml.SafeDumper.represent_dict)


def _member(value: Any) -> str:
    if isinstance(value, list) and len(value) > ENCODE_PIECES_FROM:
        return "[" + ", ".join(json.dumps(item) for item in value) + "]"
    return json.dumps(value)


def _json(body: Any) -> bytes:
    """``json.dumps(body)``, a list's items (or a Table's rows) encoded one by one (a
    list of stored objects is written from their own JSON instead, :mod:`.json_list`):
    the C encoder holds the GIL for a whole
    call, and one call over thousands of objects would stop every other thread (the
    event loop too) for its duration."""
    if not isinstance(body, dict) or not any(isinstance(v, list) for v in body.values()):
        return json.dumps(body).encode()
    return ("{" + ", ".join(f"{json.dumps(key)}: {_member(value)}"
                            for key, value in body.items()) + "}").encode()


def encode(body: Any, out: Output) -> tuple[bytes, str]:
    """The answer's bytes and their Content-Type."""
    if out.media == YAML:
        return yaml.dump(body, Dumper=_YamlDumper, sort_keys=False).encode(), YAML
    if out.media == PROTOBUF:
        data = _protobuf(body)
        if data is not None:
            return data, PROTOBUF
    return _json(body), JSON


class _Slices(payload.Payload):
    """A big answer's bytes, written a slice at a time with the loop free in between
    (in turn with the other big answers, :mod:`.turns`): TLS encrypts what is written on
    the loop's thread, megabytes at once would hold every other request up."""

    _autoclose = True

    def __init__(self, data: bytes, content_type: str) -> None:
        super().__init__(data, content_type=content_type)
        self._size = len(data)

    def decode(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return bytes(self._value).decode(encoding, errors)

    async def write(self, writer: AbstractStreamWriter) -> None:
        view = memoryview(self._value)
        for start in range(0, len(view), WRITE_SLICE):
            await write_slice(writer, view[start:start + WRITE_SLICE])


def respond(request: web.Request, body: Any, status: int = 200,
            headers: LooseHeaders | None = None) -> web.Response:
    """``body`` (an API object, list or Status) in the form ``request`` negotiated.
    May run in a worker thread (it only builds the answer)."""
    data, media = encode(body, output(request))
    merged: CIMultiDict[str] = CIMultiDict(headers or {})
    merged["Content-Type"] = media
    if len(data) > WRITE_SLICE:
        return web.Response(status=status, body=_Slices(data, media), headers=merged)
    return web.Response(status=status, body=data, headers=merged)


def error_response(request: web.Request, exc: web.HTTPException) -> web.StreamResponse:
    """An error a handler raised as a JSON Status, in the negotiated form (protobuf
    clients get a protobuf Status); anything else unchanged."""
    try:
        body = json.loads(exc.text or "")
    except ValueError:
        return exc
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return exc
    return respond(request, body, exc.status)


def status_response(request: web.Request, body: dict[str, Any]) -> web.Response:
    """A Status answered before the request reached a resource (a refused token): in
    the form the Accept header prefers — protobuf too, a Status always has one — else
    JSON."""
    accept = request.headers.get("Accept", "").strip()
    chosen = next((out for r in _ranges(accept)
                   if (out := _acceptable(r, True)) is not None), None) if accept else None
    data, media = encode(body, Output(chosen.media if chosen and not chosen.as_kind else JSON))
    return web.Response(status=int(body["code"]), body=data, headers={"Content-Type": media})


class WatchStream(web.StreamResponse):
    """A watch answer: newline-separated JSON events, or protobuf frames."""

    def __init__(self, request: web.Request) -> None:
        self._protobuf = output(request).media == PROTOBUF
        super().__init__(headers={"Content-Type": PROTOBUF_WATCH if self._protobuf else JSON})

    async def send(self, event: dict[str, Any]) -> None:
        if self._protobuf:
            try:
                frame = envelope.watch_frame(str(event["type"]), event["object"])
            except (ValueError, TypeError) as e:  # a bug here, never the client's
                frame, why = None, str(e)
            else:
                why = "no protobuf form"
            if frame is not None:
                await self.write(frame)
            else:
                _log.warning("watch event %s left out: %s", event["type"], why)
            return
        await self.write(json.dumps(event).encode() + b"\n")
