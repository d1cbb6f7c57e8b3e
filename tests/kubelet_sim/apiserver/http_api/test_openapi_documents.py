"""The OpenAPI documents, as built: kube-apiserver's names and shapes, from the type table."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.apiserver.http import openapi
from kubelet_sim.apiserver.http.field_validation import drop_unknown_fields
from kubelet_sim.apiserver.http.resources import group_versions

DOCUMENTS = [openapi.document_key(gv) for gv in group_versions()]


def v3(key: str) -> dict[str, Any]:
    built = openapi.v3_document(key)
    assert built is not None
    found: dict[str, Any] = json.loads(built.body)
    return found


def v2() -> dict[str, Any]:
    found: dict[str, Any] = json.loads(openapi.v2_document().body)
    return found


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):  # not JSONSchemaProps' "$ref" field
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


@pytest.mark.parametrize("key", DOCUMENTS)
def test_every_ref_of_a_v3_document_resolves_inside_it(key: str) -> None:
    doc = v3(key)
    schemas = doc["components"]["schemas"]
    found = set(refs(doc))
    assert found
    for ref in found:
        assert ref.startswith("#/components/schemas/")
        assert ref.removeprefix("#/components/schemas/") in schemas, ref


def test_every_ref_of_the_v2_document_resolves() -> None:
    doc = v2()
    assert doc["swagger"] == "2.0"
    for ref in set(refs(doc)):
        assert ref.startswith("#/definitions/")
        assert ref.removeprefix("#/definitions/") in doc["definitions"], ref


def test_the_index_names_each_document_by_the_hash_of_its_body() -> None:
    index = openapi.v3_index()["paths"]
    assert set(index) == set(DOCUMENTS)
    for key, entry in index.items():
        built = openapi.v3_document(key)
        assert built is not None
        digest = hashlib.sha512(built.body).hexdigest().upper()
        assert entry["serverRelativeURL"] == f"/openapi/v3/{key}?hash={digest}"


def test_definitions_are_named_by_the_go_import_path_with_its_domain_reversed() -> None:
    schemas = v3("api/v1")["components"]["schemas"]
    for name in ("io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.PodList",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                 "io.k8s.apimachinery.pkg.api.resource.Quantity",
                 "io.k8s.apimachinery.pkg.util.intstr.IntOrString"):
        assert name in schemas
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert pod["properties"]["spec"] == {
        "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}], "default": {}}


def test_lists_maps_and_scalars_have_their_real_types() -> None:
    schemas = v3("api/v1")["components"]["schemas"]
    spec = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]
    assert spec["tolerations"]["type"] == "array"
    assert spec["tolerations"]["items"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.Toleration"}]
    assert spec["tolerations"]["x-kubernetes-list-type"] == "atomic"
    assert spec["nodeSelector"] == {"type": "object", "additionalProperties": {"type": "string"},
                                    "x-kubernetes-map-type": "atomic"}
    assert spec["activeDeadlineSeconds"] == {"type": "integer", "format": "int64"}
    assert spec["hostNetwork"] == {"type": "boolean"}
    port = schemas["io.k8s.api.core.v1.ContainerPort"]
    assert port["properties"]["containerPort"] == {"type": "integer", "format": "int32"}
    assert port["required"] == ["containerPort"]
    requests = schemas["io.k8s.api.core.v1.VolumeResourceRequirements"]["properties"]["requests"]
    assert requests == {"type": "object", "additionalProperties": {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}}


def test_patch_strategies_and_list_keys_are_extensions() -> None:
    spec = v3("api/v1")["components"]["schemas"]["io.k8s.api.core.v1.PodSpec"]["properties"]
    containers = spec["containers"]
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-list-type"] == "map"
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert spec["volumes"]["x-kubernetes-patch-strategy"] == "merge,retainKeys"


def test_special_types_as_kube_apiserver_publishes_them() -> None:
    v3_schemas = v3("api/v1")["components"]["schemas"]
    v2_schemas = v2()["definitions"]
    meta, api = "io.k8s.apimachinery.pkg.apis.meta.v1", "io.k8s.apimachinery.pkg"
    assert v3_schemas[f"{api}.api.resource.Quantity"] == {
        "oneOf": [{"type": "string"}, {"type": "number"}]}
    assert v2_schemas[f"{api}.api.resource.Quantity"] == {"type": "string"}
    assert v3_schemas[f"{api}.util.intstr.IntOrString"] == {
        "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]}
    assert v2_schemas[f"{api}.util.intstr.IntOrString"] == {
        "format": "int-or-string", "type": "string"}
    assert v3_schemas[f"{meta}.Time"] == {"type": "string", "format": "date-time"}
    assert v3_schemas[f"{meta}.MicroTime"] == {"type": "string", "format": "date-time"}
    assert v3_schemas[f"{meta}.FieldsV1"] == {"type": "object"}
    assert v3_schemas[f"{api}.runtime.RawExtension"] == {"type": "object"}


def test_v2_keeps_a_ref_beside_its_siblings() -> None:
    pod = v2()["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["properties"]["spec"] == {"$ref": "#/definitions/io.k8s.api.core.v1.PodSpec",
                                         "default": {}}


def test_every_served_path_has_its_operations_with_field_validation_on_patch() -> None:
    paths = v3("api/v1")["paths"]
    pods = "/api/v1/namespaces/{namespace}/pods"
    assert set(paths[pods]) == {"get", "post", "delete", "parameters"}  # delete: deletecollection
    assert set(paths[pods + "/{name}"]) == {"get", "put", "patch", "delete", "parameters"}
    assert set(paths[pods + "/{name}/status"]) == {"get", "put", "patch", "parameters"}
    assert set(paths["/api/v1/pods"]) == {"get", "parameters"}
    assert "/api/v1/nodes/{name}" in paths  # cluster-scoped: no namespace segment
    patch = paths[pods + "/{name}"]["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedPod"
    assert patch["x-kubernetes-action"] == "patch"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod",
                                                        "version": "v1"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert set(patch["requestBody"]["content"]) == set(openapi.PATCH_TYPES)
    listed = paths[pods]["get"]["responses"]["200"]["content"]
    assert listed["application/json;stream=watch"]["schema"]["$ref"].endswith(".PodList")
    assert set(paths[pods]["post"]["responses"]) == {"200", "201", "202"}


def test_a_custom_resource_keeps_its_schema_and_takes_no_strategic_merge_patch() -> None:
    doc = v3("apis/snapshot.storage.k8s.io/v1")
    snapshot = doc["components"]["schemas"]["io.k8s.storage.snapshot.v1.VolumeSnapshot"]
    assert "source" in snapshot["properties"]["spec"]["properties"]
    patch = doc["paths"][
        "/apis/snapshot.storage.k8s.io/v1/namespaces/{namespace}/volumesnapshots/{name}"]
    assert "application/strategic-merge-patch+json" not in patch["patch"]["requestBody"][
        "content"]


POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}],
                             "resources": {"limits": {"cpu": 1, "memory": "1Gi"}}}],
             "volumes": [{"name": "v", "csi": {"driver": "d"}}],
             "tolerations": [{"key": "k", "operator": "Exists"}]},
    "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}}


def test_field_validation_knows_every_field_the_schema_publishes() -> None:
    doc = json.loads(json.dumps(POD))
    assert drop_unknown_fields(doc, "Pod", "v1") == []
    assert doc == POD


def test_field_validation_drops_unknown_fields_at_any_depth() -> None:
    doc = json.loads(json.dumps(POD))
    doc["spec"]["tolerations"][0]["colour"] = "red"
    doc["spec"]["volumes"][0]["csi"]["size"] = 1
    assert drop_unknown_fields(doc, "Pod", "v1") == [  # in the order they were sent
        'unknown field "spec.volumes[0].csi.size"', 'unknown field "spec.tolerations[0].colour"']
    assert doc == POD


@pytest.mark.parametrize(("change", "message"), [
    ({"hostNetwork": "yes"}, "cannot unmarshal string into Go struct field PodSpec.spec."
                             "hostNetwork of type bool"),
    ({"priority": 1.5}, "cannot unmarshal number 1.5 into Go struct field PodSpec.spec."
                        "priority of type int32"),
    ({"tolerations": {"key": "k"}}, "cannot unmarshal object into Go struct field PodSpec."
                                    "spec.tolerations of type []v1.Toleration"),
    ({"nodeSelector": {"a": 1}}, "cannot unmarshal number into Go struct field PodSpec.spec."
                                 "nodeSelector of type string"),
])
def test_a_value_of_the_wrong_type_is_a_bad_request_naming_the_field(
        change: dict[str, Any], message: str) -> None:
    doc = json.loads(json.dumps(POD))
    doc["spec"].update(change)
    with pytest.raises(BadRequest) as raised:
        drop_unknown_fields(doc, "Pod", "v1")
    assert str(raised.value) == (
        f'Pod in version "v1" cannot be handled as a Pod: json: {message}')
