"""The aiohttp application, its access filters (authentication, impersonation, RBAC:
:mod:`.access`), and a thread to serve it on."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web

from kubelet_sim.apiserver import token_request
from kubelet_sim.apiserver.bootstrap_policy import ensure_bootstrap_policy
from kubelet_sim.apiserver.http import (
    custom,
    debug_faults,
    discovery,
    discovery_v2,
    encoding,
    openapi,
    openapi_v2_protobuf,
)
from kubelet_sim.apiserver.http.access import AUTHORIZER, access_filters
from kubelet_sim.apiserver.http.component_statuses import Components
from kubelet_sim.apiserver.http.connections import (
    MAX_HEADER_BYTES,
    MAX_REQUEST_BODY_BYTES,
    ConnectionGuard,
    GuardedSite,
    QuietResourceErrors,
)
from kubelet_sim.apiserver.http.credentials import Credentials, load_or_create, write_kubeconfig
from kubelet_sim.apiserver.http.field_validation import warning_headers
from kubelet_sim.apiserver.http.paths import Target, parse
from kubelet_sim.apiserver.http.resources import ApiResource
from kubelet_sim.apiserver.http.rest import Rest
from kubelet_sim.apiserver.http.status import status_body, status_response
from kubelet_sim.apiserver.http.token_signer import TokenSigner, persistent_signer
from kubelet_sim.apiserver.http.workers import LOOP_THREAD_NAME, Workers, name_os_thread
from kubelet_sim.apiserver.rbac_authorizer import RbacAuthorizer
from kubelet_sim.apiserver.server import APIServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HEALTH_PATHS = ("/healthz", "/readyz", "/livez")


RequestObserver = Callable[[str, str, str, int], None]  # verb, resource, subresource, code


def request_verb(request: web.Request, target: Target) -> str:
    """The verb kube-apiserver counts the request under: GET LIST WATCH POST PUT PATCH
    DELETE."""
    if request.method == "GET":
        if request.query.get("watch") in ("1", "true"):
            return "WATCH"
        return "GET" if target.name else "LIST"
    return request.method


@web.middleware
async def too_large(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A body over the limit is a 413 Status, as kube-apiserver words it."""
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return status_response(status_body(
            413, "RequestEntityTooLarge",
            f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"))


def make_app(api: APIServer, token: str, address: str,
             on_request: RequestObserver | None = None,
             components: Components | None = None) -> web.Application:
    workers = Workers()
    rest = Rest(api, workers, components)
    authorizer = RbacAuthorizer(api)

    async def serve(request: web.Request, target: Target) -> web.StreamResponse:
        response: web.StreamResponse | None = encoding.negotiate(request, target.resource)
        if response is None:
            try:
                response = await rest.handle(request, target)
            except web.HTTPException as exc:  # a Status in the negotiated form
                response = encoding.error_response(request, exc)
        warning = custom.deprecation_warning(target.resource)
        if warning and not response.prepared:
            response.headers.extend(warning_headers([warning]))
        if on_request is not None:
            on_request(request_verb(request, target), target.resource.plural,
                       target.subresource, response.status)
        return response

    async def version(request: web.Request) -> web.Response:
        return web.json_response(discovery.VERSION)

    async def health(request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def served() -> dict[str, list[ApiResource]]:
        return custom.served_group_versions(api.custom)

    def resolve(group: str, version: str, plural: str) -> ApiResource | None:
        return custom.resolve(api.custom, group, version, plural)

    def aggregated(request: web.Request, core: bool) -> web.Response | None:
        if not discovery_v2.wants_aggregated(request.headers.get("Accept", "")):
            return None
        body = discovery_v2.group_discovery_list(core, served())
        return web.Response(body=json.dumps(body).encode(),
                            headers={"Content-Type": discovery_v2.AGGREGATED})

    async def api_versions(request: web.Request) -> web.Response:
        return aggregated(request, True) or web.json_response(discovery.api_versions(address))

    async def groups(request: web.Request) -> web.Response:
        return aggregated(request, False) or web.json_response(
            discovery.api_group_list(served()))

    def not_found() -> web.Response:
        # kube-apiserver's NewNotFound of no resource: an empty details object, which
        # kubectl reads (`kubectl debug` tells a cluster without the subresource so)
        return status_response({**status_body(
            404, "NotFound", "the server could not find the requested resource"),
            "details": {}})

    async def resources(request: web.Request, group_version: str) -> web.Response:
        body = discovery.api_resource_list(group_version, served())
        return web.json_response(body) if body is not None else not_found()

    async def core(request: web.Request) -> web.StreamResponse:
        segments = [s for s in request.match_info["tail"].split("/") if s]
        if not segments:
            return await resources(request, "v1")
        target = parse("", "v1", segments)
        return not_found() if target is None else await serve(request, target)

    async def grouped(request: web.Request) -> web.StreamResponse:
        group, version = request.match_info["group"], request.match_info["version"]
        segments = [s for s in request.match_info["tail"].split("/") if s]
        if not segments:
            return await resources(request, f"{group}/{version}")
        target = parse(group, version, segments, resolve)
        return not_found() if target is None else await serve(request, target)

    async def group_versions(request: web.Request) -> web.Response:
        group = request.match_info["group"]
        listed = [g for g in discovery.api_group_list(served())["groups"]
                  if g["name"] == group]
        if not listed:
            return not_found()
        return web.json_response({"kind": "APIGroup", "apiVersion": "v1", **listed[0]})

    async def openapi_index(request: web.Request) -> web.StreamResponse:
        # built once, off the event loop (a fraction of a second of CPU the first time)
        index = await asyncio.to_thread(openapi.built_index, served())
        headers = {"ETag": index.etag, "Content-Type": openapi.JSON}
        if request.headers.get("If-None-Match") == index.etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=index.body, headers=headers)

    def openapi_served(request: web.Request, built: openapi.Built | None, url: str,
                       media: str) -> web.StreamResponse:
        if built is None:
            return not_found()
        headers = {"ETag": built.etag, "Vary": "Accept", "Content-Type": media}
        given = request.query.get("hash")
        if given is not None and given != built.hash:
            raise web.HTTPMovedPermanently(f"{url}?hash={built.hash}")
        if given is not None:
            headers.update(openapi.immutable_headers())
        if request.headers.get("If-None-Match") == built.etag:
            return web.Response(status=304, headers=headers)
        return web.Response(body=built.body, headers=headers)

    def not_acceptable() -> web.Response:
        return web.Response(status=406, headers={"Vary": "Accept"})

    async def openapi_document(request: web.Request) -> web.StreamResponse:
        key = request.match_info["tail"]
        media = openapi.negotiate(request.headers.get("Accept", ""))
        if media is None:
            return not_acceptable()
        built = await asyncio.to_thread(openapi.v3_document, key, served())
        return openapi_served(request, built, f"/openapi/v3/{key}", media)

    async def openapi_v2(request: web.Request) -> web.StreamResponse:
        media = openapi.negotiate(request.headers.get("Accept", ""), openapi_v2_protobuf.MEDIA_TYPE)
        if media is None:
            return not_acceptable()
        json_form = media == openapi.JSON
        built = await asyncio.to_thread(openapi.v2_document, not json_form, served())
        return openapi_served(request, built, "/openapi/v2",
                              media if json_form else openapi_v2_protobuf.CONTENT_TYPE)

    async def jwks(request: web.Request) -> web.Response:
        if api.token_signer is None:
            return not_found()
        return web.json_response(api.token_signer.jwks(),
                                 content_type="application/jwk-set+json")

    async def openid_configuration(request: web.Request) -> web.Response:
        return web.json_response(token_request.openid_configuration(
            f"{request.scheme}://{request.host}"))

    async def fallback(request: web.Request) -> web.Response:
        return not_found()

    async def faults(request: web.Request) -> web.Response:
        return await debug_faults.handle(api, request)

    app = web.Application(middlewares=[too_large, access_filters(api, authorizer, token)],
                          client_max_size=MAX_REQUEST_BODY_BYTES)

    async def stop_workers(app: web.Application) -> None:
        workers.shutdown()

    app.on_cleanup.append(stop_workers)
    app[AUTHORIZER] = authorizer  # the self-subject reviews answer from it
    app.router.add_get("/version", version)
    for path in HEALTH_PATHS:
        app.router.add_get(path, health)
    app.router.add_get("/api", api_versions)
    app.router.add_get("/apis", groups)
    app.router.add_route("*", "/api/v1{tail:(/.*)?}", core)
    app.router.add_get("/apis/{group}", group_versions)
    app.router.add_route("*", "/apis/{group}/{version}{tail:(/.*)?}", grouped)
    app.router.add_get("/openapi/v3", openapi_index)
    app.router.add_get("/openapi/v3/{tail:.+}", openapi_document)
    app.router.add_get("/openapi/v2", openapi_v2)
    app.router.add_route("GET", debug_faults.PATH, faults)
    app.router.add_route("POST", debug_faults.PATH, faults)
    app.router.add_get("/openid/v1/jwks", jwks)
    app.router.add_get("/.well-known/openid-configuration", openid_configuration)
    app.router.add_route("*", "/{tail:.*}", fallback)
    return app


@dataclass
class ApiServerHandle:
    """A running API server: its URL, credentials, kubeconfig; ``stop()`` ends it."""

    url: str
    kubeconfig: Path
    credentials: Credentials
    _loop: asyncio.AbstractEventLoop
    _thread: threading.Thread
    _runner: web.AppRunner
    _stopped: bool = field(default=False)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        future = asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop)
        future.result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)


def start_api_server(api: APIServer, state_dir: Path, host: str = "127.0.0.1", port: int = 0,
                     kubeconfig: Path | None = None,
                     on_request: RequestObserver | None = None,
                     listener: socket.socket | None = None,
                     connection_guard: ConnectionGuard | None = None,
                     components: Components | None = None) -> ApiServerHandle:
    """Serve ``api`` over HTTPS on ``host:port`` (0: any free port), or on ``listener``
    (a socket the caller bound already), from a thread of its own; writes the kubeconfig
    (default ``state_dir/kubeconfig``, mode 0600)."""
    if host not in ("127.0.0.1", "localhost"):
        raise ValueError(f"the API server listens on 127.0.0.1 only, not {host!r}")
    creds = load_or_create(state_dir)
    if not isinstance(api.token_signer, TokenSigner) or api.token_signer.key_file is None:
        api.token_signer = persistent_signer(state_dir)
    ensure_bootstrap_policy(api)  # the RBAC the authorizer starts from
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(creds.server_cert, creds.server_key)
    loop = asyncio.new_event_loop()
    guard = connection_guard or ConnectionGuard()
    started: dict[str, object] = {}
    ready = threading.Event()

    async def begin() -> None:
        placeholder = f"https://{host}:{port}"
        app = make_app(api, creds.token, placeholder, on_request, components)
        app.middlewares.insert(0, guard.middleware)  # outermost: sees every request
        loop.set_exception_handler(QuietResourceErrors())
        runner = web.AppRunner(app, access_log=None, handle_signals=False,
                               shutdown_timeout=1.0, max_line_size=MAX_HEADER_BYTES,
                               max_field_size=MAX_HEADER_BYTES, max_headers=1024)
        await runner.setup()
        bound = listener or socket.create_server((host, port))  # port 0 picks one
        site = GuardedSite(runner, bound, guard, ssl_context=tls)
        await site.start()
        started["port"] = bound.getsockname()[1]
        started["runner"] = runner

    def run() -> None:
        name_os_thread(LOOP_THREAD_NAME)
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(begin())
        except BaseException as e:  # reported to the caller below
            started["error"] = e
            ready.set()
            return
        ready.set()
        loop.run_forever()
        loop.close()

    thread = threading.Thread(target=run, name="kube-apiserver-http", daemon=True)
    thread.start()
    ready.wait(timeout=30)
    if "error" in started:
        raise RuntimeError(f"the API server did not start: {started['error']}")
    url = f"https://{host}:{started['port']}"
    path = write_kubeconfig(kubeconfig or state_dir / "kubeconfig", url, creds)
    runner = started["runner"]
    assert isinstance(runner, web.AppRunner)
    return ApiServerHandle(url, path, creds, loop, thread, runner)
