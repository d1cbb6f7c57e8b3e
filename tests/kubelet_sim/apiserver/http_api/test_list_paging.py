"""LIST pages over HTTPS as kube-apiserver serves them: ``limit`` and ``continue`` tokens
that carry the last returned key and the list's resourceVersion (continue.go's
encoding), pages showing the list as of its first page, ``remainingItemCount``, the
400/410/504 answers for forged, expired and future tokens, paging by the official
Python client and ``kubectl --chunk-size``; and LISTs and writes that never hold up
other requests (they run off the event loop)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from kubernetes import client, config

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import INCONSISTENT_CONTINUE

from .conftest import Served, needs_kubectl
from .test_python_client import pod_body, raw

NAMESPACE = "paging"
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"


def lease(name: str, holder: str = "h", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels or {}},
            "spec": {"holderIdentity": holder}}


@pytest.fixture
def leases(served: Served) -> list[str]:
    """Ten Leases l0..l9 in their own namespace."""
    served.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    names = [f"l{i}" for i in range(10)]
    for name in names:
        served.api.create(lease(name))
    return names


def get(served: Served, path: str) -> tuple[int, dict[str, Any]]:
    return raw(served, path, token=served.handle.credentials.token)


def page(served: Served, limit: int, token: str = "", query: str = "") -> dict[str, Any]:
    path = f"{LEASES}?limit={limit}{query}"
    if token:
        path += f"&continue={quote(token)}"
    code, body = get(served, path)
    assert code == 200, body
    return body


def names(body: dict[str, Any]) -> list[str]:
    return [item["metadata"]["name"] for item in body["items"]]


def token_fields(token: str) -> dict[str, Any]:
    fields: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    return fields


def forged(fields: Any) -> str:
    text = fields if isinstance(fields, str) else json.dumps(fields)
    return base64.urlsafe_b64encode(text.encode()).rstrip(b"=").decode()


def healthz(served: Served) -> int:
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(served.handle.url + "/healthz")
    request.add_header("Authorization", f"Bearer {served.handle.credentials.token}")
    with urllib.request.urlopen(request, context=tls, timeout=10) as answer:
        return int(answer.status)


def test_a_continue_token_is_the_last_key_and_the_lists_resource_version(
        served: Served, leases: list[str]) -> None:
    first = page(served, 3)
    token = first["metadata"]["continue"]
    assert "=" not in token  # unpadded, as Go's RawURLEncoding writes it
    assert token_fields(token) == {"v": "meta.k8s.io/v1",
                                   "rv": int(first["metadata"]["resourceVersion"]),
                                   "start": "l2\x00"}
    code, everywhere = get(served, "/apis/coordination.k8s.io/v1/leases?limit=1")
    assert code == 200
    assert token_fields(everywhere["metadata"]["continue"])["start"] == f"{NAMESPACE}/l0\x00"


def test_deleting_returned_items_between_pages_skips_nothing(
        served: Served, leases: list[str]) -> None:
    first = page(served, 3)
    assert names(first) == ["l0", "l1", "l2"]
    for name in names(first):
        served.api.delete("Lease", name, NAMESPACE)
    second = page(served, 3, first["metadata"]["continue"])
    assert names(second) == ["l3", "l4", "l5"]


def test_inserting_before_the_cursor_repeats_nothing(served: Served,
                                                     leases: list[str]) -> None:
    first = page(served, 5)
    served.api.create(lease("a-new"))  # sorts before every returned key
    seen = names(first)
    token = first["metadata"]["continue"]
    while token:
        body = page(served, 5, token)
        seen += names(body)
        token = body["metadata"].get("continue", "")
    assert seen == leases


def test_later_pages_show_the_list_as_of_its_first_page(served: Served,
                                                        leases: list[str]) -> None:
    first = page(served, 4)
    version = first["metadata"]["resourceVersion"]
    before = served.api.get("Lease", "l6", NAMESPACE).metadata.resource_version
    served.api.update(Resource.from_dict(lease("l6", holder="changed")))
    served.api.delete("Lease", "l8", NAMESPACE)
    served.api.create(lease("l99"))  # after the cursor, but after the first page too
    rest = page(served, 10, first["metadata"]["continue"])
    assert rest["metadata"]["resourceVersion"] == version
    assert names(rest) == ["l4", "l5", "l6", "l7", "l8", "l9"]
    l6 = rest["items"][2]
    assert l6["spec"]["holderIdentity"] == "h" and l6["metadata"]["resourceVersion"] == before


def test_remaining_item_count_counts_what_follows_the_page(served: Served,
                                                           leases: list[str]) -> None:
    counts, token = [], ""
    while True:
        body = page(served, 3, token)
        counts.append(body["metadata"].get("remainingItemCount"))
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert counts == [7, 4, 1, None]
    selected = page(served, 3, query="&labelSelector=" + quote("x!=y"))
    assert selected["metadata"]["continue"]
    assert "remainingItemCount" not in selected["metadata"]  # unknown with a selector


def test_resource_version_0_ignores_the_limit_as_the_watch_cache_does(
        served: Served, leases: list[str]) -> None:
    body = page(served, 3, query="&resourceVersion=0")
    assert names(body) == leases and "continue" not in body["metadata"]


@pytest.mark.parametrize(("token", "why"), [
    ("not*base64", "illegal base64 data at input byte 3"),
    (forged('{"v": "meta.k8s.io/v1", "rv": 1e999, "start": "l1"}'),
     "json: cannot unmarshal number 1e999 into Go struct field continueToken.rv of type "
     "int64"),
    (forged('{"start": 1e999}'),
     "json: cannot unmarshal number into Go struct field continueToken.start of type "
     "string"),
    (forged('{"v": "meta.k8s.io/v1", "rv": 5'), "unexpected end of JSON input"),
    (forged({"v": "meta.k8s.io/v1", "rv": "5", "start": "l1"}),
     "json: cannot unmarshal string into Go struct field continueToken.rv of type int64"),
    (forged({"v": "meta.k8s.io/v2", "rv": 5, "start": "l1"}),
     "server does not recognize this encoded version meta.k8s.io/v2"),
    (forged({"v": "meta.k8s.io/v1", "rv": 0, "start": "l1"}),
     "incorrect encoded start resourceVersion (version meta.k8s.io/v1)"),
    (forged({"v": "meta.k8s.io/v1", "rv": 5, "start": ""}),
     "encoded start key empty (version meta.k8s.io/v1)"),
    (forged({"v": "meta.k8s.io/v1", "rv": 5, "start": "../../secrets/x"}),
     "../../secrets/x"),
    (forged([1, 2]), "json: cannot unmarshal array into Go value of type "
                     "storage.continueToken"),
])
def test_a_forged_continue_token_is_400_with_the_storage_wording(
        served: Served, leases: list[str], token: str, why: str) -> None:
    code, body = get(served, f"{LEASES}?limit=2&continue={quote(token)}")
    assert code == 400 and body["kind"] == "Status" and body["reason"] == "BadRequest"
    assert body["message"] == f"invalid continue token: continue key is not valid: {why}"


def test_continue_with_a_resource_version_is_400(served: Served, leases: list[str]) -> None:
    token = page(served, 2)["metadata"]["continue"]
    code, body = get(served, f"{LEASES}?limit=2&resourceVersion=5&continue={quote(token)}")
    assert code == 400 and body["reason"] == "BadRequest"
    assert body["message"] == "specifying resource version is not allowed when using continue"


def test_an_expired_token_is_410_with_a_token_for_the_rest_at_the_newest_version(
        served: Served, leases: list[str]) -> None:
    first = page(served, 4)
    for i in range(60):  # more writes than the server keeps (history_limit=50)
        served.api.create(lease(f"x{i:02d}"))
    code, body = get(served, f"{LEASES}?limit=4&continue={quote(first['metadata']['continue'])}")
    assert code == 410 and body["kind"] == "Status" and body["reason"] == "Expired"
    assert body["message"] == INCONSISTENT_CONTINUE
    assert body["message"].startswith("The provided continue parameter is too old to display "
                                      "a consistent list result.")
    inconsistent = body["metadata"]["continue"]
    assert token_fields(inconsistent) == {"v": "meta.k8s.io/v1", "rv": -1, "start": "l3\x00"}
    rest = page(served, 100, inconsistent)  # the rest as it is now, new Leases too
    assert names(rest) == ["l4", "l5", "l6", "l7", "l8", "l9"] + [f"x{i:02d}" for i in range(60)]
    assert rest["metadata"]["resourceVersion"] == served.api.resource_version


def test_a_token_from_the_future_is_504_too_large_resource_version(
        served: Served, leases: list[str]) -> None:
    token = forged({"v": "meta.k8s.io/v1", "rv": 10**9, "start": "l1\x00"})
    code, body = get(served, f"{LEASES}?limit=2&continue={quote(token)}")
    assert code == 504 and body["reason"] == "Timeout"
    assert body["message"] == (f"Timeout: Too large resource version: {10**9}, current: "
                               f"{served.api.resource_version}")
    assert body["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                          "message": "Too large resource version"}]


def test_the_python_client_pages_through_every_object_once(served: Served,
                                                           leases: list[str]) -> None:
    # typed Any: the client's models declare every field optional
    api: Any = client.CoordinationV1Api(config.new_client_from_config(
        str(served.handle.kubeconfig)))
    seen, remaining, token = [], [], None
    while True:
        body = api.list_namespaced_lease(NAMESPACE, limit=4, _continue=token)
        seen += [item.metadata.name for item in body.items]
        remaining.append(body.metadata.remaining_item_count)
        token = body.metadata._continue
        if not token:
            break
    assert seen == leases and remaining == [6, 2, None]


@needs_kubectl
def test_kubectl_chunk_size_pages_pods_and_leases(served: Served, leases: list[str]) -> None:
    for i in range(5):
        served.api.create({**pod_body(f"p{i}"), "metadata": {"name": f"p{i}",
                                                              "namespace": "default"}})
    got = served.kubectl("get", "pods", "--chunk-size=2", "-o", "name").stdout.split()
    assert got == [f"pod/p{i}" for i in range(5)]
    table = served.kubectl("get", "leases", "-n", NAMESPACE, "--chunk-size=3").stdout
    assert [line.split()[0] for line in table.splitlines()[1:]] == leases
    verbose = served.kubectl("get", "leases", "-A", "--chunk-size=4", "-o", "name", "-v=6")
    assert verbose.stdout.split() == [f"lease.coordination.k8s.io/{n}" for n in leases]
    assert verbose.stderr.count("limit=4") == 3  # three pages of at most four


def _in_thread(call: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(call()), daemon=True)
    thread.start()
    return thread, result


def test_a_list_in_progress_does_not_hold_up_healthz(served: Served,
                                                     leases: list[str]) -> None:
    """The LIST waits for the API server's lock (a write holds it, paused inside its
    commit); /healthz and a watch's events still answer meanwhile: the LIST waits off the
    event loop."""
    paused, resume = threading.Event(), threading.Event()

    def commit_seen(event_type: str, obj: Resource) -> None:
        if obj.name == "blocker":  # inside the commit, the lock held
            paused.set()
            resume.wait(30)

    served.api.feed("Lease", commit_seen)
    writer, _ = _in_thread(lambda: served.api.create(lease("blocker")))
    assert paused.wait(10)
    lister, listed = _in_thread(lambda: get(served, LEASES))
    try:
        assert healthz(served) == 200
        assert lister.is_alive() and not listed  # the LIST is still waiting
    finally:
        resume.set()
    writer.join(10)
    lister.join(10)
    assert listed and listed[0][0] == 200 and "blocker" in names(listed[0][1])


def test_a_delayed_write_does_not_hold_up_readers(served: Served, leases: list[str]) -> None:
    """With the write-delay fault a write waits before it runs; a GET, a LIST and
    /healthz sent meanwhile are answered while it still waits."""
    served.api.write_delay = 3.0
    body = json.dumps(lease("slow")).encode()
    writer, written = _in_thread(lambda: raw(served, LEASES, method="POST", body=body,
                                             content_type="application/json",
                                             token=served.handle.credentials.token))
    try:
        assert healthz(served) == 200
        assert get(served, f"{LEASES}/l1")[0] == 200
        assert names(get(served, LEASES)[1]) == leases
        assert writer.is_alive() and not written  # the write still waits
    finally:
        writer.join(30)
    assert written and written[0][0] == 201
