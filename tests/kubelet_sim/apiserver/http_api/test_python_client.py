"""The official Python client (kubernetes) against the simulated API server, and the
error answers every client relies on: 401, 404, 409, 410, 415, 422 as Status objects."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from kubelet_sim.api import builders

from .conftest import Served


@pytest.fixture
def core(served: Served) -> Any:
    """The client's CoreV1Api. Typed Any: its models declare every field optional and
    take dicts where the stubs say models, which is how the client is used."""
    return client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))


def pod_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def raw(served: Served, path: str, *, token: str | None, method: str = "GET",
        body: bytes | None = None, content_type: str = "") -> tuple[int, dict[str, Any]]:
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(served.handle.url + path, data=body, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if content_type:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request, context=tls, timeout=10) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_without_the_token_everything_is_401(served: Served) -> None:
    for path in ("/version", "/healthz", "/api/v1/pods", "/apis"):
        code, body = raw(served, path, token=None)
        assert code == 401 and body["kind"] == "Status" and body["reason"] == "Unauthorized"
    code, _ = raw(served, "/api/v1/pods", token="wrong")
    assert code == 401


def test_the_client_lists_creates_and_reads(served: Served, core: Any) -> None:
    assert [n.metadata.name for n in core.list_node().items] == ["node-1"]
    created = core.create_namespaced_pod("default", pod_body("p1"))
    assert created.metadata.uid and created.status.phase == "Pending"
    assert core.read_namespaced_pod("p1", "default").metadata.uid == created.metadata.uid
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces(
        label_selector="a=b").items] == ["p1"]


def test_a_stale_update_is_409_conflict(served: Served, core: Any) -> None:
    pod = core.create_namespaced_pod("default", pod_body("p1"))
    core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"x": "1"}}})
    pod.metadata.labels = {"x": "2"}
    with pytest.raises(ApiException) as caught:
        core.replace_namespaced_pod("p1", "default", pod)
    assert caught.value.status == 409
    assert json.loads(str(caught.value.body))["reason"] == "Conflict"


def test_not_found_invalid_and_unsupported_media(served: Served,
                                                 core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.read_namespaced_pod("nope", "default")
    assert caught.value.status == 404
    assert json.loads(str(caught.value.body))["message"] == 'pods "nope" not found'
    bad = pod_body("p2")
    bad["spec"]["containers"] = []
    with pytest.raises(ApiException) as caught:
        core.create_namespaced_pod("default", bad)
    status = json.loads(str(caught.value.body))
    assert caught.value.status == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"]
    core.create_namespaced_pod("default", pod_body("p3"))
    code, body = raw(served, "/api/v1/namespaces/default/pods/p3",
                     token=served.handle.credentials.token, method="PATCH",
                     body=b"{}", content_type="text/plain")
    assert code == 415 and body["reason"] == "UnsupportedMediaType"
    assert body["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, "
        "application/strategic-merge-patch+json, application/apply-patch+yaml")


def test_limit_and_continue_page_through_a_list(served: Served,
                                                core: Any) -> None:
    for i in range(5):
        core.create_namespaced_pod("default", pod_body(f"p{i}"))
    seen, token = [], None
    while True:
        page = core.list_namespaced_pod("default", limit=2, _continue=token)
        seen += [p.metadata.name for p in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert seen == [f"p{i}" for i in range(5)]


def test_watch_streams_events_and_an_expired_version_is_410(served: Served,
                                                            core: Any) -> None:
    start = core.list_namespaced_pod("default").metadata.resource_version
    core.create_namespaced_pod("default", pod_body("w1"))
    core.delete_namespaced_pod("w1", "default")
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=2)]
    assert events[0] == ("ADDED", "w1") and events[-1] == ("DELETED", "w1")
    for i in range(60):  # more writes than the server keeps (history_limit=50)
        served.api.create(builders.namespace(f"ns-{i}"))
    with pytest.raises(ApiException) as caught:
        list(watch.Watch().stream(core.list_namespaced_pod, "default",
                                  resource_version=start, timeout_seconds=2))
    assert caught.value.status == 410


def test_malformed_integer_parameters_are_400(served: Served) -> None:
    token = served.handle.credentials.token
    for query in ("limit=x", "watch=1&timeoutSeconds=soon"):
        code, body = raw(served, f"/api/v1/namespaces/default/pods?{query}", token=token)
        assert code == 400 and body["reason"] == "BadRequest"


def test_a_watch_that_gets_410_relists_and_resumes(served: Served, core: Any) -> None:
    """client-go's reflector loop with the Python client: list, watch from the list's
    resourceVersion; on 410 Gone list again and watch from the new version. The cache it
    keeps ends equal to the server's pods, and a change after the relist arrives."""
    cache: dict[str, str] = {}
    listed = core.list_namespaced_pod("default")
    cache.update({p.metadata.name: p.metadata.resource_version for p in listed.items})
    version = listed.metadata.resource_version
    core.create_namespaced_pod("default", pod_body("before"))
    for i in range(60):  # the version the watcher holds falls out of the history (50)
        served.api.create(builders.namespace(f"gone-{i}"))
    relists = 0
    for _attempt in range(3):
        try:
            for event in watch.Watch().stream(core.list_namespaced_pod, "default",
                                              resource_version=version, timeout_seconds=1):
                obj = event["object"]
                if event["type"] == "DELETED":
                    cache.pop(obj.metadata.name, None)
                else:
                    cache[obj.metadata.name] = obj.metadata.resource_version
                version = obj.metadata.resource_version
            break
        except ApiException as err:
            assert err.status == 410
            relists += 1
            listed = core.list_namespaced_pod("default")
            cache = {p.metadata.name: p.metadata.resource_version for p in listed.items}
            version = listed.metadata.resource_version
            core.create_namespaced_pod("default", pod_body("after"))
    assert relists == 1
    assert set(cache) == {"before", "after"}
    assert cache == {p.metadata.name: p.metadata.resource_version
                     for p in core.list_namespaced_pod("default").items}


def test_a_body_takes_a_missing_kind_from_the_url_but_a_wrong_one_is_400(served: Served) -> None:
    token = served.handle.credentials.token
    path = "/apis/coordination.k8s.io/v1/namespaces/default/leases"

    def post(doc: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return raw(served, path, token=token, method="POST", body=json.dumps(doc).encode(),
                   content_type="application/json")

    code, created = post({"metadata": {"name": "bare"}, "spec": {}})
    assert code == 201
    assert (created["kind"], created["apiVersion"]) == ("Lease", "coordination.k8s.io/v1")
    code, refused = post({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "odd"}})
    assert code == 400 and refused["reason"] == "BadRequest"
    assert "do not match coordination.k8s.io/v1 Lease" in refused["message"]
    code, _ = post({"kind": "Lease", "apiVersion": "coordination.k8s.io/v2",
                    "metadata": {"name": "odd"}})
    assert code == 400
    assert [lease.name for lease in served.api.list("Lease", "default").items] == ["bare"]
