"""API server: graceful deletion and finalizers (namespaces: test_namespace_lifecycle and
the namespace controller's tests)."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import Conflict, Invalid, NotFound
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def pod(name: str, ns: str = "default", node: str | None = None,
        finalizers: list[str] | None = None) -> Resource:
    spec: dict = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return new("Pod", name, ns, spec=spec, finalizers=finalizers)


def pvc(name: str, finalizers: list[str] | None = None) -> Resource:
    return new("PersistentVolumeClaim", name, "default", finalizers=finalizers, spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}})


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def test_delete_without_finalizers_removes_the_object(api: APIServer) -> None:
    api.create(pvc("data"))
    gone = api.delete("PersistentVolumeClaim", "data", "default")
    assert gone.name == "data"
    with pytest.raises(NotFound):
        api.get("PersistentVolumeClaim", "data", "default")


def test_delete_missing_fails_not_found(api: APIServer) -> None:
    with pytest.raises(NotFound):
        api.delete("PersistentVolumeClaim", "data", "default")


def test_delete_with_finalizers_only_marks_the_object(api: APIServer) -> None:
    created = api.create(pvc("data", ["kubernetes.io/pvc-protection"]))
    marked = api.delete("PersistentVolumeClaim", "data", "default")
    assert marked.metadata.deletion_timestamp == "2025-01-01T00:00:00Z"
    assert marked.metadata.deletion_grace_period_seconds == 0
    assert marked.metadata.generation == created.metadata.generation == 0  # claims have none
    assert api.get("PersistentVolumeClaim", "data", "default").is_terminating


def test_removing_the_last_finalizer_deletes_the_marked_object(api: APIServer) -> None:
    api.create(pvc("data", ["a/one", "b/two"]))
    api.delete("PersistentVolumeClaim", "data", "default")
    obj = api.get("PersistentVolumeClaim", "data", "default")
    obj.metadata.finalizers = ["b/two"]
    api.update(obj)
    assert api.get("PersistentVolumeClaim", "data", "default").metadata.finalizers == ["b/two"]
    api.patch("PersistentVolumeClaim", "data", {"metadata": {"finalizers": None}}, "default")
    with pytest.raises(NotFound):
        api.get("PersistentVolumeClaim", "data", "default")


def test_no_new_finalizer_on_an_object_being_deleted(api: APIServer) -> None:
    api.create(pvc("data", ["a/one"]))
    api.delete("PersistentVolumeClaim", "data", "default")
    obj = api.get("PersistentVolumeClaim", "data", "default")
    obj.metadata.finalizers.append("c/three")
    with pytest.raises(Invalid):
        api.update(obj)


def test_deletion_timestamp_cannot_be_cleared_by_update(api: APIServer) -> None:
    api.create(pvc("data", ["a/one"]))
    api.delete("PersistentVolumeClaim", "data", "default")
    obj = api.get("PersistentVolumeClaim", "data", "default")
    obj.metadata.deletion_timestamp = None
    obj.labels["x"] = "y"
    assert api.update(obj).is_terminating


def test_second_delete_of_a_terminating_object_changes_nothing(api: APIServer) -> None:
    api.create(pvc("data", ["a/one"]))
    first = api.delete("PersistentVolumeClaim", "data", "default")
    second = api.delete("PersistentVolumeClaim", "data", "default")
    assert second.metadata.resource_version == first.metadata.resource_version


def test_delete_precondition_on_uid_fails_conflict(api: APIServer) -> None:
    api.create(pvc("data"))
    with pytest.raises(Conflict):
        api.delete("PersistentVolumeClaim", "data", "default", uid="not-the-uid")


def test_scheduled_pod_waits_for_its_grace_period_and_the_final_delete(api: APIServer) -> None:
    api.create(pod("web", node="node-1"))
    marked = api.delete("Pod", "web", "default")
    assert marked.metadata.deletion_grace_period_seconds == 30
    assert marked.metadata.deletion_timestamp == "2025-01-01T00:00:30Z"
    assert api.get("Pod", "web", "default").is_terminating
    api.delete("Pod", "web", "default", grace_period_seconds=0)  # the kubelet's final delete
    with pytest.raises(NotFound):
        api.get("Pod", "web", "default")


def test_unscheduled_pod_is_deleted_at_once(api: APIServer) -> None:
    api.create(pod("web"))
    api.delete("Pod", "web", "default")
    with pytest.raises(NotFound):
        api.get("Pod", "web", "default")


def test_pod_with_finalizer_survives_the_final_delete_until_released(api: APIServer) -> None:
    api.create(pod("web", node="node-1", finalizers=["example.com/hold"]))
    api.delete("Pod", "web", "default", grace_period_seconds=0)
    obj = api.get("Pod", "web", "default")
    assert obj.metadata.deletion_grace_period_seconds == 0
    obj.metadata.finalizers = []
    api.update(obj)
    with pytest.raises(NotFound):
        api.get("Pod", "web", "default")


def test_storage_protection_keeps_a_deleted_claim_until_released() -> None:
    api = APIServer(clock=FakeClock(), storage_object_in_use_protection=True)
    claim = api.create(pvc("data"))
    assert claim.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    api.delete("PersistentVolumeClaim", "data", "default")
    assert api.get("PersistentVolumeClaim", "data", "default").is_terminating
    api.patch("PersistentVolumeClaim", "data", {"metadata": {"finalizers": []}}, "default")
    with pytest.raises(NotFound):
        api.get("PersistentVolumeClaim", "data", "default")


def test_without_storage_protection_claims_get_no_finalizer(api: APIServer) -> None:
    assert api.create(pvc("data")).metadata.finalizers == []
