"""The REST verbs on one resource path, as the Kubernetes API defines them.

get, list (labelSelector, fieldSelector, limit + continue), watch (``?watch=1``: one JSON
event per line, BOOKMARKs when asked, ``timeoutSeconds``, ``sendInitialEvents`` ending the
initial ADDEDs with the ``k8s.io/initial-events-end`` BOOKMARK; a too-old resourceVersion
ends the stream with an ERROR event carrying a 410 Status), create, update (409 on a
stale resourceVersion), delete (graceful, finalizers kept; ``propagationPolicy`` and
``orphanDependents`` become the garbage collector's finalizers), patch (JSON patch, merge
patch, strategic merge patch and server-side apply, :mod:`.patch`; managedFields kept on
every write), deletecollection (DELETE on a
collection, with its selectors), the status subresource, ``pods/binding`` and
``pods/eviction``, the create-only request kinds (``bindings``, the self-subject reviews)
and ``dryRun=All`` (the API server's whole write but the commit: answered, not stored).
Media types are negotiated in :mod:`kubelet_sim.apiserver.http.encoding` (JSON, YAML,
protobuf, Tables and metadata-only answers), which reads the bodies and writes the
answers.
"""

from __future__ import annotations

import asyncio
import builtins
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from kubelet_sim.api.errors import (
    ApiError,
    BadRequest,
    Gone,
    Invalid,
    NotFound,
)
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver import token_request
from kubelet_sim.apiserver.defaulting import apply_defaults
from kubelet_sim.apiserver.deletion_policy import resolve_policy
from kubelet_sim.apiserver.http import component_statuses, list_options, pod_connect, reviews
from kubelet_sim.apiserver.http import field_validation as fields
from kubelet_sim.apiserver.http import patch as patching
from kubelet_sim.apiserver.http.access import AUTHORIZER, USER_KEY
from kubelet_sim.apiserver.http.custom import (
    custom_parts,
    refuse_other_media,
    serve_scale,
    served_as_stored,
    shown,
    stored,
    unknown_fields,
)
from kubelet_sim.apiserver.http.custom import table as custom_table
from kubelet_sim.apiserver.http.encoding import (
    JSON,
    Output,
    WatchStream,
    json_list,
    not_acceptable,
    output,
    read_body,
    respond,
)
from kubelet_sim.apiserver.http.paths import POD_CONNECT, POD_REQUESTS, Target
from kubelet_sim.apiserver.http.resources import BINDINGS, COMPONENT_STATUSES, ApiResource
from kubelet_sim.apiserver.http.status import error_body, fail, status_body
from kubelet_sim.apiserver.http.tables import table
from kubelet_sim.apiserver.http.workers import Workers
from kubelet_sim.apiserver.patch import apply
from kubelet_sim.apiserver.patch.retried import (
    applied_document,
    write_applied,
    write_patched,
)
from kubelet_sim.apiserver.server import APIServer

BOOKMARK_EVERY = 10.0  # seconds of quiet before a BOOKMARK, when the client allows them
PATCH_RETRIES = 5
# Live events a watch stream may hold unsent (its client not reading): one more and the
# watch is closed, as kube-apiserver's watch cache closes a watcher that cannot keep up.
WATCH_BUFFER = 1000
# initial events of a streaming list written before the loop serves anything else
INITIAL_EVENTS_PER_TURN = 100


def _answer(request: web.Request, body: Any, status: int = 200,
            warnings: list[str] | None = None) -> web.Response:
    """``body`` in the form the request negotiated (JSON, YAML or protobuf)."""
    return respond(request, body, status, fields.warning_headers(warnings or []))


def _output(request: web.Request) -> Output:
    return output(request)


def wants_table(request: web.Request) -> bool:
    return _output(request).as_kind == "Table"


def _go_type(r: ApiResource, suffix: str = "") -> str:
    """How kube-apiserver's messages name the Go type of an answer: ``*v1.PodList``."""
    return f"*{r.version}.{r.kind}{suffix}"


def _partial(obj: dict[str, Any], output: Output) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": output.meta_api_version,
            "metadata": obj.get("metadata") or {}}


def _success(code: int) -> dict[str, Any]:
    """The Status a subresource POST (binding, eviction) answers when it went through."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "code": code}


async def _body(request: web.Request) -> Any:
    try:
        return await read_body(request)
    except ValueError as e:
        raise fail(400, "BadRequest", f"the body of the request could not be decoded: {e}") \
            from None


def _request_kind(target: Target, body: dict[str, Any]) -> tuple[str, str]:
    """The kind and apiVersion a POST of a request kind is decoded as."""
    if target.subresource == "eviction":
        return "Eviction", str(body.get("apiVersion") or "policy/v1")
    if target.subresource == "binding":
        return "Binding", "v1"
    if target.subresource == "token":
        return token_request.KIND, token_request.API_VERSION
    return target.resource.kind, target.resource.group_version


def _dry_run(request: web.Request) -> bool:
    values = request.query.getall("dryRun", [])
    if any(v != "All" for v in values):
        raise fail(400, "BadRequest", f"unsupported dryRun value(s) {values}: only All")
    return bool(values)


class Rest:
    """The verbs of every stored resource. What can take long runs in ``workers``' threads,
    never on the event loop: lists, a watch's start, and every write (the write-delay
    fault sleeps in it, and the API server's lock may be held by another thread)."""

    def __init__(self, api: APIServer, workers: Workers,
                 components: component_statuses.Components | None = None) -> None:
        self.api = api
        self.workers = workers
        self.components = components or component_statuses.Components()

    async def handle(self, request: web.Request, target: Target) -> web.StreamResponse:
        method = request.method
        try:
            custom = custom_parts(target.resource) is not None
            if custom:
                refuse_other_media(request)  # custom resources are JSON only
            if target.subresource == "scale":
                return _answer(request, await serve_scale(
                    self.api, request, target.resource, target.name, target.namespace,
                    self.workers, _dry_run(request)))
            if target.subresource in POD_CONNECT:
                raise pod_connect.refuse(self.api, target)
            if target.subresource == "finalize":  # namespaces/<name>/finalize: PUT only
                if method != "PUT":
                    raise _not_allowed()
                body = await _body(request)
                return await self.workers.write(self.finalize, request, target, body,
                                                _dry_run(request))
            if target.resource == COMPONENT_STATUSES:  # computed, read only
                if method != "GET" or target.subresource or \
                        request.query.get("watch") in ("1", "true"):
                    raise _not_allowed()
                return component_statuses.serve(request, target, self.components)
            if not target.resource.stored or target.subresource in (*POD_REQUESTS, "token"):
                if method != "POST" or (target.name and not target.subresource):
                    raise _not_allowed()
                return await self.post_request(request, target)
            if not target.name:
                if method == "GET":
                    watching = request.query.get("watch") in ("1", "true")
                    list_options.check(request.query, watch=watching)
                    if watching:
                        return await self.watch(request, target)
                    return await self.list(request, target)
                if method == "POST":
                    body = await _body(request)
                    return await self.workers.write(
                        self.create, request, target, body, _dry_run(request),
                        fields.directive(request),
                        patching.field_manager(request, "CreateOptions"))
                if method == "DELETE" and "deletecollection" in target.resource.verbs \
                        and (target.namespace or not target.resource.namespaced):
                    body = await _body(request)
                    return await self.workers.write(self.delete_collection, request, target,
                                                    body)
                raise _not_allowed()
            if method == "GET":
                list_options.check(request.query, watch=False)
                return self.get(request, target)
            if method == "PUT":
                body = await _body(request)
                return await self.workers.write(
                    self.update, request, target, body, _dry_run(request),
                    fields.directive(request), patching.field_manager(request, "UpdateOptions"))
            if method == "PATCH":
                return await self.patch(request, target)
            if method == "DELETE":
                body = await _body(request)
                return await self.workers.write(self.delete, request, target, body)
            raise _not_allowed()
        except ApiError as err:
            return _answer(request, error_body(err, target.resource.plural,
                                               target.resource.group), err.code)

    # -- reads ----------------------------------------------------------------------------

    def get(self, request: web.Request, target: Target) -> web.Response:
        self._single_transform(request, target.resource)
        obj = self.api.get(target.resource.stored_kind, target.name, target.namespace)
        return _answer(request, self._shown(request, target.resource, obj))

    def _single_transform(self, request: web.Request, r: ApiResource) -> None:
        """406 when the request asked for a list's transformation of one object."""
        if _output(request).as_kind == "PartialObjectMetadataList":
            raise not_acceptable("you requested PartialObjectMetadataList, but the requested "
                                 f"object is not a list ({_go_type(r)})")

    async def list(self, request: web.Request, target: Target) -> web.Response:
        """A LIST, picked, copied and encoded in the read pool: never on the loop."""
        return await self.workers.read(self._list, request, target)

    def _list(self, request: web.Request, target: Target) -> web.Response:
        r = target.resource
        found = self.api.read_list(r.stored_kind, target.namespace or None,
                                   label_selector=request.query.get("labelSelector") or None,
                                   field_selector=request.query.get("fieldSelector") or None,
                                   limit=_int_param(request, "limit") or 0,
                                   continue_from=request.query.get("continue", ""),
                                   resource_version=request.query.get("resourceVersion", ""))
        items = found.items  # the stored objects: read through to_dict (a copy) only
        output = _output(request)
        if output.as_kind == "PartialObjectMetadata":
            raise not_acceptable("you requested PartialObjectMetadata, but the requested "
                                 f"object is a list ({_go_type(r, 'List')})")
        meta: dict[str, Any] = {"resourceVersion": found.resource_version}
        if found.continue_token:
            meta["continue"] = found.continue_token
        if found.remaining_item_count is not None:
            meta["remainingItemCount"] = found.remaining_item_count
        if wants_table(request):
            body = _table(r, items, found.resource_version,
                          request.query.get("includeObject", "Metadata"),
                          found.continue_token, output.meta_api_version)
            body["metadata"] = meta
            return _answer(request, body)
        if output.as_kind == "PartialObjectMetadataList":
            return _answer(request, {
                "kind": "PartialObjectMetadataList", "apiVersion": output.meta_api_version,
                "metadata": meta,
                "items": [_partial({"metadata": o.metadata.to_dict()}, output) for o in items]})
        if output.media == JSON and served_as_stored(r):  # the stored objects' own JSON
            return json_list.respond_list(json_list.head(f"{r.kind}List", r.group_version, meta),
                                          self.api.encoded_json(items))
        return _answer(request, {"kind": f"{r.kind}List", "apiVersion": r.group_version,
                                 "metadata": meta,
                                 "items": [shown(r, o.to_dict()) for o in items]})

    async def watch(self, request: web.Request, target: Target) -> web.StreamResponse:
        r = target.resource
        self._single_transform(request, r)
        timeout = float(_int_param(request, "timeoutSeconds") or 1800)
        response = WatchStream(request)
        await response.prepare(request)
        bookmarks = request.query.get("allowWatchBookmarks") in ("1", "true")
        labels = request.query.get("labelSelector") or None
        fields = request.query.get("fieldSelector") or None
        initial: builtins.list[Resource] | None = None
        since: str | None = request.query.get("resourceVersion") or None
        try:
            if request.query.get("sendInitialEvents") in ("1", "true"):
                # a streaming list: the current objects, then a BOOKMARK marking their end
                found = await self.workers.read(self.api.read_list, r.stored_kind,
                                                target.namespace or None, labels, fields)
                initial, since = found.items, found.resource_version
            # without a resourceVersion it starts with every object: off the loop too
            watch = await self.workers.read(self.api.watch, r.stored_kind, target.namespace or None,
                                            labels, fields, since, buffer_limit=WATCH_BUFFER)
        except Gone as err:
            await _send(response, {"type": "ERROR", "object": status_body(
                410, "Expired", f"too old resource version: {err.message}")})
            return response
        except ApiError as err:
            await _send(response, {"type": "ERROR", "object": error_body(err, r.plural, r.group)})
            return response
        if initial is not None:
            for sent, obj in enumerate(initial, 1):
                await _send(response, {"type": "ADDED",
                                       "object": self._shown(request, r, obj)})
                if sent % INITIAL_EVENTS_PER_TURN == 0:
                    await asyncio.sleep(0)  # other requests get the loop in between
            await _send(response, {"type": "BOOKMARK", "object": {
                "kind": r.kind, "apiVersion": r.group_version,
                "metadata": {"resourceVersion": since,
                             "annotations": {"k8s.io/initial-events-end": "true"}}}})
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            while (left := deadline - loop.time()) > 0:
                try:
                    event = await asyncio.wait_for(watch.next(),
                                                   min(left, BOOKMARK_EVERY))
                except TimeoutError:
                    if bookmarks and loop.time() < deadline:
                        await _send(response, {"type": "BOOKMARK", "object": {
                            "kind": r.kind, "apiVersion": r.group_version,
                            "metadata": {"resourceVersion": self.api.resource_version}}})
                    continue
                if event is None:
                    break
                await _send(response, {"type": event.type, "object": self._shown(
                    request, r, event.object)})
        except ConnectionError:
            pass  # the client went away (reset, broken pipe, closed): nothing more to send
        finally:
            watch.stop()
        return response

    def _shown(self, request: web.Request, r: ApiResource, obj: Resource) -> dict[str, Any]:
        """An object as the client asked for it: itself, a one-row Table, or its
        metadata alone (PartialObjectMetadata)."""
        output = _output(request)
        if output.as_kind == "Table":
            return _table(r, [obj], obj.metadata.resource_version or "",
                          request.query.get("includeObject", "Metadata"),
                          api_version=output.meta_api_version)
        if output.as_kind == "PartialObjectMetadata":
            return _partial(obj.to_dict(), output)
        return shown(r, obj.to_dict())

    # -- writes ---------------------------------------------------------------------------

    def create(self, request: web.Request, target: Target, body: Any, dry_run: bool,
               mode: str, manager: str) -> web.Response:
        obj, warnings = self._object(target, body, mode)
        self._record(obj, None, manager, target)
        self.api.await_admission(obj)
        created = self.api.create(obj, dry_run=dry_run)
        return _answer(request, shown(target.resource, created.to_dict()), 201, warnings)

    def update(self, request: web.Request, target: Target, body: Any, dry_run: bool,
               mode: str, manager: str) -> web.Response:
        obj, warnings = self._object(target, body, mode)
        if obj.name != target.name:
            raise BadRequest(f"the name of the object ({obj.name}) does not match the name on "
                             f"the URL ({target.name})")
        current = self.api.get(target.resource.stored_kind, target.name, target.namespace)
        self._record(obj, shown(target.resource, current.to_dict()), manager, target)
        write = self.api.update_status if target.subresource else self.api.update
        return _answer(request, shown(target.resource, write(obj, dry_run=dry_run).to_dict()),
                       warnings=warnings)

    def finalize(self, request: web.Request, target: Target, body: Any,
                 dry_run: bool) -> web.Response:
        """``PUT namespaces/<name>/finalize``: the sent ``spec.finalizers`` stored."""
        obj, warnings = self._object(target, body, fields.directive(request))
        if obj.name != target.name:
            raise BadRequest(f"the name of the object ({obj.name}) does not match the name on "
                             f"the URL ({target.name})")
        if dry_run:
            return _answer(request, shown(target.resource, self.api.get(
                "Namespace", target.name).to_dict()), warnings=warnings)
        return _answer(request, shown(target.resource, self.api.finalize(obj).to_dict()),
                       warnings=warnings)

    async def patch(self, request: web.Request, target: Target) -> web.Response:
        kind = patching.patch_type(request, target)
        applying = kind == patching.APPLY_PATCH
        manager = patching.field_manager(request, "PatchOptions", applying)
        dry_run, mode = _dry_run(request), fields.directive(request)
        if applying:
            config = patching.decode_apply(await patching.read_body(request))
            return await self.workers.write(self._apply, request, target, config, manager,
                                            patching.force(request), dry_run, mode)
        try:  # every patch type but apply is JSON, whatever its media type says
            patch = fields.decode(await patching.read_body(request) or b"{}")
        except ValueError as e:
            raise fail(400, "BadRequest", f"the body of the request could not be decoded: {e}") \
                from None
        return await self.workers.write(self._patch, request, target, kind, patch, manager,
                                        dry_run, mode)

    def _patch(self, request: web.Request, target: Target, kind: str, patch: Any,
               manager: str, dry_run: bool, mode: str) -> web.Response:
        """A JSON, merge or strategic merge patch, retried on a conflict it did not ask
        for (no resourceVersion in it)."""
        problems = fields.duplicate_fields(patch)
        r = target.resource
        warnings: list[str] = []

        def patched(current: Resource) -> Resource:
            live = shown(r, current.to_dict())
            merged = patching.patched(kind, live, patch, target, mode)
            if not isinstance(merged, dict):
                raise Invalid("patch", f"cannot unmarshal {type(merged).__name__} into an "
                                       f"object of kind {r.kind}")
            merged = stored(r, merged)
            try:
                unknown = unknown_fields(r, merged)
            except BadRequest as err:
                # what does not decode after patching is the patch's fault: 422 (the
                # same in a body is 400)
                raise Invalid("patch", err.message) from None
            warnings[:] = fields.settle(problems + unknown, mode)
            obj = Resource.from_dict(merged)
            self._record(obj, live, manager, target)
            return obj

        written = write_patched(self.api, r.stored_kind, target.name, target.namespace,
                                target.subresource, patched, dry_run=dry_run)
        return _answer(request, shown(r, written.to_dict()), warnings=warnings)

    def _apply(self, request: web.Request, target: Target, config: dict[str, Any],
               manager: str, force: bool, dry_run: bool, mode: str) -> web.Response:
        """Server-side apply: create when absent (201), else merge and take ownership."""
        r = target.resource
        patching.check_apply_config(config, target)
        problems = fields.duplicate_fields(config)
        problems += fields.drop_unknown_fields(config, r.kind, r.group_version)
        warnings = fields.settle(problems, mode)
        # a resourceVersion in the configuration is a precondition, as in any write
        wanted = str((config.get("metadata") or {}).get("resourceVersion") or "")

        def applied(current: Resource | None) -> Resource:
            live = shown(r, current.to_dict()) if current is not None else None
            result = apply(live, config, manager, force,
                           patching.write_of(target, self.api.clock.now()))
            doc = applied_document(result, live, target.name,
                                   target.namespace if r.namespaced else None)
            return Resource.from_dict(stored(r, doc))

        written, created = write_applied(self.api, r.stored_kind, target.name,
                                         target.namespace, target.subresource, applied, wanted,
                                         dry_run=dry_run, before_create=self.api.await_admission)
        return _answer(request, shown(r, written.to_dict()), 201 if created else 200, warnings)

    def _record(self, obj: Resource, live: dict[str, Any] | None, manager: str,
                target: Target) -> None:
        """Set the managedFields ``obj`` is written with (the fields as defaulted)."""
        defaulted = obj.copy()
        apply_defaults(defaulted)
        patching.record_update(obj, live, shown(target.resource, defaulted.to_dict()),
                               manager, target, self.api.clock.now())

    def delete(self, request: web.Request, target: Target, options: Any) -> web.Response:
        opts = _DeleteOptions.read(request, options)
        obj = self.api.delete(target.resource.stored_kind, target.name, target.namespace,
                              grace_period_seconds=opts.grace, propagation_policy=opts.policy,
                              uid=opts.uid, resource_version=opts.resource_version,
                              dry_run=opts.dry_run)
        return _answer(request, shown(target.resource, obj.to_dict()))

    def delete_collection(self, request: web.Request, target: Target,
                          options: Any) -> web.Response:
        """DELETE on a collection: each object its selectors select is deleted with the
        DeleteOptions (a precondition would name one object: none is honoured); the answer
        is the list of the deleted objects as each delete left them."""
        list_options.check(request.query, watch=False)
        r = target.resource
        opts = _DeleteOptions.read(request, options)
        found = self.api.list(r.stored_kind, target.namespace or None,
                              label_selector=request.query.get("labelSelector") or None,
                              field_selector=request.query.get("fieldSelector") or None)
        deleted: builtins.list[dict[str, Any]] = []
        for obj in found.items:
            try:
                obj = self.api.delete(r.stored_kind, obj.name, obj.namespace,
                                      grace_period_seconds=opts.grace,
                                      propagation_policy=opts.policy, dry_run=opts.dry_run)
            except NotFound:
                continue  # gone meanwhile: not this request's deletion
            deleted.append(shown(r, obj.to_dict()))
        return _answer(request, {"kind": f"{r.kind}List", "apiVersion": r.group_version,
                                 "metadata": {"resourceVersion": self.api.resource_version},
                                 "items": deleted})

    # -- requests that are not stored -------------------------------------------------------

    async def post_request(self, request: web.Request, target: Target) -> web.Response:
        """POST of a request kind: ``pods/binding`` or ``bindings``, ``pods/eviction``, the
        self-subject reviews, the subject access reviews."""
        body = await _body(request)
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        # a field of the wrong type is the decode error kube-apiserver answers (400)
        fields.drop_unknown_fields(body, *_request_kind(target, body))
        if target.subresource == "eviction":
            return await self.workers.write(self.evict, request, target, body)
        if target.subresource == "binding" or target.resource == BINDINGS:
            return await self.workers.write(self.bind, request, target, body)
        if target.subresource == "token":
            return await self.workers.write(self.token, request, target, body)
        _dry_run(request)
        return _answer(request, reviews.review(
            target.resource, body, request.app[AUTHORIZER], request.get(USER_KEY),
            target.namespace), 201)

    def bind(self, request: web.Request, target: Target, body: dict[str, Any]) -> web.Response:
        _check_kind(body, "Binding", ("v1",))
        name = (body.get("metadata") or {}).get("name") or ""
        if target.name and name != target.name:
            raise BadRequest("name in URL does not match name in Binding object")
        node = body.get("target") or {}
        if node.get("kind", "") not in ("", "Node"):
            raise Invalid("target.kind", f'Unsupported value: "{node["kind"]}": supported '
                          'values: "Node", "<empty>"')
        if not node.get("name"):
            raise Invalid("target.name", "Required value")
        if not _dry_run(request):
            annotations = (body.get("metadata") or {}).get("annotations") or {}
            self.api.bind(name, target.namespace, node["name"], annotations,
                          uid=(body.get("metadata") or {}).get("uid"))
        return _answer(request, _success(201), 201)

    def token(self, request: web.Request, target: Target, body: dict[str, Any]) -> web.Response:
        """``serviceaccounts/<name>/token``: a TokenRequest answered with its token."""
        _dry_run(request)
        answered = self.api.request_token(target.namespace, target.name, body)
        return _answer(request, answered, 201)

    def evict(self, request: web.Request, target: Target, body: dict[str, Any]) -> web.Response:
        _check_kind(body, "Eviction", ("policy/v1", "policy/v1beta1"))
        if (body.get("metadata") or {}).get("name") != target.name:
            raise BadRequest("name in URL does not match name in Eviction object")
        opts = _DeleteOptions.read(request, body.get("deleteOptions") or {})
        self.api.evict(target.name, target.namespace, dry_run=opts.dry_run,
                       grace_period_seconds=opts.grace, uid=opts.uid,
                       resource_version=opts.resource_version, propagation_policy=opts.policy)
        return _answer(request, _success(201), 201)

    def _object(self, target: Target, body: Any, mode: str) -> tuple[Resource, builtins.list[str]]:
        """The object a create or update sends, without the fields its kind does not
        define, and the warnings to answer with (Strict: BadRequest instead)."""
        r = target.resource
        if not isinstance(body, dict):
            raise BadRequest("the body must be a JSON object")
        # as the API server's decoder: a missing kind or apiVersion is the URL's
        body.setdefault("kind", r.kind)
        body.setdefault("apiVersion", r.group_version)
        if body.get("kind") != r.kind or body.get("apiVersion") != r.group_version:
            raise BadRequest(f"the API version in the data ({body.get('apiVersion')}) and kind "
                             f"({body.get('kind')}) do not match {r.group_version} {r.kind}")
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            unknown_fields(r, body)  # the decoder's 400 for a metadata of the wrong type
            raise BadRequest("metadata must be an object")
        if r.namespaced:
            if meta.get("namespace") and meta["namespace"] != target.namespace:
                raise BadRequest("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
            meta["namespace"] = target.namespace
        body = stored(r, body)
        problems = fields.duplicate_fields(body) + unknown_fields(r, body)
        return Resource.from_dict(body), fields.settle(problems, mode)


def _table(r: ApiResource, items: list[Resource], resource_version: str, include: str,
           continue_token: str = "", api_version: str = "meta.k8s.io/v1") -> dict[str, Any]:
    """The Table of ``items``: a definition's printer columns, or the built-in ones."""
    if custom_parts(r) is not None:
        return custom_table(r, items, resource_version, include, continue_token, api_version)
    return table(r.kind, items, resource_version, include, continue_token, api_version)


def _not_allowed() -> web.HTTPException:
    return fail(405, "MethodNotAllowed",
                "the server does not allow this method on the requested resource")


def _check_kind(body: dict[str, Any], kind: str, api_versions: tuple[str, ...]) -> None:
    """A request body's kind and apiVersion, when it says them, must be ``kind`` in one
    of ``api_versions``."""
    sent_kind, sent_version = body.get("kind", kind), body.get("apiVersion", api_versions[0])
    if sent_kind != kind or sent_version not in api_versions:
        raise BadRequest(f"the API version in the data ({sent_version}) and kind "
                         f"({sent_kind}) do not match {api_versions[0]} {kind}")


@dataclass(frozen=True)
class _DeleteOptions:
    """DeleteOptions from the query and the body (the query wins)."""

    grace: int | None
    policy: str | None
    uid: str | None
    resource_version: str | None
    dry_run: bool

    @classmethod
    def read(cls, request: web.Request, options: Any) -> _DeleteOptions:
        if options != {}:  # a body: decoded as kube-apiserver decodes DeleteOptions
            fields.drop_unknown_fields(options, "DeleteOptions", "meta.k8s.io/v1")
        options = options if isinstance(options, dict) else {}
        grace = _int_param(request, "gracePeriodSeconds")
        if grace is None and options.get("gracePeriodSeconds") is not None:
            grace = int(options["gracePeriodSeconds"])
        pre = options.get("preconditions") or {}
        policy = resolve_policy(
            request.query.get("propagationPolicy") or options.get("propagationPolicy"),
            _orphan_dependents(request, options))
        sent = options.get("dryRun") or []
        if any(v != "All" for v in sent):
            raise fail(400, "BadRequest", f"unsupported dryRun value(s) {sent}: only All")
        return cls(grace, policy, pre.get("uid"), pre.get("resourceVersion"),
                   _dry_run(request) or bool(sent))


def _orphan_dependents(request: web.Request, options: dict[str, Any]) -> bool | None:
    """The legacy ``orphanDependents`` (query or DeleteOptions), None when not sent."""
    raw = request.query.get("orphanDependents")
    if raw is not None:
        return raw in ("1", "true", "True")
    sent = options.get("orphanDependents")
    return None if sent is None else bool(sent)


def _int_param(request: web.Request, name: str) -> int | None:
    raw = request.query.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise fail(400, "BadRequest", f"{name}: invalid integer {raw!r}") from None
    if not -(2**63) <= value < 2**63:  # what Go's strconv.ParseInt refuses
        raise fail(400, "BadRequest", f"{name}: value out of range {raw!r}")
    return value


async def _send(response: WatchStream, event: dict[str, Any]) -> None:
    await response.send(event)
