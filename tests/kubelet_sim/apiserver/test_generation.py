"""metadata.generation kind by kind, as kube-apiserver v1.35's registry strategies keep it
(kubelet_sim.apiserver.generation)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import KINDS, Resource, new
from kubelet_sim.apiserver.generation import RULES, tracked
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def pod(name: str = "web", node: str = "") -> Resource:
    spec: dict = {"containers": [{"name": "c", "image": "busybox:1"}]}
    if node:
        spec["nodeName"] = node
    return new("Pod", name, "default", spec=spec)


def slice_(name: str = "web-1") -> Resource:
    return new("EndpointSlice", name, "default", addressType="IPv4",
               endpoints=[{"addresses": ["10.0.0.1"]}], ports=[{"port": 80}])


def test_every_served_kind_has_an_entry_in_the_generation_table() -> None:
    assert sorted(set(KINDS) - set(RULES)) == []


def test_a_pod_starts_at_generation_1_and_moves_on_a_spec_change_only(api: APIServer) -> None:
    created = api.create(pod())
    assert created.metadata.generation == 1
    created.labels["tier"] = "front"
    created.metadata.annotations["note"] = "x"
    labelled = api.update(created)
    assert labelled.metadata.generation == 1
    labelled.status = {"phase": "Running"}
    assert api.update_status(labelled).metadata.generation == 1
    changed = api.get("Pod", "web", "default")
    changed.spec["containers"][0]["image"] = "busybox:2"
    assert api.update(changed).metadata.generation == 2


def test_binding_a_pod_leaves_its_generation(api: APIServer) -> None:
    api.create(new("Node", "node-1"))
    api.create(pod())
    assert api.bind("web", "default", "node-1").metadata.generation == 1


def test_a_graceful_pod_delete_moves_the_generation_once(api: APIServer) -> None:
    api.create(pod(node="node-1"))
    marked = api.delete("Pod", "web", "default")
    assert marked.is_terminating and marked.metadata.generation == 2
    again = api.delete("Pod", "web", "default", grace_period_seconds=5)
    assert again.metadata.generation == 2


def _set(where: dict, key: str, value: object) -> None:
    where[key] = value


UNTRACKED = [
    (new("ConfigMap", "cfg", "default", data={"a": "1"}),
     lambda o: _set(o.body["data"], "a", "2")),
    (new("StorageClass", "fast", provisioner="csi.example.com"),
     lambda o: _set(o.body, "allowVolumeExpansion", True)),
    (new("Namespace", "team"), lambda o: _set(o.metadata.labels, "team", "a")),
    (new("Service", "web", "default", spec={"ports": [{"port": 80}]}),
     lambda o: _set(o.spec["ports"][0], "port", 81)),
]


@pytest.mark.parametrize(("obj", "change"), UNTRACKED, ids=lambda o: getattr(o, "kind", ""))
def test_kinds_without_a_generation_never_get_one(
        api: APIServer, obj: Resource, change: Callable[[Resource], None]) -> None:
    created = api.create(obj)
    assert created.metadata.generation == 0 and "generation" not in created.to_dict()["metadata"]
    change(created)
    created.metadata.finalizers = ["example.com/keep"]
    updated = api.update(created)
    assert updated.metadata.resource_version != created.metadata.resource_version
    assert updated.metadata.generation == 0
    marked = api.delete(obj.kind, obj.name, obj.namespace)
    assert marked.is_terminating and marked.metadata.generation == 0


def test_a_kind_without_generation_keeps_the_one_its_creator_sent(api: APIServer) -> None:
    sent = new("ConfigMap", "cfg", "default", data={"a": "1"})
    sent.metadata.generation = 7
    created = api.create(sent)
    assert created.metadata.generation == 7
    created.body["data"]["a"] = "2"
    created.metadata.generation = 9
    assert api.update(created).metadata.generation == 7


def test_a_negative_generation_is_invalid(api: APIServer) -> None:
    sent = new("ConfigMap", "cfg", "default")
    sent.metadata.generation = -1
    with pytest.raises(Invalid, match="must be greater than or equal to 0"):
        api.create(sent)


def test_a_client_cannot_set_a_tracked_generation(api: APIServer) -> None:
    sent = pod()
    sent.metadata.generation = 5
    created = api.create(sent)
    assert created.metadata.generation == 1
    created.metadata.generation = 5
    assert api.update(created).metadata.generation == 1


def test_a_csidriver_moves_on_spec_changes(api: APIServer) -> None:
    created = api.create(new("CSIDriver", "csi.example.com", spec={"attachRequired": True}))
    assert created.metadata.generation == 1
    created.spec["podInfoOnMount"] = True
    assert api.update(created).metadata.generation == 2


def test_an_endpointslice_moves_on_its_fields_and_on_labels_not_annotations(
        api: APIServer) -> None:
    created = api.create(slice_())
    assert created.metadata.generation == 1
    created.metadata.annotations["note"] = "x"
    created = api.update(created)
    assert created.metadata.generation == 1
    created.labels["kubernetes.io/service-name"] = "web"
    created = api.update(created)
    assert created.metadata.generation == 2
    created.body["endpoints"][0]["addresses"] = ["10.0.0.2"]
    assert api.update(created).metadata.generation == 3


def test_a_volume_snapshot_class_moves_like_a_custom_resource(api: APIServer) -> None:
    created = api.create(new("VolumeSnapshotClass", "snap", driver="csi.example.com",
                             deletionPolicy="Delete"))
    assert created.metadata.generation == 1
    created.labels["a"] = "b"
    created = api.update(created)
    assert created.metadata.generation == 1
    created.body["parameters"] = {"x": "y"}
    assert api.update(created).metadata.generation == 2


def test_the_table_names_the_kinds_kube_apiserver_tracks() -> None:
    assert {k for k in RULES if tracked(k)} >= {
        "Pod", "NetworkPolicy", "PodDisruptionBudget", "CSIDriver", "EndpointSlice",
        "CustomResourceDefinition", "Deployment", "StatefulSet", "Job"}
    assert not any(tracked(k) for k in ("Service", "PersistentVolume", "StorageClass",
                                        "VolumeAttachment", "Namespace", "Node"))
