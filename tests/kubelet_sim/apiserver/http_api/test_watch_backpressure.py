"""A watch stream whose client stops reading is closed once it is far enough behind, as
kube-apiserver's watch cache closes a watcher that cannot keep up, so a stalled client
holds a bounded amount of the server's memory."""

from __future__ import annotations

import socket
import ssl
import time

from kubelet_sim.api import builders
from tests.kubelet_sim.apiserver.http_api.conftest import Served


def stalled_watch(served: Served) -> ssl.SSLSocket:
    handle = served.handle
    context = ssl.create_default_context(cafile=str(handle.credentials.ca_cert))
    conn = context.wrap_socket(socket.create_connection(("127.0.0.1", handle.port)),
                               server_hostname="127.0.0.1")
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    conn.sendall(b"GET /api/v1/namespaces?watch=1 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 b"Authorization: Bearer " + handle.credentials.token.encode() + b"\r\n\r\n")
    return conn  # and never read


def test_stalled_watchers_are_closed_and_a_reading_one_is_not(served: Served) -> None:
    api = served.api
    before = len(api._store._watches)
    stalled = [stalled_watch(served) for _ in range(3)]
    deadline = time.monotonic() + 10
    while len(api._store._watches) < before + 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(api._store._watches) == before + 3
    reader = api.watch("Namespace", resource_version=api.resource_version)
    big = {f"note-{i}": "x" * 1000 for i in range(20)}  # ~20 KB per event
    for i in range(3000):
        ns = builders.namespace(f"ns-{i}")
        ns.metadata.annotations = big
        api.create(ns)
        if len(api._store._watches) == before + 1:
            break
    deadline = time.monotonic() + 10
    while len(api._store._watches) > before + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(api._store._watches) == before + 1  # only the in-process reader is left
    assert not reader.overflowed  # in-process watchers have no bound
    for conn in stalled:
        conn.close()
