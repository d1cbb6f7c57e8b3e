"""HTTP watch streams see every write in resourceVersion order, when writes come both
through the HTTPS API (committed on the HTTP server's loop) and in process from another
thread (as the controllers and kubelets of `up` write)."""

from __future__ import annotations

import http.client
import json
import ssl
import threading
from typing import Any

from kubelet_sim.api.model import new

from .conftest import Served

WATCHERS = 20
WRITES_PER_SIDE = 100


def _connection(served: Served) -> http.client.HTTPSConnection:
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    return http.client.HTTPSConnection("127.0.0.1", served.handle.port, context=tls,
                                       timeout=60)


def _headers(served: Served) -> dict[str, str]:
    return {"Authorization": f"Bearer {served.handle.credentials.token}",
            "Content-Type": "application/json"}


def _watch(served: Served, since: str, want: int, out: list[int],
           ready: threading.Barrier) -> None:
    conn = _connection(served)
    conn.request("GET", f"/apis/coordination.k8s.io/v1/namespaces/default/leases?watch=1"
                 f"&resourceVersion={since}", headers=_headers(served))
    answer = conn.getresponse()
    assert answer.status == 200
    ready.wait()
    while len(out) < want:
        line = answer.readline()
        assert line, "the watch ended early"
        event: dict[str, Any] = json.loads(line)
        out.append(int(event["object"]["metadata"]["resourceVersion"]))
    conn.close()


def _lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {}}


def test_http_watchers_see_https_and_in_process_writes_complete_and_in_order(
        served: Served) -> None:
    since = served.api.resource_version
    seen: list[list[int]] = [[] for _ in range(WATCHERS)]
    ready = threading.Barrier(WATCHERS + 1)
    watchers = [threading.Thread(target=_watch, args=(served, since, 2 * WRITES_PER_SIDE,
                                                      seen[i], ready))
                for i in range(WATCHERS)]
    for t in watchers:
        t.start()
    ready.wait(timeout=60)

    def over_https() -> None:
        conn = _connection(served)
        for i in range(WRITES_PER_SIDE):
            conn.request("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                         body=json.dumps(_lease(f"http-{i}")), headers=_headers(served))
            answer = conn.getresponse()
            answer.read()
            assert answer.status == 201
        conn.close()

    def in_process() -> None:
        for i in range(WRITES_PER_SIDE):
            served.api.create(new("Lease", f"local-{i}", "default", spec={}))

    writers = [threading.Thread(target=over_https), threading.Thread(target=in_process)]
    for t in writers:
        t.start()
    for t in writers + watchers:
        t.join(timeout=120)
    written = [int(o.metadata.resource_version) for o in served.api.list("Lease").items]
    assert len(written) == 2 * WRITES_PER_SIDE
    for versions in seen:
        assert versions == sorted(written)  # every write, strictly increasing
