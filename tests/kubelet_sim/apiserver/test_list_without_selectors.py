"""A list without selectors takes a slice of the sorted keys instead of asking a
predicate about every object: the same objects, resourceVersion, continue token and
remaining count as the predicate's walk, whatever the namespace, limit and start; with
changes to undo (a page at an older resourceVersion) and for a cluster-scoped kind
asked with a namespace it walks as before. The listed objects' JSON is kept on them:
made when they are written once their kind is big, else when first listed, and always
what encoding the object anew writes."""

from __future__ import annotations

import itertools
import json

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver import storage
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.storage import ObjectStore, Page, key_prefix
from kubelet_sim.testing.fake_clock import FakeClock


def lease(name: str, namespace: str) -> dict[str, object]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace}, "spec": {}}


@pytest.fixture
def api() -> APIServer:
    server = APIServer(clock=FakeClock(), history_limit=100, bootstrap_namespaces=())
    for namespace in ("a", "a-b", "b"):
        server.create(builders.namespace(namespace))
        for i in range(7):
            server.create(lease(f"l{i}", namespace))
    return server


def store(api: APIServer) -> ObjectStore:
    found: ObjectStore = api._store
    return found


def every(_: Resource) -> bool:
    return True


def same(one: Page, other: Page) -> bool:
    return ([id(o) for o in one.items], one.resource_version, one.last_key, one.remaining) \
        == ([id(o) for o in other.items], other.resource_version, other.last_key,
            other.remaining)


@pytest.mark.parametrize(("namespace", "limit", "start"), list(itertools.product(
    (None, "a", "a-b", "c"), (0, 1, 3, 7, 50), ("", "a/l3\x00", "a-b/l6\x00", "zz"))))
def test_a_page_without_a_predicate_is_the_page_every_object_matches(
        api: APIServer, namespace: str | None, limit: int, start: str) -> None:
    prefix = key_prefix(namespace)
    fast = store(api).page("Lease", prefix, start, None, limit)
    walked = store(api).page("Lease", prefix, start, every, limit)
    assert same(fast, walked)


def test_a_page_at_an_older_version_undoes_the_changes_without_a_predicate_too(
        api: APIServer) -> None:
    at = int(api.resource_version)
    api.delete("Lease", "l2", "a")
    api.create(lease("l21", "a"))
    api.update(Resource.from_dict({**lease("l4", "a"), "spec": {"holderIdentity": "x"}}))
    for limit in (0, 2, 5):
        fast = store(api).page("Lease", "a/", "", None, limit, at)
        walked = store(api).page("Lease", "a/", "", every, limit, at)
        assert same(fast, walked)
        assert [o.name for o in fast.items] == [f"l{i}" for i in range(7)][:limit or None]


def test_lists_and_their_pages_read_the_same_with_and_without_a_predicate(
        api: APIServer) -> None:
    for namespace, limit in itertools.product((None, "a-b"), (0, 4)):
        token = ""
        while True:
            fast = api.read_list("Lease", namespace, limit=limit, continue_from=token)
            walked = api.read_list("Lease", namespace, where=every, limit=limit,
                                   continue_from=token)
            assert [id(o) for o in fast.items] == [id(o) for o in walked.items]
            assert (fast.resource_version, fast.continue_token) == \
                (walked.resource_version, walked.continue_token)
            token = fast.continue_token
            if not token:
                break


def test_a_cluster_scoped_kind_asked_in_a_namespace_lists_nothing_as_before(
        api: APIServer) -> None:
    assert [o.name for o in api.read_list("Namespace").items] == ["a", "a-b", "b"]
    assert api.read_list("Namespace", "a").items == []


def test_a_big_kinds_objects_carry_their_json_from_their_write_the_rest_from_a_list(
        api: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "ENCODE_ON_WRITE_FROM", 22)  # the fixture made 21 Leases
    assert all(o.encoded is None for o in api.read_list("Lease").items)
    api.create(lease("l7", "a"))
    api.update(Resource.from_dict({**lease("l1", "b"), "spec": {"holderIdentity": "x"}}))
    written = {o.key for o in api.read_list("Lease").items if o.encoded is not None}
    assert written == {("Lease", "a", "l7"), ("Lease", "b", "l1")}
    listed = api.read_list("Lease").items
    assert api.encoded_json(listed) == [json.dumps(o.to_dict()).encode() for o in listed]
    assert all(o.encoded is not None for o in listed)
