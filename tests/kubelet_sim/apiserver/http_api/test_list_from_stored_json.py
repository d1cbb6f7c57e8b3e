"""A JSON LIST is written from the stored objects' own JSON (kept on each object, joined
slice by slice as the answer goes out): every answer is byte for byte what encoding the
whole list at once writes — the YAML answer (encoded anew from the objects) read back
and put through ``json.dumps`` — with selectors, ``limit`` and ``continue`` (also at the
first page's resourceVersion after writes), ``resourceVersion=0``, across namespaces
and in answers bigger than one written slice; the protobuf answer holds the same
objects. Big answers take turns a slice at a time, and a client that does not read its
answer holds up no other."""

from __future__ import annotations

import json
import socket
import ssl
import urllib.request
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.http.encoding import envelope
from kubelet_sim.apiserver.http.encoding.negotiation import WRITE_SLICE
from kubelet_sim.apiserver.server import APIServer

from .conftest import Served

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
NAMESPACES = ("big", "small")
GROUP = "/apis/coordination.k8s.io/v1"
PROTOBUF = "application/vnd.kubernetes.protobuf"


def lease(name: str, namespace: str, i: int) -> dict[str, Any]:
    # uneven sizes (one in ten carries a big annotation): slices hold whole objects
    notes = {"note": "x" * 3000} if i % 10 == 0 else {}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"tier": "odd" if i % 2 else "even"}, "annotations": notes},
            "spec": {"holderIdentity": f"holder-{i}", "leaseDurationSeconds": 40}}


@pytest.fixture(scope="module")
def leases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """An API server with 250 Leases in "big" (more than one written slice) and three in
    "small", shared by the module's tests (which change no Lease)."""
    api = APIServer()
    for namespace, count in zip(NAMESPACES, (250, 3), strict=True):
        api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        for i in range(count):
            api.create(lease(f"l{i:03d}", namespace, i))
    handle = start_api_server(api, tmp_path_factory.mktemp("state"))
    try:
        yield Served(api, handle)
    finally:
        handle.stop()


def fetch(served: Served, path: str, accept: str = "application/json") -> bytes:
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(served.handle.url + path)
    request.add_header("Authorization", f"Bearer {served.handle.credentials.token}")
    request.add_header("Accept", accept)
    with urllib.request.urlopen(request, context=tls, timeout=30) as answer:
        assert answer.status == 200
        body: bytes = answer.read()
        assert int(answer.headers["Content-Length"]) == len(body)
        return body


def same_as_encoded_whole(served: Served, path: str) -> dict[str, Any]:
    """The JSON answer of ``path``, checked to be ``json.dumps`` of the list as the YAML
    answer (built from the objects, not from their kept JSON) shows it."""
    answer = fetch(served, path)
    shown = yaml.load(fetch(served, path, "application/yaml"), Loader=SafeLoader)
    assert answer == json.dumps(shown).encode()
    decoded: dict[str, Any] = json.loads(answer)
    return decoded


def names(body: dict[str, Any]) -> list[str]:
    return [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in body["items"]]


def test_a_list_bigger_than_a_slice_is_the_whole_list_encoded_at_once(leases: Served) -> None:
    body = same_as_encoded_whole(leases, f"{GROUP}/namespaces/big/leases")
    assert len(json.dumps(body)) > WRITE_SLICE
    assert names(body) == [f"big/l{i:03d}" for i in range(250)]
    assert body["metadata"] == {"resourceVersion": leases.api.resource_version}


@pytest.mark.parametrize("query", [
    "", "?labelSelector=tier%3Dodd", "?fieldSelector=metadata.name%3Dl002",
    "?resourceVersion=0&limit=5", "?labelSelector=tier%3Dnone"])
def test_lists_across_namespaces_and_with_selectors_read_as_encoded_at_once(
        leases: Served, query: str) -> None:
    body = same_as_encoded_whole(leases, f"{GROUP}/leases{query}")
    expected = {"": 253, "?labelSelector=tier%3Dodd": 126,
                "?fieldSelector=metadata.name%3Dl002": 2,
                "?resourceVersion=0&limit=5": 253, "?labelSelector=tier%3Dnone": 0}[query]
    assert len(body["items"]) == expected


@pytest.mark.parametrize("selector", ["", "&labelSelector=tier%3Deven"])
def test_every_page_reads_as_encoded_at_once_and_the_pages_make_the_list(
        leases: Served, selector: str) -> None:
    whole = same_as_encoded_whole(leases, f"{GROUP}/namespaces/big/leases?{selector[1:]}")
    seen: list[str] = []
    token = ""
    while True:
        path = f"{GROUP}/namespaces/big/leases?limit=100{selector}"
        if token:
            path += f"&continue={quote(token)}"
        page = same_as_encoded_whole(leases, path)
        seen += names(page)
        token = page["metadata"].get("continue", "")
        if not token:
            break
    assert seen == names(whole)


def storage_class(name: str, value: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "labels": {"v": value}}, "provisioner": "p"}


def test_a_continued_page_shows_the_first_pages_version_as_encoded_at_once(
        leases: Served) -> None:
    classes = "/apis/storage.k8s.io/v1/storageclasses"  # cluster-scoped
    for name in ("a", "b", "c"):
        leases.api.create(storage_class(name, "first"))
    first = same_as_encoded_whole(leases, f"{classes}?limit=1")
    leases.api.update(Resource.from_dict(storage_class("b", "changed")))
    leases.api.delete("StorageClass", "c")
    rest = same_as_encoded_whole(
        leases, f"{classes}?limit=5&continue={quote(first['metadata']['continue'])}")
    assert [o["metadata"]["name"] for o in rest["items"]] == ["b", "c"]
    assert rest["items"][0]["metadata"]["labels"] == {"v": "first"}
    now = same_as_encoded_whole(leases, classes)
    assert [o["metadata"]["name"] for o in now["items"]] == ["a", "b"]
    assert now["items"][1]["metadata"]["labels"] == {"v": "changed"}


def test_an_empty_list_reads_as_encoded_at_once(leases: Served) -> None:
    body = same_as_encoded_whole(leases, f"{GROUP}/namespaces/default/leases")
    assert body["items"] == []


def test_the_protobuf_list_holds_the_objects_of_the_json_list(leases: Served) -> None:
    for query in ("?limit=100", "?labelSelector=tier%3Dodd"):
        path = f"{GROUP}/namespaces/big/leases{query}"
        as_json = json.loads(fetch(leases, path))
        as_protobuf = envelope.decode(fetch(leases, path, PROTOBUF))
        # a protobuf list's items carry no apiVersion and kind (the list's type says them)
        assert as_protobuf["items"] == [
            {k: v for k, v in item.items() if k not in ("apiVersion", "kind")}
            for item in as_json["items"]]
        assert as_protobuf["metadata"] == as_json["metadata"]


def test_a_client_that_does_not_read_its_big_list_holds_up_no_other(leases: Served) -> None:
    # 4 MB of Leases: more than the socket buffers hold, so their answer stalls
    leases.api.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "huge"}})
    for i in range(40):
        big = lease(f"h{i:02d}", "huge", 1)
        big["metadata"]["annotations"] = {"note": "x" * 100_000}
        leases.api.create(big)
    host, port = leases.handle.url.removeprefix("https://").rsplit(":", 1)
    tls = ssl.create_default_context(cafile=str(leases.handle.credentials.ca_cert))
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect((host, int(port)))
    try:
        with tls.wrap_socket(raw, server_hostname=host) as stalled:
            stalled.sendall(f"GET {GROUP}/namespaces/huge/leases HTTP/1.1\r\nHost: {host}\r\n"
                            f"Authorization: Bearer {leases.handle.credentials.token}\r\n"
                            "\r\n".encode())
            stalled.recv(1)  # its answer has begun, and is never read further
            for _ in range(3):
                body = json.loads(fetch(leases, f"{GROUP}/namespaces/big/leases"))
                assert len(body["items"]) == 250
    finally:
        for i in range(40):
            leases.api.delete("Lease", f"h{i:02d}", "huge")
