"""The API server core's paged lists: etcd's key order, pages after the last key shown
as of the first page's resourceVersion (the kept history undone), remaining counts,
and the continue token's encoding as k8s.io/apiserver's storage writes it."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import BadRequest, ExpiredContinue
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver import continue_token
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def lease(name: str, namespace: str, holder: str = "h") -> dict[str, object]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": name[0]}},
            "spec": {"holderIdentity": holder}}


@pytest.fixture
def api() -> APIServer:
    server = APIServer(clock=FakeClock(), history_limit=20, bootstrap_namespaces=())
    for namespace in ("a", "a-b"):
        server.create(builders.namespace(namespace))
    return server


def pages(api: APIServer, limit: int, namespace: str | None = None,
          label_selector: str | None = None) -> list[list[str]]:
    out, token = [], ""
    while True:
        found = api.list("Lease", namespace, label_selector, limit=limit, continue_from=token)
        out.append([f"{o.namespace}/{o.name}" for o in found.items])
        token = found.continue_token
        if not token:
            return out


def test_lists_are_in_etcds_key_order_namespace_slash_name(api: APIServer) -> None:
    api.create(lease("x", "a"))
    api.create(lease("y", "a-b"))
    # "a-b/y" < "a/x" byte-wise ("-" sorts before "/"), as etcd orders the keys
    assert [f"{o.namespace}/{o.name}" for o in api.list("Lease").items] == ["a-b/y", "a/x"]
    assert pages(api, 1) == [["a-b/y"], ["a/x"]]
    assert pages(api, 1, namespace="a") == [["a/x"]]


def test_a_selector_page_fills_from_later_keys_and_may_end_empty(api: APIServer) -> None:
    for name in ("p1", "q1", "p2", "q2"):
        api.create(lease(name, "a"))
    assert pages(api, 1, label_selector="app=p") == [["a/p1"], ["a/p2"], []]
    assert pages(api, 2, label_selector="app=p") == [["a/p1", "a/p2"], []]
    found = api.list("Lease", "a", "app=p", limit=1)
    assert found.remaining_item_count is None  # not known with a selector
    assert api.list("Lease", "a", limit=1).remaining_item_count == 3


def test_a_continued_page_undoes_what_changed_since_the_first(api: APIServer) -> None:
    for name in ("n1", "n2", "n3", "n4"):
        api.create(lease(name, "a"))
    first = api.list("Lease", "a", limit=1)
    api.delete("Lease", "n2", "a")
    api.create(lease("n25", "a"))
    api.update(Resource.from_dict(lease("n3", "a", holder="new")))
    api.update(Resource.from_dict(lease("n3", "a", holder="newer")))
    rest = api.list("Lease", "a", limit=10, continue_from=first.continue_token)
    assert [o.name for o in rest.items] == ["n2", "n3", "n4"]
    assert rest.items[1].spec["holderIdentity"] == "h"
    assert rest.resource_version == first.resource_version
    assert api.list("Lease", "a", limit=2, continue_from=first.continue_token
                    ).remaining_item_count == 1


def test_a_token_past_the_kept_history_raises_expired_with_a_newest_version_token(
        api: APIServer) -> None:
    for name in ("n1", "n2"):
        api.create(lease(name, "a"))
    first = api.list("Lease", "a", limit=1)
    for i in range(25):
        api.create(lease(f"z{i}", "a"))
    with pytest.raises(ExpiredContinue) as caught:
        api.list("Lease", "a", limit=1, continue_from=first.continue_token)
    assert caught.value.code == 410
    latest = caught.value.continue_token
    assert continue_token.decode(latest, "a/") == continue_token.Continuation(
        "a/n1\x00", continue_token.LATEST)
    assert [o.name for o in api.list("Lease", "a", limit=2, continue_from=latest).items] \
        == ["n2", "z0"]


def test_tokens_encode_as_the_storage_does() -> None:
    token = continue_token.after("ns/name", "", 42)
    assert token == "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NDIsInN0YXJ0IjoibnMvbmFtZVx1MDAwMCJ9"
    assert continue_token.decode(token, "") == continue_token.Continuation("ns/name\x00", 42)
    assert continue_token.decode(continue_token.encode("/x", 3), "p/").key == "p/x"


@pytest.mark.parametrize("start", ["a//b", "a/./b", "a/..", "a/"])
def test_a_start_key_that_path_clean_would_change_is_refused(start: str) -> None:
    with pytest.raises(BadRequest, match=f"continue key is not valid: {start}$"):
        continue_token.decode(continue_token.encode(start, 5), "")
