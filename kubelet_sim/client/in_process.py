""":class:`InProcessClient`: the :class:`~kubelet_sim.client.kube_client.KubeClient` over
the :class:`~kubelet_sim.apiserver.server.APIServer` object of the same process — what
the components inside ``up`` call today, made awaitable.

Every verb is the API server's own call, so the errors are the ones it raises. Patches
are applied here as the HTTP front applies them (JSON, merge and strategic merge patch,
and server-side apply with its managedFields, against the current object, retried when
another write raced them unless the patch names a resourceVersion). Unlike the HTTP
front, the other writes here record no managedFields (as today's in-process writers).
Watches come from the API server's own; the in-process server sends no
BOOKMARKs unless ``bookmark_every`` asks for them (a bookmark is the server's option,
never a promise), and ``timeout_seconds`` ends a watch on this client's clock.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator
from typing import Any, cast

from kubelet_sim.api.errors import (
    BadRequest,
    Invalid,
    InvalidOptions,
    NotFound,
)
from kubelet_sim.api.model import JSON, KINDS, Resource, format_time, kind_info
from kubelet_sim.api.rest_names import plural as builtin_plural
from kubelet_sim.apiserver.patch import (
    Write,
    apply,
    apply_json_patch,
    apply_merge_patch,
    apply_strategic_merge_patch,
    decode_operations,
    kind_node,
)
from kubelet_sim.apiserver.patch.retried import applied_document, write_applied, write_patched
from kubelet_sim.apiserver.patch.schema import UNTYPED_NODE
from kubelet_sim.apiserver.server import APIServer, ResourceList
from kubelet_sim.apiserver.watch import Watch, WatchEvent
from kubelet_sim.client.kube_client import (
    ADDED,
    APPLY_PATCH,
    INITIAL_EVENTS_END,
    JSON_PATCH,
    MERGE_PATCH,
    PATCH_TYPES,
    KubeClient,
    KubeWatch,
    ServedKind,
    bookmark,
)
from kubelet_sim.utils.clock import Clock

# what discovery lists for a stored kind (a Namespace goes one by one: no deletecollection)
VERBS = frozenset({"create", "delete", "deletecollection", "get", "list", "patch", "update",
                   "watch"})

class InProcessClient:
    """The API server object, awaitable. ``bookmark_every``: seconds of quiet after
    which a watch that allows bookmarks gets one (None: never)."""

    def __init__(self, api: APIServer, bookmark_every: float | None = None) -> None:
        self.api = api
        self.bookmark_every = bookmark_every

    @property
    def clock(self) -> Clock:
        """The API server's clock (a test's fake clock moves both)."""
        return self.api.clock

    async def get(self, kind: str, name: str, namespace: str = "") -> Resource:
        return self.api.get(kind, name, namespace)

    async def list(self, kind: str, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   *, limit: int = 0, continue_from: str = "",
                   resource_version: str = "") -> ResourceList:
        return self.api.list(kind, namespace, label_selector, field_selector, limit=limit,
                             continue_from=continue_from, resource_version=resource_version)

    async def create(self, obj: Resource) -> Resource:
        return self.api.create(obj)

    async def update(self, obj: Resource) -> Resource:
        return self.api.update(obj)

    async def update_status(self, obj: Resource) -> Resource:
        return self.api.update_status(obj)

    async def patch(self, kind: str, name: str, patch: Any, namespace: str = "",
                    subresource: str = "", *, patch_type: str = MERGE_PATCH,
                    field_manager: str = "", force: bool = False) -> Resource:
        if patch_type not in PATCH_TYPES:
            raise BadRequest(f"unknown patch type {patch_type!r}")
        if subresource not in ("", "status"):
            raise NotFound(f"{kind}/{subresource}", name)
        if patch_type == APPLY_PATCH:
            return self._apply(kind, name, patch, namespace, subresource, field_manager, force)

        def patched(current: Resource) -> Resource:
            merged = _patched(patch_type, current, patch)
            if not isinstance(merged, dict):
                raise Invalid("patch", f"cannot unmarshal {type(merged).__name__} into an "
                                       f"object of kind {kind}")
            return Resource.from_dict(merged)

        return write_patched(self.api, kind, name, namespace, subresource, patched)

    def _apply(self, kind: str, name: str, config: Any, namespace: str, subresource: str,
               manager: str, force: bool) -> Resource:
        """Server-side apply as the HTTP front runs it: create when absent, else merge
        ``config`` into the live object, taking the fields ``manager`` sets (ApplyConflict
        where another manager owns one, unless ``force``). Field validation of the
        configuration is the HTTP front's."""
        if not manager:
            raise InvalidOptions("PatchOptions", [{
                "reason": "FieldValueRequired", "field": "fieldManager",
                "message": "Required value: is required for apply patch"}])
        if not isinstance(config, dict):
            raise BadRequest("error decoding YAML: the apply configuration is not an object")
        info = kind_info(kind)
        wanted = str((config.get("metadata") or {}).get("resourceVersion") or "")
        write = Write(kind_node(info.api_version, kind) or UNTYPED_NODE, info.api_version,
                      subresource, info.status_subresource, format_time(self.api.clock.now()))

        def applied(current: Resource | None) -> Resource:
            live = current.to_dict() if current is not None else None
            result = apply(live, config, manager, force, write)
            return Resource.from_dict(applied_document(
                result, live, name, (namespace or "default") if info.namespaced else None))

        return write_applied(self.api, kind, name, namespace, subresource, applied, wanted)[0]

    async def delete(self, kind: str, name: str, namespace: str = "", *,
                     grace_period_seconds: int | None = None, uid: str | None = None,
                     resource_version: str | None = None,
                     propagation_policy: str | None = None) -> Resource | None:
        return self.api.delete(kind, name, namespace,
                               grace_period_seconds=grace_period_seconds, uid=uid,
                               resource_version=resource_version,
                               propagation_policy=propagation_policy)

    async def bind(self, name: str, namespace: str, node_name: str,
                   annotations: dict[str, str] | None = None, uid: str | None = None) -> None:
        self.api.bind(name, namespace, node_name, annotations, uid=uid)

    async def evict(self, name: str, namespace: str, *, dry_run: bool = False,
                    grace_period_seconds: int | None = None, uid: str | None = None,
                    resource_version: str | None = None,
                    propagation_policy: str | None = None) -> None:
        self.api.evict(name, namespace, dry_run=dry_run,
                       grace_period_seconds=grace_period_seconds, uid=uid,
                       resource_version=resource_version,
                       propagation_policy=propagation_policy)

    async def request_token(self, namespace: str, name: str, request: JSON) -> JSON:
        return self.api.request_token(namespace, name, request)

    async def watch(self, kind: str, namespace: str | None = None,
                    label_selector: str | None = None, field_selector: str | None = None,
                    resource_version: str | None = None, *, allow_bookmarks: bool = False,
                    timeout_seconds: int | None = None,
                    send_initial_events: bool = False) -> KubeWatch:
        initial: list[WatchEvent] = []
        if send_initial_events:
            listed = self.api.list(kind, namespace, label_selector, field_selector)
            initial = [WatchEvent(ADDED, obj) for obj in listed.items]
            initial.append(bookmark(kind, listed.resource_version, {INITIAL_EVENTS_END: "true"}))
            resource_version = listed.resource_version
        watch = self.api.watch(kind, namespace, label_selector, field_selector,
                               resource_version)
        if not initial and not timeout_seconds and not (allow_bookmarks and self.bookmark_every):
            return watch  # the server's own watch is a KubeWatch already
        return _TimedWatch(self.api, kind, watch, timeout_seconds,
                           self.bookmark_every if allow_bookmarks else None, initial)

    async def finalize(self, namespace: Resource) -> Resource:
        return self.api.finalize(namespace)

    async def served_kinds(self) -> builtins.list[ServedKind]:
        out = []
        for kind, info in KINDS.items():
            plural = builtin_plural(kind)
            if plural is not None:
                verbs = VERBS - {"deletecollection"} if kind == "Namespace" else VERBS
                out.append(ServedKind(kind, info.api_version, plural, info.namespaced, verbs,
                                      (info.api_version,)))
        for custom in self.api.custom.kinds():
            if not custom.adopts_builtin:
                versions = tuple(f"{custom.group}/{v.name}" for v in custom.versions
                                 if v.served)
                out.append(ServedKind(custom.store_kind,
                                      f"{custom.group}/{custom.storage_version.name}",
                                      custom.plural, custom.namespaced, VERBS, versions))
        return out

    async def close(self) -> None:
        return None


def _patched(patch_type: str, current: Resource, patch: Any) -> Any:
    doc = current.to_dict()
    if patch_type == JSON_PATCH:
        return apply_json_patch(doc, decode_operations(patch, True))
    if patch_type == MERGE_PATCH:
        return apply_merge_patch(doc, patch)
    node = kind_node(kind_info(current.kind).api_version, current.kind) or UNTYPED_NODE
    return apply_strategic_merge_patch(doc, patch, node)


class _TimedWatch:
    """The server's watch, after a streaming list's ``initial`` events, ended after
    ``timeout`` seconds and with a BOOKMARK (at the server's newest resourceVersion)
    after every ``every`` seconds without an event."""

    def __init__(self, api: APIServer, kind: str, watch: Watch, timeout: float | None,
                 every: float | None, initial: list[WatchEvent]) -> None:
        self._api, self._kind, self._watch = api, kind, watch
        self._initial = initial  # a streaming list's ADDEDs and its closing BOOKMARK
        loop = asyncio.get_running_loop()
        self._deadline = loop.time() + timeout if timeout else None
        self._every = every

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        if self._initial:
            return self._initial.pop(0)
        loop = asyncio.get_running_loop()
        waits = [w for w in (self._every,
                             None if self._deadline is None else self._deadline - loop.time())
                 if w is not None]
        if self._deadline is not None and loop.time() >= self._deadline:
            self.stop()
        try:
            event = await asyncio.wait_for(self._watch.next(), min(waits) if waits else None)
        except TimeoutError:
            if self._deadline is not None and loop.time() >= self._deadline:
                self.stop()
                raise StopAsyncIteration from None
            return bookmark(self._kind, self._api.resource_version)
        if event is None:
            raise StopAsyncIteration
        return event

    def stop(self) -> None:
        self._initial.clear()
        self._watch.stop()


def as_client(api: APIServer | KubeClient) -> KubeClient:
    """``api`` as a KubeClient: the in-process server wrapped, any client as it is."""
    return InProcessClient(api) if isinstance(api, APIServer) else api


class _NoServerHere:
    """Stands for the in-process server in a component that runs over a client: any use
    names the component still reading the server object directly."""

    def __init__(self, component: str) -> None:
        self._component = component

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"{self._component} used the in-process API server "
                           f"({name}) but runs over a client to another process")


def in_process_server(api: APIServer | KubeClient, component: str) -> APIServer:
    """The in-process server behind ``api``; over a client to another process, a
    stand-in that fails loudly where a component still reads the server object."""
    if isinstance(api, APIServer):
        return api
    if isinstance(api, InProcessClient):
        return api.api
    return cast(APIServer, _NoServerHere(component))


def server_or_client(api: APIServer | KubeClient) -> APIServer | KubeClient:
    """The in-process server when there is one (its writers write inside the call), else
    the client."""
    if isinstance(api, InProcessClient):
        return api.api
    return api
