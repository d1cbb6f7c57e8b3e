"""Strategic merge patch driven by the patch strategies and merge keys of the schema
(the type table), with kubectl's directives, and its errors as 4xx."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import ApiError, BadRequest
from kubelet_sim.apiserver.patch.schema import kind_node
from kubelet_sim.apiserver.patch.strategic import apply_strategic_merge_patch

POD_NODE = kind_node("v1", "Pod")
POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}, "finalizers": ["a", "b"]},
    "spec": {
        "containers": [
            {"name": "c", "image": "busybox",
             "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
             "volumeMounts": [{"name": "data", "mountPath": "/data"}]},
            {"name": "sidecar", "image": "envoy"},
        ],
        "tolerations": [{"key": "k1", "operator": "Exists"}],
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "pvc"}}],
        "nodeSelector": {"disk": "ssd"},
    },
}


def smp(patch: Any, doc: dict[str, Any] = POD) -> dict[str, Any]:
    assert POD_NODE is not None
    return apply_strategic_merge_patch(doc, patch, POD_NODE)


def test_containers_merge_by_name_and_keep_what_the_patch_does_not_name() -> None:
    out = smp({"spec": {"containers": [{"name": "c", "image": "busybox:2"},
                                       {"name": "new", "image": "nginx"}]}})
    names = [(c["name"], c["image"]) for c in out["spec"]["containers"]]
    assert names == [("c", "busybox:2"), ("sidecar", "envoy"), ("new", "nginx")]
    assert out["spec"]["containers"][0]["env"] == POD["spec"]["containers"][0]["env"]
    assert POD["spec"]["containers"][0]["image"] == "busybox"


def test_env_merges_by_name_and_volume_mounts_by_mount_path() -> None:
    out = smp({"spec": {"containers": [{
        "name": "c", "env": [{"name": "B", "value": "3"}],
        "volumeMounts": [{"name": "data", "mountPath": "/other"}]}]}})
    container = out["spec"]["containers"][0]
    assert container["env"] == [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/data", "/other"]


def test_tolerations_have_no_merge_strategy_and_are_replaced() -> None:
    out = smp({"spec": {"tolerations": [{"key": "k2", "operator": "Exists"}]}})
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Exists"}]


def test_finalizers_merge_as_a_set_with_the_patch_order_first() -> None:
    out = smp({"metadata": {"finalizers": ["c", "a"]}})
    assert out["metadata"]["finalizers"] == ["c", "a", "b"]


def test_null_deletes_a_key_and_maps_merge() -> None:
    out = smp({"metadata": {"labels": {"app": None, "tier": "front"}},
               "spec": {"nodeSelector": {"zone": "a"}}})
    assert out["metadata"]["labels"] == {"tier": "front"}
    assert out["spec"]["nodeSelector"] == {"disk": "ssd", "zone": "a"}


def test_patch_replace_directive_on_a_map_replaces_it() -> None:
    out = smp({"spec": {"nodeSelector": {"$patch": "replace", "zone": "a"}}})
    assert out["spec"]["nodeSelector"] == {"zone": "a"}


def test_patch_delete_directive_on_a_map_empties_it() -> None:
    assert smp({"spec": {"nodeSelector": {"$patch": "delete"}}})["spec"]["nodeSelector"] == {}


def test_patch_delete_directive_on_a_list_item_removes_it_by_merge_key() -> None:
    out = smp({"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["c"]


def test_patch_replace_directive_in_a_list_replaces_the_list() -> None:
    out = smp({"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}})
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_set_element_order_reorders_a_merged_list() -> None:
    out = smp({"spec": {"$setElementOrder/containers": [{"name": "sidecar"}, {"name": "c"}],
                        "containers": [{"name": "c", "image": "busybox:3"}]}})
    assert [(c["name"], c["image"]) for c in out["spec"]["containers"]] == \
        [("sidecar", "envoy"), ("c", "busybox:3")]


def test_delete_from_primitive_list_removes_values() -> None:
    out = smp({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})
    assert out["metadata"]["finalizers"] == ["b"]


def test_retain_keys_on_a_volume_drops_the_source_it_does_not_list() -> None:
    # volumes have the strategy "merge,retainKeys": kubectl switches a volume's source so
    out = smp({"spec": {"volumes": [{"name": "data", "$retainKeys": ["emptyDir", "name"],
                                     "emptyDir": {}}]}})
    assert out["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


def test_retain_keys_must_name_every_key_the_patch_sets() -> None:
    with pytest.raises(BadRequest) as caught:
        smp({"spec": {"volumes": [{"name": "data", "$retainKeys": ["name"], "emptyDir": {}}]}})
    assert caught.value.message == "invalid patch format of retainKeys"


def test_a_new_field_is_added_without_its_nulls_and_directives() -> None:
    out = smp({"spec": {"hostAliases": [{"ip": "1.2.3.4", "hostnames": ["a"]}],
                        "securityContext": {"runAsUser": 1, "fsGroup": None}}})
    assert out["spec"]["hostAliases"] == [{"ip": "1.2.3.4", "hostnames": ["a"]}]
    assert out["spec"]["securityContext"] == {"runAsUser": 1}


@pytest.mark.parametrize("patch", [
    {"spec": {"nodeSelector": {"$patch": "bogus"}}},
    {"spec": {"containers": [{"name": "c", "$patch": "bogus"}]}},
    {"spec": {"containers": [{"image": "no-name"}]}},
    {"spec": {"containers": [{"$patch": "delete"}]}},
    {"spec": {"containers": [{"$patch": "merge"}]}},
    {"metadata": {"$deleteFromPrimitiveList": ["a"]}},
    {"spec": {"$setElementOrder/containers": "c"}},
    {"spec": {"volumes": [{"name": "data", "$retainKeys": "name"}]}},
    {"spec": {"containers": [{"name": "c"}, "x"]}},
    {"spec": {"containers": [["c"]]}},
    [{"spec": {}}],
    "text",
])
def test_a_malformed_patch_is_a_4xx(patch: Any) -> None:
    with pytest.raises(ApiError) as caught:
        smp(patch)
    assert 400 <= caught.value.code < 500, caught.value
