""":class:`HttpKubeClient`: the :class:`~kubelet_sim.client.kube_client.KubeClient` over
HTTPS, from a kubeconfig, to our ``kubelet-sim apiserver`` or any kube-apiserver.

What it keeps of client-go's rest client:

* paths from the kind table (:mod:`kubelet_sim.api.rest_names` and the object model's
  apiVersions); a kind outside it (a custom resource, ``Widget.example.com``) is found
  once by discovery (``/apis/<group>``, then the group version's resource list);
* JSON bodies both ways; every failure's ``Status`` becomes the exception the in-process
  server raises (:mod:`kubelet_sim.client.status_errors`);
* a token-bucket limit on requests (:mod:`kubelet_sim.client.rate_limit`, 5 QPS with a
  burst of 10 unless told otherwise), taken before every attempt, watches included;
* retries only where they are safe: a 429 or 5xx that carries ``Retry-After`` is sent
  again after that many seconds (the server did not act on it), up to ``max_retries``
  times; a GET that met a connection error (refused, reset, closed early) is sent again
  after an exponential back-off; a write that met one is not (it may have been
  applied) and raises :class:`~kubelet_sim.client.kube_client.ApiUnreachable`;
* watches as a stream of JSON lines (``watch=1``, ``allowWatchBookmarks``,
  ``timeoutSeconds``); an ERROR line raises its Status's exception (410: ``Gone``); the
  end of the stream ends the iteration, and resuming is the informer's job.

Sleeps (Retry-After, back-off, the limiter) are on the injected clock.
"""

from __future__ import annotations

import asyncio
import builtins
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp

from kubelet_sim.api.errors import ApiError, BadRequest, NotFound
from kubelet_sim.api.model import (
    JSON,
    KindInfo,
    Resource,
    kind_info,
    register_custom_kind,
    served_kinds,
    wire_kind,
)
from kubelet_sim.api.rest_names import plural as builtin_plural
from kubelet_sim.apiserver.server import ResourceList
from kubelet_sim.apiserver.watch import WatchEvent
from kubelet_sim.client.http.discovery import group_versions, kinds_in
from kubelet_sim.client.kube_client import (
    APPLY_PATCH,
    BOOKMARK,
    ERROR,
    MERGE_PATCH,
    PATCH_TYPES,
    ApiUnreachable,
    KubeWatch,
    ServedKind,
    bookmark,
)
from kubelet_sim.client.kubeconfig import ClientConfig, load_kubeconfig
from kubelet_sim.client.rate_limit import DEFAULT_BURST, DEFAULT_QPS, TokenBucket
from kubelet_sim.client.status_errors import error_from_status
from kubelet_sim.utils.clock import Backoff, Clock, RealClock

log = logging.getLogger(__name__)

MAX_RETRIES = 10  # client-go's rest client: at most 10 retries of one request
# a GET's back-off after a connection error: 0.2 s doubling to 3.2 s
CONNECTION_BACKOFF = Backoff(duration=0.2, factor=2.0, jitter=0.1, steps=MAX_RETRIES + 1,
                             cap=3.2)
# how long one discovery is used again (real seconds; client-go's memory-cached
# discovery is kept until invalidated, and the controllers re-read it every 30 s)
DISCOVERY_TTL = 5.0
READ_BUFFER = 4 << 20  # a watch line holds one object: up to the server's 3 MiB bodies
USER_AGENT = "kubelet-sim/v0.0.0 (linux/amd64) kubernetes/client"
CONNECTION_ERRORS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError,
                     ConnectionError, asyncio.TimeoutError)


@dataclass(frozen=True)
class RestResource:
    """Where a kind is served: ``/api/v1`` or ``/apis/<group>/<version>``, its plural."""

    kind: str  # the object model's key (``Pod``, ``Widget.example.com``)
    group_version: str
    plural: str
    namespaced: bool

    @property
    def prefix(self) -> str:
        return f"/api/{self.group_version}" if "/" not in self.group_version \
            else f"/apis/{self.group_version}"

    def path(self, namespace: str | None, name: str = "", subresource: str = "") -> str:
        out = self.prefix
        if self.namespaced and namespace:
            out += f"/namespaces/{namespace}"
        out += f"/{self.plural}"
        if name:
            out += f"/{name}"
        if subresource:
            out += f"/{subresource}"
        return out


def builtin_resource(kind: str) -> RestResource | None:
    """A built-in kind's REST resource, from the kind table."""
    plural = builtin_plural(kind)
    info = served_kinds().get(kind)
    if plural is None or info is None:
        return None
    return RestResource(kind, info.api_version, plural, info.namespaced)


class HttpKubeClient:
    """The Kubernetes API over HTTPS. ``qps`` <= 0 turns the rate limit off."""

    def __init__(self, config: ClientConfig, *, qps: float = DEFAULT_QPS,
                 burst: int = DEFAULT_BURST, clock: Clock | None = None,
                 max_retries: int = MAX_RETRIES,
                 connection_backoff: Backoff = CONNECTION_BACKOFF,
                 user_agent: str = USER_AGENT) -> None:
        self.config = config
        self.clock: Clock = clock or RealClock()
        self.limiter = TokenBucket(qps, burst, self.clock)
        self.max_retries = max_retries
        self.connection_backoff = connection_backoff
        self.user_agent = user_agent
        self.requests = 0  # attempts sent (retries included)
        self._session: aiohttp.ClientSession | None = None
        self._discovered: dict[str, RestResource] = {}
        self._served: tuple[float, builtins.list[ServedKind]] | None = None  # (when, what)

    @classmethod
    def from_kubeconfig(cls, path: Path, context: str = "", **options: Any) -> HttpKubeClient:
        return cls(load_kubeconfig(path, context), **options)

    # ------------------------------------------------------------------ transport
    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Accept": "application/json", "User-Agent": self.user_agent}
            if self.config.token:
                headers["Authorization"] = f"Bearer {self.config.token}"
            connector = aiohttp.TCPConnector(ssl=self.config.ssl_context())
            self._session = aiohttp.ClientSession(
                self.config.server, headers=headers, connector=connector,
                read_bufsize=READ_BUFFER, timeout=aiohttp.ClientTimeout(total=None))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def _send(self, method: str, path: str, *, params: dict[str, str] | None = None,
                    body: Any = None, content_type: str = "application/json",
                    kind: str = "", name: str = "", namespace: str = "") -> Any:
        """One request, retried where that is safe; the decoded answer."""
        data = None if body is None else (
            body if isinstance(body, bytes) else json.dumps(body).encode())
        headers = {"Content-Type": content_type} if data is not None else {}
        attempt = 0
        while True:
            await self.limiter.accept()
            self.requests += 1
            try:
                async with self._open().request(
                        method, path, params=params, data=data, headers=headers,
                        server_hostname=self.config.tls_server_name or None) as resp:
                    raw = await resp.read()
                    status, retry_after = resp.status, resp.headers.get("Retry-After")
            except CONNECTION_ERRORS as err:
                if method != "GET" or attempt >= self.max_retries:
                    raise ApiUnreachable(f"{method} {path}: {err or type(err).__name__}") \
                        from None
                delays = self.connection_backoff.delays()
                await self.clock.sleep(delays[min(attempt, len(delays) - 1)] if delays else 0)
                attempt += 1
                continue
            if status < 400:
                return json.loads(raw) if raw else None
            wait = _retry_after(retry_after)
            if (status == 429 or status >= 500) and wait is not None \
                    and attempt < self.max_retries:
                log.debug("%s %s: %d, retrying after %ss", method, path, status, wait)
                await self.clock.sleep(wait)
                attempt += 1
                continue
            raise error_from_status(_decoded(raw), status, kind, name, namespace)

    # ------------------------------------------------------------------ paths
    async def resource(self, kind: str) -> RestResource:
        """Where ``kind`` is served: the kind table, else discovery (cached)."""
        found = builtin_resource(kind) or self._discovered.get(kind)
        if found is not None:
            return found
        if "." not in kind:
            raise BadRequest(f"no REST resource known for kind {kind!r}")
        short, group = kind.split(".", 1)
        group_info = await self._send("GET", f"/apis/{group}")
        version = str(((group_info or {}).get("preferredVersion") or {}).get("version") or "")
        listed = await self._send("GET", f"/apis/{group}/{version}")
        names = {str(r.get("name")) for r in (listed or {}).get("resources") or []}
        for r in (listed or {}).get("resources") or []:
            if r.get("kind") == short and "/" not in str(r.get("name")):
                plural = str(r["name"])
                found = RestResource(kind, f"{group}/{version}", plural, bool(r.get("namespaced")))
                self._discovered[kind] = found
                _know_kind(kind, found, f"{plural}/status" in names)
                return found
        raise NotFound(kind, "the server could not find the requested resource")

    async def served_kinds(self) -> builtins.list[ServedKind]:
        """Discovery (``/api/v1``, ``/apis`` and each group's preferred version), kept
        :data:`DISCOVERY_TTL` seconds; custom kinds become known to the object model."""
        if self._served is not None and time.monotonic() - self._served[0] < DISCOVERY_TTL:
            return list(self._served[1])
        groups = [[await self._send("GET", "/api/v1")]]
        for versions in group_versions(await self._send("GET", "/apis")):
            lists = []
            for group_version in versions:
                try:
                    lists.append(await self._send("GET", f"/apis/{group_version}"))
                except NotFound:  # a group removed between the two reads
                    continue
            groups.append(lists)
        out = []
        for preferred, *others in (g for g in groups if g):
            also: dict[str, list[str]] = {}  # kind -> the other versions serving it
            for listed in others:
                for found in kinds_in(listed):
                    also.setdefault(found.served.kind, []).append(found.served.group_version)
            for found in kinds_in(preferred):
                served = found.served
                if served.kind in also:
                    served = replace(served, versions=(*served.versions, *also[served.kind]))
                if served.custom:
                    r = RestResource(served.kind, served.group_version, served.plural,
                                     served.namespaced)
                    self._discovered[served.kind] = r
                    _know_kind(served.kind, r, found.has_status)
                out.append(served)
        self._served = (time.monotonic(), out)
        return list(out)

    async def _where(self, kind: str, namespace: str | None) -> tuple[RestResource, str]:
        r = await self.resource(kind)
        return r, (namespace or "default") if r.namespaced else ""

    # ------------------------------------------------------------------ reads
    async def get(self, kind: str, name: str, namespace: str = "") -> Resource:
        r, ns = await self._where(kind, namespace)
        return _object(await self._send("GET", r.path(ns, name), kind=kind, name=name,
                                        namespace=ns), r)

    async def list(self, kind: str, namespace: str | None = None,
                   label_selector: str | None = None, field_selector: str | None = None,
                   *, limit: int = 0, continue_from: str = "",
                   resource_version: str = "") -> ResourceList:
        r = await self.resource(kind)
        params = _params(labelSelector=label_selector, fieldSelector=field_selector,
                         limit=str(limit) if limit > 0 else None,
                         resourceVersion=resource_version or None,
                         **{"continue": continue_from or None})
        answer = await self._send("GET", r.path(namespace or None), params=params, kind=kind)
        meta = answer.get("metadata") or {}
        items = [_object(item, r, answer.get("apiVersion")) for item in answer.get("items") or []]
        remaining = meta.get("remainingItemCount")
        return ResourceList(items, str(meta.get("resourceVersion") or ""),
                            str(meta.get("continue") or ""),
                            int(remaining) if remaining is not None else None)

    # ------------------------------------------------------------------ writes
    async def create(self, obj: Resource) -> Resource:
        r, ns = await self._where(obj.kind, obj.namespace)
        return _object(await self._send("POST", r.path(ns), body=_wire(obj), kind=obj.kind,
                                        name=obj.name, namespace=ns), r)

    async def update(self, obj: Resource) -> Resource:
        return await self._put(obj, "")

    async def update_status(self, obj: Resource) -> Resource:
        return await self._put(obj, "status")

    async def _put(self, obj: Resource, subresource: str) -> Resource:
        r, ns = await self._where(obj.kind, obj.namespace)
        return _object(await self._send("PUT", r.path(ns, obj.name, subresource),
                                        body=_wire(obj), kind=obj.kind, name=obj.name,
                                        namespace=ns), r)

    async def patch(self, kind: str, name: str, patch: Any, namespace: str = "",
                    subresource: str = "", *, patch_type: str = MERGE_PATCH,
                    field_manager: str = "", force: bool = False) -> Resource:
        if patch_type not in PATCH_TYPES:
            raise BadRequest(f"unknown patch type {patch_type!r}")
        r, ns = await self._where(kind, namespace)
        params = _params(fieldManager=field_manager or None,
                         force="true" if force and patch_type == APPLY_PATCH else None)
        return _object(await self._send("PATCH", r.path(ns, name, subresource), params=params,
                                        body=patch, content_type=patch_type, kind=kind,
                                        name=name, namespace=ns), r)

    async def delete(self, kind: str, name: str, namespace: str = "", *,
                     grace_period_seconds: int | None = None, uid: str | None = None,
                     resource_version: str | None = None,
                     propagation_policy: str | None = None) -> Resource | None:
        r, ns = await self._where(kind, namespace)
        answer = await self._send("DELETE", r.path(ns, name),
                                  body=_delete_options(grace_period_seconds, uid,
                                                       resource_version, propagation_policy),
                                  kind=kind, name=name, namespace=ns)
        if not isinstance(answer, dict) or answer.get("kind") == "Status":
            return None
        return _object(answer, r)

    async def bind(self, name: str, namespace: str, node_name: str,
                   annotations: dict[str, str] | None = None, uid: str | None = None) -> None:
        r, ns = await self._where("Pod", namespace)
        meta: JSON = {"name": name, "namespace": ns}
        if annotations:
            meta["annotations"] = dict(annotations)
        if uid:
            meta["uid"] = uid
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": meta,
                "target": {"apiVersion": "v1", "kind": "Node", "name": node_name}}
        await self._send("POST", r.path(ns, name, "binding"), body=body, kind="Pod", name=name,
                         namespace=ns)

    async def evict(self, name: str, namespace: str, *, dry_run: bool = False,
                    grace_period_seconds: int | None = None, uid: str | None = None,
                    resource_version: str | None = None,
                    propagation_policy: str | None = None) -> None:
        r, ns = await self._where("Pod", namespace)
        options = _delete_options(grace_period_seconds, uid, resource_version,
                                  propagation_policy)
        if dry_run:
            options["dryRun"] = ["All"]
        body = {"apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": name, "namespace": ns}, "deleteOptions": options}
        await self._send("POST", r.path(ns, name, "eviction"), body=body, kind="Pod",
                         name=name, namespace=ns)

    async def finalize(self, namespace: Resource) -> Resource:
        r, _ = await self._where("Namespace", "")
        return _object(await self._send("PUT", r.path(None, namespace.name, "finalize"),
                                        body=_wire(namespace), kind="Namespace",
                                        name=namespace.name), r)

    async def request_token(self, namespace: str, name: str, request: JSON) -> JSON:
        r, ns = await self._where("ServiceAccount", namespace)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", **request}
        answer = await self._send("POST", r.path(ns, name, "token"), body=body,
                                  kind="ServiceAccount", name=name, namespace=ns)
        return dict(answer or {})

    # ------------------------------------------------------------------ watch
    async def watch(self, kind: str, namespace: str | None = None,
                    label_selector: str | None = None, field_selector: str | None = None,
                    resource_version: str | None = None, *, allow_bookmarks: bool = False,
                    timeout_seconds: int | None = None,
                    send_initial_events: bool = False) -> KubeWatch:
        r = await self.resource(kind)
        params = _params(watch="1", labelSelector=label_selector, fieldSelector=field_selector,
                         resourceVersion=resource_version or None,
                         allowWatchBookmarks="true"
                         if allow_bookmarks or send_initial_events else None,
                         sendInitialEvents="true" if send_initial_events else None,
                         resourceVersionMatch="NotOlderThan" if send_initial_events else None,
                         timeoutSeconds=str(timeout_seconds) if timeout_seconds else None)
        path = r.path(namespace or None)
        await self.limiter.accept()
        self.requests += 1
        try:
            resp = await self._open().get(
                path, params=params, server_hostname=self.config.tls_server_name or None)
        except CONNECTION_ERRORS as err:
            raise ApiUnreachable(f"GET {path}?watch=1: {err or type(err).__name__}") from None
        if resp.status >= 400:
            try:
                raw = await resp.read()
            except CONNECTION_ERRORS as err:
                raise ApiUnreachable(f"GET {path}?watch=1: {err}") from None
            finally:
                resp.release()
            raise error_from_status(_decoded(raw), resp.status, kind)
        return HttpWatch(resp, r)


class HttpWatch:
    """One watch stream: its JSON lines as events."""

    def __init__(self, resp: aiohttp.ClientResponse, resource: RestResource) -> None:
        self._resp, self._resource = resp, resource
        self._stopped = False

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self

    async def __anext__(self) -> WatchEvent:
        while True:
            if self._stopped:
                raise StopAsyncIteration
            try:
                line = await self._resp.content.readline()
            except (*CONNECTION_ERRORS, ValueError):
                line = b""
            if not line:
                self.stop()
                raise StopAsyncIteration
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                # as client-go's stream watcher: a line that does not decode ends the
                # watch, and the informer watches again from the last version it saw
                log.warning("%s watch: undecodable line; ending the watch", self._resource.kind)
                self.stop()
                raise StopAsyncIteration from None
            kind, obj = str(event.get("type") or ""), event.get("object") or {}
            if kind == ERROR:
                self.stop()
                raise error_from_status(obj, int(obj.get("code") or 500), self._resource.kind)
            if kind == BOOKMARK:
                meta = obj.get("metadata") or {}
                return bookmark(self._resource.kind, str(meta.get("resourceVersion") or ""),
                                meta.get("annotations"))
            return WatchEvent(kind, _object(obj, self._resource))

    def stop(self) -> None:
        if not self._stopped:
            self._stopped = True
            self._resp.close()


# ---------------------------------------------------------------------- helpers


def _params(**values: str | None) -> dict[str, str]:
    return {k: v for k, v in values.items() if v is not None and v != ""}


def _retry_after(header: str | None) -> int | None:
    """Retry-After in whole seconds (client-go reads only that form), else None."""
    if header is None or not header.strip().isdigit():
        return None
    return int(header.strip())


def _decoded(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _wire(obj: Resource) -> JSON:
    out = obj.to_dict()
    out["kind"] = wire_kind(obj.kind)
    return out


def _object(raw: Any, r: RestResource, list_api_version: Any = None) -> Resource:
    """An object the server answered with; a list's items may leave out kind and
    apiVersion (kube-apiserver's do)."""
    if not isinstance(raw, dict):
        raise ApiError(f"expected an object of kind {r.kind}, got {type(raw).__name__}")
    if not raw.get("kind"):
        raw = {**raw, "kind": wire_kind(r.kind)}
    if not raw.get("apiVersion"):
        raw = {**raw, "apiVersion": str(list_api_version or r.group_version)}
    return Resource.from_dict(raw)


def _delete_options(grace: int | None, uid: str | None, resource_version: str | None,
                    policy: str | None) -> JSON:
    options: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
    if grace is not None:
        options["gracePeriodSeconds"] = grace
    if policy:
        options["propagationPolicy"] = policy
    preconditions = {k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v}
    if preconditions:
        options["preconditions"] = preconditions
    return options


def _know_kind(kind: str, r: RestResource, has_status: bool) -> None:
    """A discovered custom kind becomes known to the object model (decoding needs it)."""
    try:
        kind_info(kind)
    except ApiError:
        register_custom_kind(KindInfo(kind, r.group_version, r.namespaced, has_status,
                                      {} if has_status else None, has_spec=False,
                                      custom=True))
