"""The namespace registry's rules: the first delete only marks a namespace Terminating,
``spec.finalizers`` hold it until the ``finalize`` subresource empties them, and a
terminating namespace with no finalizer of either kind goes."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import Conflict, InvalidObject, NotFound
from kubelet_sim.api.model import JSON, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    server = APIServer(clock=FakeClock())
    server.create(new("Namespace", "team"))
    return server


def finalize(name: str, finalizers: list[str], resource_version: str = "") -> JSON:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "resourceVersion": resource_version},
            "spec": {"finalizers": finalizers}}


def test_a_deleted_namespace_is_terminating_until_its_finalizers_go(api: APIServer) -> None:
    api.create(new("ConfigMap", "settings", "team"))
    marked = api.delete("Namespace", "team")
    assert marked.status["phase"] == "Terminating" and marked.is_terminating
    assert marked.spec["finalizers"] == ["kubernetes"]
    assert api.get("ConfigMap", "settings", "team").name == "settings"  # the controller's job
    again = api.delete("Namespace", "team")
    assert again.metadata.resource_version == marked.metadata.resource_version
    api.finalize(finalize("team", []))
    with pytest.raises(NotFound):
        api.get("Namespace", "team")


def test_finalize_replaces_spec_finalizers_only(api: APIServer) -> None:
    current = api.get("Namespace", "team")
    sent = finalize("team", ["example.com/keep"], current.metadata.resource_version)
    sent["metadata"]["labels"] = {"ignored": "yes"}
    sent["status"] = {"phase": "Terminating"}
    done = api.finalize(sent)
    assert done.spec["finalizers"] == ["example.com/keep"]
    assert done.status["phase"] == "Active" and "ignored" not in done.metadata.labels
    with pytest.raises(Conflict):
        api.finalize(finalize("team", [], current.metadata.resource_version))


def test_an_update_keeps_spec_finalizers(api: APIServer) -> None:
    ns = api.get("Namespace", "team")
    ns.spec["finalizers"] = []
    assert api.update(ns).spec["finalizers"] == ["kubernetes"]


def test_metadata_finalizers_hold_a_finalized_namespace(api: APIServer) -> None:
    ns = api.get("Namespace", "team")
    ns.metadata.finalizers = ["example.com/hold"]
    api.update(ns)
    api.delete("Namespace", "team")
    api.finalize(finalize("team", []))
    held = api.get("Namespace", "team")
    held.metadata.finalizers = []
    api.update(held)
    with pytest.raises(NotFound):
        api.get("Namespace", "team")


def test_a_namespace_without_finalizers_goes_on_the_second_delete(api: APIServer) -> None:
    api.finalize(finalize("team", []))
    assert api.delete("Namespace", "team").status["phase"] == "Terminating"
    api.delete("Namespace", "team")
    with pytest.raises(NotFound):
        api.get("Namespace", "team")


def test_finalizer_names_are_qualified_or_standard(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.finalize(finalize("team", ["kubernetes", "mine"]))
    assert str(refused.value) == (
        'Namespace "team" is invalid: spec.finalizers[1]: Invalid value: "mine": name is '
        "neither a standard finalizer name nor is it fully qualified")
    with pytest.raises(InvalidObject):
        api.create(new("Namespace", "odd", spec={"finalizers": ["bad name/x"]}))
