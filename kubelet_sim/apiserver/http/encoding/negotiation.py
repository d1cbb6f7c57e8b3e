"""Content negotiation: which wire format a request is read in and answered in.

As kube-apiserver negotiates it: a built-in kind is read from JSON or from protobuf
(``Content-Type: application/vnd.kubernetes.protobuf``, enveloped) and answered in
protobuf when the Accept header prefers it (client-go sends
``application/vnd.kubernetes.protobuf, */*``); q-values order the ranges, a more
specific range wins a tie, then the header's order. Tables and metadata-only answers
(``as=...``) and discovery stay JSON. A kind without a protobuf form (custom resources)
answers 415 to a protobuf body, JSON when Accept also allows it, and 406 when the client
accepts protobuf only.

The REST handlers never see any of this: :func:`negotiate` records the choice on the
request, :func:`read_body` gives them the JSON object whatever the wire, and
:class:`ObjectResponse` / :class:`WatchStream` write what they answer in the chosen form.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from aiohttp.typedefs import LooseHeaders

from kubelet_sim.apiserver.http import field_validation as fields
from kubelet_sim.apiserver.http.resources import ApiResource
from kubelet_sim.apiserver.http.status import fail, status_body

from . import envelope

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
PROTOBUF_WATCH = f"{PROTOBUF};stream=watch"
PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
               "application/strategic-merge-patch+json", "application/apply-patch+yaml")
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wire:
    """What was negotiated for one request."""

    resource: ApiResource | None
    has_protobuf: bool  # the kind has a protobuf form
    protobuf_out: bool  # answers are written in protobuf


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


# where the choice lives on the request (typed keys from aiohttp 3.14; a name before)
_KEY: Any = (web.RequestKey("wire", Wire) if hasattr(web, "RequestKey")
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
            params[key.strip().lower()] = value.strip().strip('"')
        try:
            q = float(params.pop("q", "1"))
        except ValueError:
            q = 1.0
        if q > 0:
            out.append(_Range(media.lower(), params, q, order))
    return sorted(out, key=lambda r: (-r.q, -r.specificity, r.order))


def _has_protobuf(resource: ApiResource) -> bool:
    return envelope.message_of(resource.group_version, resource.kind) is not None


def _is_json(r: _Range) -> bool:
    return r.media in (JSON, "*/*", "application/*")


def negotiate(request: web.Request, resource: ApiResource | None) -> web.Response | None:
    """Record on ``request`` how it is read and answered; a 406 Status when the client
    accepts only protobuf for a kind without a protobuf form (None otherwise)."""
    has_protobuf = resource is not None and _has_protobuf(resource)
    protobuf_out = False
    accept = request.headers.get("Accept", "")
    ranges = _ranges(accept)
    for r in ranges:
        if r.media == PROTOBUF and not r.params.get("as"):
            if has_protobuf:
                protobuf_out = True
                break
            continue
        if _is_json(r) or r.media == YAML:
            break
    else:
        if ranges and all(r.media == PROTOBUF for r in ranges):
            request[_KEY] = Wire(resource, has_protobuf, False)
            served = [JSON, YAML, PROTOBUF] if has_protobuf else [JSON, YAML]
            return _json_status(status_body(
                406, "NotAcceptable",
                f"only the following media types are accepted: {', '.join(served)}"))
    request[_KEY] = Wire(resource, has_protobuf, protobuf_out)
    return None


def _wire(request: web.Request) -> Wire:
    found = request.get(_KEY)
    return found if isinstance(found, Wire) else Wire(None, False, False)


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";")[0].strip().lower() == PROTOBUF


async def read_body(request: web.Request) -> Any:
    """The request's object as JSON, from a JSON or an enveloped protobuf body (a JSON
    syntax error is a ValueError for the caller to answer)."""
    raw = await request.read()
    if not is_protobuf(request.headers.get("Content-Type", "")):
        return fields.decode(raw or b"{}")
    if request.method == "PATCH":  # a patch is never an object
        raise fail(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                   f"format - accepted media types include: {', '.join(PATCH_TYPES)}")
    wire = _wire(request)
    if not wire.has_protobuf:
        raise fail(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                   f"format - accepted media types include: {JSON}, {YAML}")
    try:
        return envelope.decode(raw)
    except envelope.EnvelopeError as e:
        kind = wire.resource.kind if wire.resource else "object"
        raise fail(400, "BadRequest", f"the object provided is unrecognized (must be of "
                   f"type {kind}): {e}") from None


def _json_status(body: dict[str, Any]) -> web.Response:
    return web.Response(status=int(body["code"]), body=json.dumps(body).encode(),
                        content_type=JSON)


def _protobuf(obj: dict[str, Any]) -> bytes | None:
    """The object in protobuf, None when it has no protobuf form; an object the schema
    cannot hold (a bug here, never the client's) is logged and answered in JSON."""
    try:
        return envelope.encode(obj)
    except (ValueError, TypeError) as e:
        _log.warning("answering %s %s in JSON: no protobuf form: %s", obj.get("kind"),
                     (obj.get("metadata") or {}).get("name"), e)
        return None


class ObjectResponse(web.Response):
    """An API object (or Status) written when sent, in the negotiated form."""

    def __init__(self, obj: dict[str, Any], status: int = 200,
                 headers: LooseHeaders | None = None) -> None:
        super().__init__(status=status, headers=headers)
        self.object = obj

    async def prepare(self, request: web.BaseRequest) -> Any:
        if self.prepared:
            return await super().prepare(request)
        data = None
        if isinstance(request, web.Request) and _wire(request).protobuf_out:
            data = _protobuf(self.object)
        if data is not None:
            self.body = data
            self.content_type = PROTOBUF
        else:
            self.body = json.dumps(self.object).encode()
            self.content_type = JSON
        return await super().prepare(request)


def error_response(exc: web.HTTPException) -> web.StreamResponse:
    """An error a handler raised as a JSON Status, as an ObjectResponse (so protobuf
    clients get it in protobuf); anything else unchanged."""
    try:
        body = json.loads(exc.text or "")
    except ValueError:
        return exc
    if not isinstance(body, dict) or body.get("kind") != "Status":
        return exc
    return ObjectResponse(body, exc.status)


class WatchStream(web.StreamResponse):
    """A watch answer: newline-separated JSON events, or protobuf frames."""

    def __init__(self, request: web.Request) -> None:
        self._protobuf = _wire(request).protobuf_out
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
