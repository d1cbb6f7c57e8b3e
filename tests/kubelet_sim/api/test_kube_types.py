"""The Kubernetes type table holds the facts of k8s.io/api the schema-driven parts read."""

from __future__ import annotations

import pytest

from kubelet_sim.api import kube_types
from kubelet_sim.api.model import KINDS

# Served kinds that are custom resources in a real cluster (external-snapshotter's CRDs),
# so k8s.io/api has no type for them.
CUSTOM = {"VolumeSnapshot", "VolumeSnapshotContent", "VolumeSnapshotClass"}


@pytest.mark.parametrize("kind", sorted(set(KINDS) - CUSTOM))
def test_every_built_in_kind_served_has_a_type_with_a_protobuf_message(kind: str) -> None:
    key = kube_types.kind_type(KINDS[kind].api_version, kind)
    assert key is not None
    info = kube_types.type_info(key)
    assert info is not None and info.kind == "struct"
    assert info.proto is not None and info.proto.endswith(f".{kind}")
    assert info.field("metadata") is not None


def test_pod_containers_merge_by_name_and_tolerations_are_atomic() -> None:
    spec = kube_types.type_info("k8s.io/api/core/v1.PodSpec")
    assert spec is not None
    containers = spec.field("containers")
    assert containers is not None
    assert containers.patch_strategies == ("merge",)
    assert containers.patch_merge_key == "name"
    assert containers.list_type == "map" and containers.list_map_keys == ("name",)
    volumes = spec.field("volumes")
    assert volumes is not None and volumes.patch_strategies == ("merge", "retainKeys")
    tolerations = spec.field("tolerations")
    assert tolerations is not None
    assert tolerations.list_type == "atomic" and tolerations.patch_strategy is None


def test_an_inlined_member_s_fields_sit_at_the_parent_level() -> None:
    volume = kube_types.type_info("k8s.io/api/core/v1.Volume")
    assert volume is not None
    names = [f.json for f in volume.json_fields()]
    assert "name" in names and "persistentVolumeClaim" in names and "csi" in names
    inline = [f for f in volume.fields if f.inline]
    assert [(f.proto_name, f.proto_number) for f in inline] == [("volumeSource", 2)]


def test_pointer_fields_and_protobuf_numbers_are_recorded() -> None:
    spec = kube_types.type_info("k8s.io/api/core/v1.PodSpec")
    assert spec is not None
    grace = spec.field("terminationGracePeriodSeconds")
    assert grace is not None and grace.pointer and grace.proto_number == 4
    node_name = spec.field("nodeName")
    assert node_name is not None and not node_name.pointer and node_name.omitempty


def test_special_types_are_marked_and_aliases_resolve() -> None:
    requests = kube_types.type_info("k8s.io/api/core/v1.VolumeResourceRequirements")
    assert requests is not None
    field = requests.field("requests")
    assert field is not None
    resolved = kube_types.resolve(field.type)  # ResourceList: map[ResourceName]Quantity
    assert kube_types.special_of(resolved["map"]["value"]) == "Quantity"
    assert kube_types.resolve(resolved["map"]["key"]) == "string"
    meta = kube_types.type_info("k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta")
    assert meta is not None
    created = meta.field("creationTimestamp")
    assert created is not None and kube_types.special_of(created.type) == "Time"
    extra = kube_types.type_info("k8s.io/api/authentication/v1.ExtraValue")
    assert extra is not None and extra.nullable and extra.underlying == {"slice": "string"}
