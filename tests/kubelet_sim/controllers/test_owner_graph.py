"""The garbage collector's ownership index: a change concerns only the objects it names."""

from __future__ import annotations

from kubelet_sim.api.model import Resource, new
from kubelet_sim.controllers.owner_graph import OwnerGraph


def obj(name: str, uid: str, *owners: str, finalizers: tuple[str, ...] = (),
        deleting: bool = False) -> Resource:
    out = new("Lease", name, "default", finalizers=list(finalizers))
    out.metadata.uid = uid
    out.metadata.owner_references = [{"apiVersion": "coordination.k8s.io/v1",
                                      "kind": "Lease", "name": o, "uid": o} for o in owners]
    if deleting:
        out.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    return out


def test_dependents_are_indexed_by_owner_uid() -> None:
    graph = OwnerGraph()
    assert graph.reset([obj("o", "o"), obj("a", "a", "o"), obj("b", "b", "o"),
                        obj("x", "x")]) == {"a", "b"}  # only objects with owners
    assert graph.dependents("o") == {"a", "b"}
    assert graph.observe("DELETED", obj("o", "o")) == {"a", "b"}
    assert graph.observe("MODIFIED", obj("a", "a")) == set()  # owner reference removed
    assert graph.dependents("o") == {"b"}


def test_an_owner_waiting_for_the_collector_is_looked_at_when_a_dependent_changes() -> None:
    graph = OwnerGraph()
    graph.reset([obj("o", "o"), obj("a", "a", "o")])
    assert graph.observe("MODIFIED", obj("o", "o", finalizers=("foregroundDeletion",),
                                         deleting=True)) == {"o"}
    assert graph.observe("DELETED", obj("a", "a", "o")) == {"o"}
    assert not graph.has_dependents("o")
    assert graph.observe("MODIFIED", obj("x", "x")) == set()  # unrelated: nothing to do
