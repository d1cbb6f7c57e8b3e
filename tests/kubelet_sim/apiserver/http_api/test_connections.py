"""The API server's connections as kube-apiserver's net/http server treats them: a
connection that does not finish its TLS handshake and request headers in time is
closed, so do idle kept-alive ones, connections over the cap are closed at once, and
the limits on bodies and headers are kube-apiserver's (413 as a Status past 3 MiB;
request lines and headers up to 1 MiB)."""

from __future__ import annotations

import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_sim.apiserver.http import ApiServerHandle, start_api_server
from kubelet_sim.apiserver.http.connections import ConnectionGuard
from kubelet_sim.apiserver.server import APIServer
from tests.fixtures.up_process import running_up


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[tuple[ApiServerHandle, ConnectionGuard]]:
    guard = ConnectionGuard(header_timeout=0.5, idle_timeout=1.0, max_connections=8)
    handle = start_api_server(APIServer(), tmp_path / "state", connection_guard=guard)
    try:
        yield handle, guard
    finally:
        handle.stop()


def tls_socket(handle: ApiServerHandle) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(handle.credentials.ca_cert))
    raw = socket.create_connection(("127.0.0.1", handle.port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def request(handle: ApiServerHandle, path: str, *, method: str = "GET", body: bytes = b"",
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = tls_socket(handle)
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1",
             f"Authorization: Bearer {handle.credentials.token}",
             f"Content-Length: {len(body)}", "Content-Type: application/json",
             "Connection: close", *(f"{k}: {v}" for k, v in (headers or {}).items())]
    conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    answer = b""
    while chunk := conn.recv(65536):
        answer += chunk
    conn.close()
    head, _, payload = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), payload


def closed_by_server(conn: ssl.SSLSocket, within: float) -> bool:
    conn.settimeout(within)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except (ConnectionError, ssl.SSLError):
        return True


def test_a_request_whose_headers_never_finish_is_closed_at_the_header_deadline(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, guard = guarded
    slow = tls_socket(handle)
    slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the rest
    assert closed_by_server(slow, within=5)
    assert guard.timed_out >= 1


def test_a_connection_that_never_handshakes_is_closed(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, _ = guarded
    raw = socket.create_connection(("127.0.0.1", handle.port), timeout=10)
    raw.settimeout(5)
    assert raw.recv(1) == b""  # the TLS handshake deadline passed
    raw.close()


def test_an_idle_kept_alive_connection_is_closed_after_the_idle_timeout(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, _ = guarded
    conn = tls_socket(handle)
    conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Authorization: Bearer " + handle.credentials.token.encode() + b"\r\n\r\n")
    conn.settimeout(5)
    assert conn.recv(4096).startswith(b"HTTP/1.1 200")
    start = time.monotonic()
    assert closed_by_server(conn, within=5)
    assert time.monotonic() - start >= 0.5  # the idle timeout, not the header one


def test_connections_over_the_cap_are_closed_and_the_server_still_serves(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, guard = guarded
    held = [tls_socket(handle) for _ in range(8)]
    try:
        extra = tls_socket(handle)
    except (ssl.SSLError, ConnectionError):
        pass  # closed during the handshake
    else:
        assert closed_by_server(extra, within=0.3)  # well before any deadline
    assert guard.refused >= 1
    for conn in held:
        conn.close()
    deadline = time.monotonic() + 5
    while guard.open_connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert request(handle, "/healthz")[0] == 200


def test_a_body_over_3_mib_is_a_413_status(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, _ = guarded
    code, payload = request(handle, "/api/v1/namespaces/default/pods", method="POST",
                            body=b"{" + b" " * (3 * 1024 * 1024 + 10) + b"}")
    status = json.loads(payload)
    assert (code, status["kind"], status["reason"]) == (413, "Status", "RequestEntityTooLarge")
    assert status["message"] == "Request entity too large: limit is 3145728"


def test_long_request_lines_and_headers_are_read(
        guarded: tuple[ApiServerHandle, ConnectionGuard]) -> None:
    handle, _ = guarded
    code, payload = request(handle, "/api/v1/pods?fieldSelector=metadata.name%3D" + "b" * 20000)
    assert code == 200 and json.loads(payload)["items"] == []
    code, _ = request(handle, "/healthz", headers={"X-Padding": "p" * 16000})
    assert code == 200


def test_up_serves_a_new_client_while_a_thousand_connections_sit_idle() -> None:
    with running_up() as up:
        config = json.loads(up.kubectl("config", "view", "--raw", "-o", "json"))
        server = config["clusters"][0]["cluster"]["server"]
        port = int(server.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(1000)]
        try:
            up.kubectl("get", "nodes")
        finally:
            for conn in idle:
                conn.close()
