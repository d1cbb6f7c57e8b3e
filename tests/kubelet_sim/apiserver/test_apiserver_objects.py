"""API server: create/get/list/update/status/patch, versions and concurrency."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import AlreadyExists, BadRequest, Conflict, Forbidden, Invalid, NotFound
from kubelet_sim.api.model import NAMESPACE_NAME_LABEL, Resource, new
from kubelet_sim.apiserver.patch.merge import apply_merge_patch
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def pod(name: str, ns: str = "default", labels: dict[str, str] | None = None,
        node: str | None = None) -> Resource:
    spec: dict = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return new("Pod", name, ns, spec=spec, labels=labels)


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def test_create_assigns_uid_version_generation_and_timestamp(api: APIServer) -> None:
    created = api.create(pod("web"))
    assert created.metadata.uid and len(created.metadata.uid) == 36
    assert int(created.metadata.resource_version) > 0
    assert created.metadata.generation == 1
    assert created.metadata.creation_timestamp == "2025-01-01T00:00:00Z"
    assert created.status == {"phase": "Pending", "qosClass": "BestEffort"}  # reset, QoS set


def test_create_same_name_fails_already_exists(api: APIServer) -> None:
    api.create(pod("web"))
    with pytest.raises(AlreadyExists):
        api.create(pod("web"))


def test_same_name_in_another_namespace_is_a_different_object(api: APIServer) -> None:
    api.create(new("Namespace", "other"))
    a, b = api.create(pod("web")), api.create(pod("web", "other"))
    assert a.metadata.uid != b.metadata.uid


def test_create_in_missing_namespace_fails_not_found(api: APIServer) -> None:
    with pytest.raises(NotFound):
        api.create(pod("web", "nowhere"))


def test_cluster_scoped_kinds_have_empty_namespace(api: APIServer) -> None:
    node = api.create(new("Node", "node-1", "default", spec={"podCIDR": "10.244.1.0/24"}))
    assert node.namespace == ""
    assert api.get("Node", "node-1").metadata.uid == node.metadata.uid


def test_namespace_carries_its_name_label(api: APIServer) -> None:
    ns = api.create(new("Namespace", "team-a", labels={NAMESPACE_NAME_LABEL: "forged"}))
    assert ns.labels[NAMESPACE_NAME_LABEL] == "team-a"
    assert ns.status["phase"] == "Active"


def test_generate_name_produces_a_unique_name(api: APIServer) -> None:
    template = Resource.from_dict(
        {"kind": "Pod", "metadata": {"generateName": "web-"},
         "spec": {"containers": [{"name": "c", "image": "i"}]}})
    a, b = api.create(template), api.create(template)
    assert a.name.startswith("web-") and len(a.name) == 9 and a.name != b.name


def test_get_missing_fails_not_found(api: APIServer) -> None:
    with pytest.raises(NotFound):
        api.get("Pod", "nope", "default")


def test_invalid_object_is_rejected_naming_the_field(api: APIServer) -> None:
    bad = new("Pod", "web", "default", spec={"containers": [{"name": "c"}]})
    with pytest.raises(Invalid) as err:
        api.create(bad)
    assert err.value.field == "spec.containers[0].image"


def test_returned_objects_are_copies(api: APIServer) -> None:
    created = api.create(pod("web", labels={"app": "web"}))
    created.labels["app"] = "mutated"
    assert api.get("Pod", "web", "default").labels["app"] == "web"


def test_resource_version_increases_on_every_write(api: APIServer) -> None:
    seen = [int(api.resource_version)]
    obj = api.create(pod("web"))
    seen.append(int(obj.metadata.resource_version))
    obj.labels["x"] = "1"
    obj = api.update(obj)
    seen.append(int(obj.metadata.resource_version))
    obj.status = {"phase": "Running"}
    obj = api.update_status(obj)
    seen.append(int(obj.metadata.resource_version))
    api.create(new("Namespace", "other"))
    seen.append(int(api.resource_version))
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


def test_update_with_stale_resource_version_fails_conflict(api: APIServer) -> None:
    first = api.create(pod("web"))
    second = api.get("Pod", "web", "default")
    second.labels["winner"] = "second"
    api.update(second)
    first.labels["winner"] = "first"
    with pytest.raises(Conflict):
        api.update(first)
    assert api.get("Pod", "web", "default").labels == {"winner": "second"}


def test_update_without_resource_version_is_unconditional(api: APIServer) -> None:
    api.create(pod("web"))
    blind = pod("web", labels={"a": "b"})
    assert api.update(blind).labels == {"a": "b"}


def test_update_of_missing_object_fails_not_found(api: APIServer) -> None:
    with pytest.raises(NotFound):
        api.update(pod("ghost"))


def test_generation_moves_only_when_spec_changes(api: APIServer) -> None:
    obj = api.create(pod("web"))
    obj.labels["tier"] = "front"
    obj = api.update(obj)
    assert obj.metadata.generation == 1
    obj.status = {"phase": "Running"}
    obj = api.update_status(obj)
    assert obj.metadata.generation == 1
    obj.spec["containers"][0]["image"] = "busybox:2"
    obj = api.update(obj)
    assert obj.metadata.generation == 2


def test_noop_update_writes_nothing(api: APIServer) -> None:
    obj = api.create(pod("web"))
    again = api.update(obj)
    assert again.metadata.resource_version == obj.metadata.resource_version
    assert api.resource_version == obj.metadata.resource_version


def test_main_update_ignores_status(api: APIServer) -> None:
    obj = api.create(pod("web"))
    obj.status = {"phase": "Running"}
    obj.labels["l"] = "v"
    updated = api.update(obj)
    assert updated.status == {"phase": "Pending", "qosClass": "BestEffort"}
    assert updated.labels == {"l": "v"}


def test_pod_status_update_ignores_spec_and_owner_references_but_keeps_labels(
        api: APIServer) -> None:
    obj = api.create(pod("web"))
    obj.status = {"phase": "Running", "podIP": "10.244.1.2"}
    obj.spec["nodeName"] = "node-9"
    obj.labels["l"] = "v"
    obj.metadata.owner_references = [{"apiVersion": "v1", "kind": "Node", "name": "n",
                                      "uid": "u-1"}]
    updated = api.update_status(obj)
    assert updated.status["podIP"] == "10.244.1.2"
    assert "nodeName" not in updated.spec and updated.metadata.owner_references == []
    assert updated.labels == {"l": "v"}  # podStatusStrategy leaves labels to the request


def test_status_update_with_stale_version_fails_conflict(api: APIServer) -> None:
    obj = api.create(pod("web"))
    api.update(pod("web", labels={"x": "y"}))
    obj.status = {"phase": "Running"}
    with pytest.raises(Conflict):
        api.update_status(obj)


def test_status_subresource_missing_for_kinds_without_one(api: APIServer) -> None:
    sc = api.create(new("StorageClass", "fast", provisioner="csi.example.com"))
    with pytest.raises(NotFound):
        api.update_status(sc)


def test_kinds_without_status_subresource_write_everything_in_update(api: APIServer) -> None:
    drv = api.create(new("CSIDriver", "csi.example.com", spec={"attachRequired": False}))
    assert drv.spec["attachRequired"] is False and drv.spec["podInfoOnMount"] is False


def test_merge_patch_merges_objects_and_null_deletes() -> None:
    target = {"a": {"b": 1, "c": 2}, "l": [1, 2], "k": "v"}
    assert apply_merge_patch(target, {"a": {"b": None, "d": 3}, "l": [9], "k": None}) == {
        "a": {"c": 2, "d": 3}, "l": [9]}


def test_patch_updates_labels_and_keeps_the_rest(api: APIServer) -> None:
    api.create(pod("web", labels={"a": "1", "b": "2"}))
    patched = api.patch("Pod", "web", {"metadata": {"labels": {"a": None, "c": "3"}}}, "default")
    assert patched.labels == {"b": "2", "c": "3"}
    assert patched.spec["containers"][0]["image"] == "busybox"


def test_patch_with_stale_resource_version_fails_conflict(api: APIServer) -> None:
    obj = api.create(pod("web"))
    api.patch("Pod", "web", {"metadata": {"labels": {"x": "1"}}}, "default")
    with pytest.raises(Conflict):
        api.patch("Pod", "web", {"metadata": {"resourceVersion": obj.metadata.resource_version,
                                              "labels": {"x": "2"}}}, "default")


def test_status_patch_writes_only_status(api: APIServer) -> None:
    api.create(pod("web"))
    patched = api.patch("Pod", "web", {"status": {"phase": "Running"}, "spec": {"nodeName": "n"}},
                        "default", subresource="status")
    assert patched.status["phase"] == "Running" and "nodeName" not in patched.spec


def test_list_filters_by_namespace_and_labels(api: APIServer) -> None:
    api.create(new("Namespace", "other"))
    api.create(pod("web-1", labels={"app": "web"}))
    api.create(pod("db-1", labels={"app": "db"}))
    api.create(pod("web-2", "other", labels={"app": "web"}))
    names = lambda res: [(o.namespace, o.name) for o in res.items]  # noqa: E731
    assert names(api.list("Pod", label_selector="app=web")) == [
        ("default", "web-1"), ("other", "web-2")]
    assert names(api.list("Pod", namespace="default")) == [("default", "db-1"),
                                                           ("default", "web-1")]
    assert names(api.list("Pod", "other", "app in (web,db)")) == [("other", "web-2")]


def test_list_by_field_selector_on_node_name_and_namespace(api: APIServer) -> None:
    api.create(new("Namespace", "other"))
    api.create(pod("a", node="node-1"))
    api.create(pod("b", node="node-2"))
    api.create(pod("c", "other", node="node-1"))
    on_node_1 = api.list("Pod", field_selector="spec.nodeName=node-1")
    assert [o.name for o in on_node_1.items] == ["a", "c"]
    scoped = api.list("Pod", field_selector="spec.nodeName=node-1,metadata.namespace!=other")
    assert [o.name for o in scoped.items] == ["a"]
    unscheduled = api.list("Pod", field_selector="spec.nodeName=")
    assert unscheduled.items == []


def test_unsupported_field_selector_fails_bad_request(api: APIServer) -> None:
    with pytest.raises(BadRequest):
        api.list("Pod", field_selector="spec.hostname=x")


def test_list_reports_the_current_resource_version(api: APIServer) -> None:
    api.create(pod("web"))
    assert api.list("Pod").resource_version == api.resource_version


def test_creating_in_a_terminating_namespace_is_forbidden(api: APIServer) -> None:
    api.create(new("Namespace", "team", finalizers=["example.com/hold"]))
    api.delete("Namespace", "team")
    with pytest.raises(Forbidden):
        api.create(pod("web", "team"))


def test_create_with_a_resource_version_fails_bad_request(api: APIServer) -> None:
    obj = pod("web")
    obj.metadata.resource_version = "42"
    with pytest.raises(BadRequest):
        api.create(obj)


def test_list_where_filters_in_process(api: APIServer) -> None:
    api.create(pod("a", node="node-1"))
    api.create(pod("b", node="node-2"))
    found = api.list("Pod", where=lambda o: o.spec.get("nodeName") == "node-2")
    assert [o.name for o in found.items] == ["b"]


def test_empty_namespace_lists_all_namespaces_as_client_go_does(api: APIServer) -> None:
    api.create(new("Namespace", "other"))
    api.create(pod("a"))
    api.create(pod("b", "other"))
    assert [o.name for o in api.list("Pod", namespace="").items] == ["a", "b"]


def test_malformed_field_selector_fails_bad_request(api: APIServer) -> None:
    with pytest.raises(BadRequest):
        api.list("Pod", field_selector="spec.nodeName")


def test_update_carrying_another_uid_fails_conflict(api: APIServer) -> None:
    obj = api.create(pod("web"))
    obj.metadata.uid = "0000"
    obj.labels["x"] = "y"
    with pytest.raises(Conflict):
        api.update(obj)


@pytest.mark.parametrize(("metadata", "field"), [
    ({"name": "x", "finalizers": "a"}, "metadata.finalizers"),
    ({"name": "x", "generation": "1"}, "metadata.generation"),
    ({"name": "x", "labels": ["a"]}, "metadata.labels"),
    ({"name": 5}, "metadata.name"),
])
def test_metadata_of_the_wrong_type_is_invalid(metadata: dict, field: str) -> None:
    with pytest.raises(Invalid) as err:
        Resource.from_dict({"kind": "Namespace", "metadata": metadata})
    assert err.value.field == field
