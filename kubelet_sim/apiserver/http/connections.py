"""What kube-apiserver's HTTP server does with connections before any handler runs.

kube-apiserver serves through Go's ``net/http`` with ``ReadHeaderTimeout`` 32 s (the
TLS handshake and a request's headers must arrive within it), ``IdleTimeout`` 90 s (a
kept-alive connection with no request in flight) and the Go runtime's open-file limit
raised to its hard limit at start. aiohttp has an idle timeout but no header timeout, so
a client that opens connections and sends nothing, or sends its headers a byte at a time
(slowloris), would hold them — and their file descriptors — for ever. Here:

* :func:`raise_open_file_limit`: the soft ``RLIMIT_NOFILE`` up to the hard one;
* :class:`ConnectionGuard`: every accepted connection has ``header_timeout`` seconds for
  its TLS handshake and the headers of its next request, ``idle_timeout`` seconds between
  requests, and beyond ``max_connections`` open ones a new connection is closed at once
  (the file descriptors kept for the rest of the process);
* :class:`GuardedSite`: the listening site that applies them;
* a quiet loop exception handler: running out of descriptors is one log line a second,
  not a traceback per refused accept.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
MAX_HEADER_BYTES = 1 << 20  # Go's http.Server MaxHeaderBytes, as kube-apiserver sets it
HEADER_TIMEOUT = 32.0  # kube-apiserver's ReadHeaderTimeout
IDLE_TIMEOUT = 90.0  # kube-apiserver's IdleTimeout
RESERVED_FILES = 512  # descriptors kept for the cluster itself (plugins, sockets, files)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def raise_open_file_limit() -> int:
    """Raise the soft open-file limit to the hard one, as the Go runtime does at start;
    returns the soft limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):
            pass
    return soft


class _Guarded(asyncio.Protocol):
    """The server's protocol for one connection, behind the guard's deadlines."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard) -> None:
        self.inner = inner
        self.guard = guard
        self.transport: asyncio.BaseTransport | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._waiting_for_headers = True  # no request started since the last ended

    def _arm(self, seconds: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(seconds, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self.transport is not None:
            self.guard.timed_out += 1
            self.transport.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        if not self.guard.admit(self):
            if isinstance(transport, asyncio.WriteTransport):
                transport.abort()
            else:
                transport.close()
            return
        self.inner.connection_made(transport)
        self._arm(self.guard.header_timeout)

    def data_received(self, data: bytes) -> None:
        if not self._waiting_for_headers:
            self._waiting_for_headers = True  # the first bytes of the next request
            self._arm(self.guard.header_timeout)
        self.inner.data_received(data)

    def request_started(self) -> None:
        self._waiting_for_headers = False
        self._disarm()

    def request_ended(self) -> None:
        self._waiting_for_headers = False
        self._arm(self.guard.idle_timeout)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        if self.guard.release(self):
            self.inner.connection_lost(exc)


class ConnectionGuard:
    """The deadlines and the cap of one listening site (see the module)."""

    def __init__(self, header_timeout: float = HEADER_TIMEOUT, idle_timeout: float = IDLE_TIMEOUT,
                 max_connections: int | None = None) -> None:
        self.header_timeout = header_timeout
        self.idle_timeout = idle_timeout
        self.max_connections = max_connections or max(
            64, raise_open_file_limit() - RESERVED_FILES)
        self.timed_out = 0  # connections closed by a deadline
        self.refused = 0  # connections closed at once, over the cap
        self._open: dict[int, _Guarded] = {}  # id(transport) -> connection

    @property
    def open_connections(self) -> int:
        return len(self._open)

    def factory(self, make: Callable[[], Any]) -> Callable[[], asyncio.Protocol]:
        return lambda: _Guarded(make(), self)

    def admit(self, conn: _Guarded) -> bool:
        if len(self._open) >= self.max_connections:
            self.refused += 1
            return False
        self._open[id(conn.transport)] = conn
        return True

    def release(self, conn: _Guarded) -> bool:
        """Forget ``conn``; False when it was never admitted."""
        return self._open.pop(id(conn.transport), None) is not None

    def _connection(self, request: web.Request) -> _Guarded | None:
        return self._open.get(id(request.transport)) if request.transport else None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        conn = self._connection(request)
        if conn is not None:
            conn.request_started()
        try:
            return await handler(request)
        finally:
            if conn is not None:
                conn.request_ended()


class GuardedSite(web.SockSite):
    """A :class:`~aiohttp.web.SockSite` whose connections go through ``guard``, with the TLS
    handshake inside the header deadline."""

    def __init__(self, runner: web.BaseRunner, sock: Any, guard: ConnectionGuard,
                 **kwargs: Any) -> None:
        super().__init__(runner, sock, **kwargs)
        self.guard = guard

    async def start(self) -> None:
        await web.BaseSite.start(self)  # registers the site with its runner
        loop = asyncio.get_running_loop()
        server = self._runner.server
        assert server is not None
        handshake = self.guard.header_timeout if self._ssl_context else None
        self._server = await loop.create_server(
            self.guard.factory(server), sock=self._sock, ssl=self._ssl_context,
            backlog=self._backlog, ssl_handshake_timeout=handshake)


class QuietResourceErrors:
    """A loop exception handler: running out of file descriptors (or memory for sockets)
    is logged once a second as one line; everything else goes to the default handler."""

    _EXHAUSTED = {"EMFILE", "ENFILE", "ENOBUFS", "ENOMEM"}

    def __init__(self) -> None:
        self._last = 0.0
        self.suppressed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        code = getattr(exc, "errno", None)
        if isinstance(exc, OSError) and code is not None and \
                errno.errorcode.get(code) in self._EXHAUSTED:
            now = time.monotonic()
            if now - self._last >= 1.0:
                self._last = now
                log.error("API server: %s (%d more since the last report); new connections "
                          "wait", exc.strerror, self.suppressed)
                self.suppressed = 0
            else:
                self.suppressed += 1
            return
        loop.default_exception_handler(context)
