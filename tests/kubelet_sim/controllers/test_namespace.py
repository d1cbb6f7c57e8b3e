"""kube-controller-manager's namespace controller: a deleted namespace's contents are
deleted, its deletion conditions say what remains and why, and once it is empty its
``kubernetes`` finalizer is removed and it goes."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.namespace import NamespaceController
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    server = APIServer(clock=FakeClock())
    server.create(new("Namespace", "team"))
    return server


def conditions(api: APIServer, name: str = "team") -> dict[str, tuple[str, str, str]]:
    found: list[JSON] = api.get("Namespace", name).status.get("conditions") or []
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in found}


def gone(api: APIServer, name: str = "team") -> bool:
    try:
        api.get("Namespace", name)
    except NotFound:
        return True
    return False


def scheduled_pod(name: str, namespace: str) -> Resource:
    return new("Pod", name, namespace, spec={"nodeName": "node-1", "containers": [
        {"name": "c", "image": "busybox"}]})


async def test_an_empty_deleted_namespace_is_finalized_and_goes(api: APIServer) -> None:
    api.create(new("ConfigMap", "settings", "team"))
    api.create(new("ConfigMap", "kept", "default"))
    api.delete("Namespace", "team")
    assert await NamespaceController(api).sync_once()
    assert gone(api)
    assert api.get("ConfigMap", "kept", "default").name == "kept"


async def test_a_pod_in_its_grace_period_keeps_the_namespace_terminating(
        api: APIServer) -> None:
    api.create(scheduled_pod("web", "team"))
    api.create(new("ConfigMap", "settings", "team"))
    api.delete("Namespace", "team")
    controller = NamespaceController(api)
    await controller.sync_once()
    assert api.get("Pod", "web", "team").is_terminating  # waiting for the kubelet
    assert api.list("ConfigMap", "team").items == []
    assert conditions(api) == {
        "NamespaceDeletionDiscoveryFailure": ("False", "ResourcesDiscovered",
                                              "All resources successfully discovered"),
        "NamespaceDeletionGroupVersionParsingFailure": (
            "False", "ParsedGroupVersions", "All legacy kube types successfully parsed"),
        "NamespaceDeletionContentFailure": (
            "False", "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization"),
        "NamespaceContentRemaining": ("True", "SomeResourcesRemain",
                                      "Some resources are remaining: pods. has 1 resource "
                                      "instances"),
        "NamespaceFinalizersRemaining": ("False", "ContentHasNoFinalizers",
                                         "All content-preserving finalizers finished"),
    }
    assert api.get("Namespace", "team").spec["finalizers"] == ["kubernetes"]
    api.delete("Pod", "web", "team", grace_period_seconds=0)  # the kubelet's final delete
    await controller.sync_once()
    assert gone(api)


async def test_content_held_by_a_finalizer_is_named_in_the_conditions(api: APIServer) -> None:
    api.create(new("ConfigMap", "held", "team", finalizers=["example.com/hold"]))
    api.delete("Namespace", "team")
    controller = NamespaceController(api)
    await controller.sync_once()
    found = conditions(api)
    assert found["NamespaceContentRemaining"][2] == (
        "Some resources are remaining: configmaps. has 1 resource instances")
    assert found["NamespaceFinalizersRemaining"] == (
        "True", "SomeFinalizersRemain",
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
        "resource instances")
    held = api.get("ConfigMap", "held", "team")
    held.metadata.finalizers = []
    api.update(held)
    await controller.sync_once()
    assert gone(api)


async def test_a_namespace_that_is_not_deleted_is_left_alone(api: APIServer) -> None:
    api.create(new("ConfigMap", "settings", "team"))
    assert not await NamespaceController(api).sync_once()
    assert api.get("ConfigMap", "settings", "team").name == "settings"
