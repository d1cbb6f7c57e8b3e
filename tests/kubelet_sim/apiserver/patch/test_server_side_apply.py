"""Server-side apply and the managedFields every write keeps: ownership from the
schema (list-maps by their keys, sets by value, atomic lists and structs whole),
conflicts between managers, force, fields an applier stops sending."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kubelet_sim.api.errors import ApplyConflict
from kubelet_sim.apiserver.patch import fieldpath as fp
from kubelet_sim.apiserver.patch.managed import Write, apply, manager_from_user_agent, track_update
from kubelet_sim.apiserver.patch.schema import (
    UNTYPED_NODE,
    Node,
    custom_resource_node,
    kind_node,
)

NOW = "2026-12-04T21:00:00Z"
LATER = "2026-12-04T21:05:00Z"


def write(api_version: str, kind: str, now: str = NOW, subresource: str = "") -> Write:
    node = kind_node(api_version, kind)
    assert node is not None
    return Write(node, api_version, subresource, True, now)


def deployment(replicas: int = 2, image: str = "nginx", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                         "containers": [{"name": "c", "image": image,
                                         "ports": [{"containerPort": 80}]}]}}, **extra}}


def stored(obj: dict[str, Any] | None, managed: list[dict[str, Any]],
           live: dict[str, Any] | None = None) -> dict[str, Any]:
    out = copy.deepcopy(obj if obj is not None else live)
    assert out is not None
    out["metadata"]["managedFields"] = managed
    return out


def entry(managed: list[dict[str, Any]], manager: str) -> dict[str, Any]:
    [found] = [e for e in managed if e["manager"] == manager]
    return found


def applied(manager: str, config: dict[str, Any], live: dict[str, Any] | None = None,
            force: bool = False, now: str = NOW) -> dict[str, Any]:
    result = apply(live, config, manager, force, write("apps/v1", "Deployment", now))
    return stored(result.obj, result.managed_fields, live)


def test_apply_records_the_applied_fields_in_fields_v1() -> None:
    obj = applied("alice", deployment())
    mine = entry(obj["metadata"]["managedFields"], "alice")
    assert mine["operation"] == "Apply" and mine["apiVersion"] == "apps/v1"
    assert mine["time"] == NOW and mine["fieldsType"] == "FieldsV1"
    assert mine["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:replicas": {},
            "f:selector": {},  # LabelSelector is an atomic struct
            "f:template": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {
                "f:containers": {'k:{"name":"c"}': {
                    ".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {
                        ".": {}, "f:containerPort": {}}}}}}}}}


def test_a_second_manager_changing_an_owned_field_conflicts() -> None:
    live = applied("alice", deployment())
    with pytest.raises(ApplyConflict) as caught:
        applied("bob", deployment(replicas=5), live)
    err = caught.value
    assert err.code == 409 and err.reason == "Conflict"
    assert err.message == 'Apply failed with 1 conflict: conflict with "alice": .spec.replicas'
    assert err.causes == [{"reason": "FieldManagerConflict", "message": 'conflict with "alice"',
                           "field": ".spec.replicas"}]


def test_conflicts_with_several_fields_are_listed_by_manager() -> None:
    live = applied("alice", deployment())
    with pytest.raises(ApplyConflict) as caught:
        applied("bob", deployment(replicas=5, image="httpd"), live)
    assert caught.value.message == (
        'Apply failed with 2 conflicts: conflicts with "alice":\n- .spec.replicas\n'
        '- .spec.template.spec.containers[name="c"].image')
    assert {c["field"] for c in caught.value.causes} == {
        ".spec.replicas", '.spec.template.spec.containers[name="c"].image'}


def test_the_same_value_is_shared_without_conflict() -> None:
    live = applied("alice", deployment())
    obj = applied("bob", deployment(), live)
    for manager in ("alice", "bob"):
        assert "f:replicas" in entry(obj["metadata"]["managedFields"], manager)["fieldsV1"][
            "f:spec"]


def test_force_takes_the_field_from_its_owner() -> None:
    live = applied("alice", deployment())
    obj = applied("bob", {"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "web"}, "spec": {"replicas": 5}}, live,
                  force=True, now=LATER)
    assert obj["spec"]["replicas"] == 5
    managed = obj["metadata"]["managedFields"]
    assert "f:replicas" not in entry(managed, "alice")["fieldsV1"]["f:spec"]
    assert entry(managed, "bob")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert entry(managed, "bob")["time"] == LATER


def test_fields_the_applier_stops_sending_are_removed() -> None:
    live = applied("alice", deployment(paused=True))
    obj = applied("alice", deployment(), live)
    assert "paused" not in obj["spec"]
    assert obj["spec"]["replicas"] == 2


def test_a_dropped_field_another_manager_owns_stays() -> None:
    live = applied("alice", deployment(paused=True))
    live = applied("bob", {"apiVersion": "apps/v1", "kind": "Deployment",
                           "metadata": {"name": "web"}, "spec": {"paused": True}}, live)
    obj = applied("alice", deployment(), live)
    assert obj["spec"]["paused"] is True


def test_list_map_items_of_other_managers_are_kept_and_merged() -> None:
    live = applied("alice", deployment())
    side = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "log", "image": "fluent"}]}}}}
    obj = applied("bob", side, live)
    assert [c["name"] for c in obj["spec"]["template"]["spec"]["containers"]] == ["c", "log"]
    # alice re-applies without knowing of "log": it stays, bob owns it
    again = applied("alice", deployment(image="nginx:2"), obj)
    containers = again["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [("c", "nginx:2"),
                                                             ("log", "fluent")]


def test_apply_that_changes_nothing_returns_no_object() -> None:
    live = applied("alice", deployment())
    result = apply(live, deployment(), "alice", False, write("apps/v1", "Deployment", LATER))
    assert result.obj is None
    assert entry(result.managed_fields, "alice")["time"] == NOW


def test_apply_to_an_object_without_managed_fields_gives_them_to_before_first_apply() -> None:
    live = deployment()
    obj = applied("alice", {"apiVersion": "apps/v1", "kind": "Deployment",
                            "metadata": {"name": "web"}, "spec": {"paused": True}}, live)
    managers = {(e["manager"], e["operation"]) for e in obj["metadata"]["managedFields"]}
    assert managers == {("before-first-apply", "Update"), ("alice", "Apply")}


def test_create_records_an_update_entry_with_the_fields_it_set() -> None:
    managed = track_update(None, deployment(), "kubectl-create", write("apps/v1", "Deployment"))
    assert managed is not None
    [mine] = managed
    assert (mine["manager"], mine["operation"]) == ("kubectl-create", "Update")
    fields = mine["fieldsV1"]
    # a map or pointer struct the create added is itself owned ("."); spec, held by value
    # in the Go type, is not
    assert fields["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    assert "." not in fields["f:spec"]
    assert fields["f:spec"]["f:template"]["f:spec"]["f:containers"]['k:{"name":"c"}'][
        "f:image"] == {}


def test_update_moves_changed_fields_to_the_writer() -> None:
    live = applied("alice", deployment())
    changed = copy.deepcopy(live)
    changed["spec"]["replicas"] = 7
    managed = track_update(live, changed, "kubectl-edit", write("apps/v1", "Deployment", LATER))
    assert managed is not None
    assert entry(managed, "kubectl-edit")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert "f:replicas" not in entry(managed, "alice")["fieldsV1"]["f:spec"]
    # Apply entries sort before Update entries
    assert [e["operation"] for e in managed] == ["Apply", "Update"]


def test_update_of_an_untracked_object_stays_untracked() -> None:
    live = deployment()
    changed = deployment(replicas=3)
    assert track_update(live, changed, "kubectl-edit", write("apps/v1", "Deployment")) is None


def test_update_that_changes_nothing_keeps_the_timestamps() -> None:
    live = applied("alice", deployment())
    managed = track_update(live, copy.deepcopy(live), "kubectl-edit",
                           write("apps/v1", "Deployment", LATER))
    assert managed == live["metadata"]["managedFields"]


def test_status_writes_own_status_and_object_writes_do_not() -> None:
    pod_write = write("v1", "Pod")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": "Pending"}}
    [created] = track_update(None, pod, "creator", pod_write) or []
    assert "f:status" not in created["fieldsV1"]
    live = stored(pod, [created])
    running = copy.deepcopy(live)
    running["status"] = {"phase": "Running"}
    managed = track_update(live, running, "kubelet", write("v1", "Pod", LATER, "status"))
    assert managed is not None
    kubelet = entry(managed, "kubelet")
    assert kubelet["subresource"] == "status"
    assert kubelet["fieldsV1"] == {"f:status": {"f:phase": {}}}


def test_sets_are_owned_by_value() -> None:
    node = kind_node("v1", "Pod")
    assert node is not None
    obj = {"metadata": {"finalizers": ["a", "b"]}}
    result = apply(None, obj, "m", False, Write(node, "v1", "", True, NOW))
    assert result.managed_fields[0]["fieldsV1"] == {
        "f:metadata": {"f:finalizers": {'v:"a"': {}, 'v:"b"': {}}}}


def test_untyped_objects_merge_maps_and_replace_lists() -> None:
    live_write = Write(UNTYPED_NODE, "example.com/v1", "", False, NOW)
    first = apply(None, {"apiVersion": "example.com/v1", "kind": "Thing",
                         "metadata": {"name": "t"}, "spec": {"a": 1, "list": [1, 2]}},
                  "alice", False, live_write)
    live = stored(first.obj, first.managed_fields)
    second = apply(live, {"apiVersion": "example.com/v1", "kind": "Thing",
                          "metadata": {"name": "t"}, "spec": {"b": 2, "list": [3]}},
                   "bob", True, live_write)
    assert second.obj is not None
    assert second.obj["spec"] == {"a": 1, "b": 2, "list": [3]}


def test_fields_v1_round_trips() -> None:
    node: Node | None = kind_node("apps/v1", "Deployment")
    assert node is not None
    fields = applied("alice", deployment())["metadata"]["managedFields"][0]["fieldsV1"]
    assert fp.to_fields_v1(fp.from_fields_v1(fields)) == fields


def test_the_default_manager_is_the_user_agent_up_to_its_first_slash() -> None:
    assert manager_from_user_agent("kubectl/v1.35.0 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_from_user_agent("csi-provisioner/v6.3.0") == "csi-provisioner"
    assert manager_from_user_agent("a\x00b") == "ab"
    assert len(manager_from_user_agent("x" * 300)) == 128


def test_custom_resources_merge_by_their_structural_schema() -> None:
    schema = {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "properties": {
                          "name": {"type": "string"}, "port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set",
                     "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                         "additionalProperties": {"type": "string"}}}}}}
    cr_write = Write(custom_resource_node(schema), "example.com/v1", "", True, NOW)
    base = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    first = apply(None, {**base, "spec": {"ports": [{"name": "a", "port": 1}],
                                          "tags": ["x"], "selector": {"k": "v"}}},
                  "alice", False, cr_write)
    assert first.obj is not None
    assert first.managed_fields[0]["fieldsV1"]["f:spec"] == {
        "f:ports": {'k:{"name":"a"}': {".": {}, "f:name": {}, "f:port": {}}},
        "f:selector": {}, "f:tags": {'v:"x"': {}}}
    second = apply(stored(first.obj, first.managed_fields),
                   {**base, "spec": {"ports": [{"name": "b", "port": 2}], "tags": ["y"]}},
                   "bob", False, cr_write)
    assert second.obj is not None
    assert second.obj["spec"]["ports"] == [{"name": "a", "port": 1}, {"name": "b", "port": 2}]
    assert second.obj["spec"]["tags"] == ["x", "y"]


def test_kubectl_takes_over_fields_unchanged_since_its_client_side_apply() -> None:
    pod_write = write("v1", "Pod")
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "p", "labels": {"a": "1"}},
                              "spec": {"containers": [{"name": "c", "image": "x"}]}}
    live = copy.deepcopy(config)
    live["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(config)}
    live["metadata"]["managedFields"] = track_update(None, live, "kubectl-client-side-apply",
                                                     pod_write)
    changed = copy.deepcopy(config)
    changed["metadata"]["labels"]["a"] = "2"
    # another manager conflicts; kubectl itself moves on from its client-side apply
    with pytest.raises(ApplyConflict):
        apply(live, changed, "other", False, pod_write)
    result = apply(live, changed, "kubectl", False, pod_write)
    assert result.obj is not None and result.obj["metadata"]["labels"] == {"a": "2"}
    recorded = result.obj["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"]
    assert json.loads(recorded)["metadata"]["labels"] == {"a": "2"}
    # a field changed since the client-side apply still conflicts
    edited = stored(result.obj, result.managed_fields)
    edited["metadata"]["managedFields"] = track_update(
        edited, {**edited, "spec": {"containers": [{"name": "c", "image": "y"}]}},
        "kubectl-edit", pod_write)
    edited["spec"] = {"containers": [{"name": "c", "image": "y"}]}
    with pytest.raises(ApplyConflict):
        apply(edited, {**changed, "spec": {"containers": [{"name": "c", "image": "z"}]}},
              "kubectl", False, pod_write)


def test_past_ten_update_managers_the_oldest_fold_into_ancient_changes() -> None:
    live = applied("alice", deployment())
    for i in range(12):
        changed = copy.deepcopy(live)
        changed["metadata"]["labels"][f"l{i}"] = "x"
        changed["metadata"]["managedFields"] = track_update(
            live, changed, f"writer-{i:02}", write("apps/v1", "Deployment",
                                                   f"2026-12-04T22:{i:02}:00Z"))
        live = changed
    found = managers_of(live)
    updaters = [m for m, op in found.items() if op == "Update"]
    assert len(updaters) == 10 and "ancient-changes" in updaters
    assert "writer-00" not in updaters and "writer-11" in updaters
    ancient = entry(live["metadata"]["managedFields"], "ancient-changes")
    assert set(ancient["fieldsV1"]["f:metadata"]["f:labels"]) == {"f:l0", "f:l1", "f:l2"}
    assert found["alice"] == "Apply"


def managers_of(obj: dict[str, Any]) -> dict[str, str]:
    return {e["manager"]: e["operation"] for e in obj["metadata"]["managedFields"]}
