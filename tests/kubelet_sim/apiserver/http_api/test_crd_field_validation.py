"""fieldValidation of a CustomResourceDefinition body, walked along apiextensions/v1's
types: the schema's own fields are checked as any struct's, the schemas inside the
JSONSchemaPropsOr* unions as their non-strict Go decoders read them."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import BadRequest
from kubelet_sim.apiserver.http.field_validation import drop_unknown_fields

from .encoding.crd_samples import gadgets_crd

API_VERSION = "apiextensions.k8s.io/v1"
KIND = "CustomResourceDefinition"


def _schema(crd: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return found


def test_a_definition_with_every_union_shape_has_no_unknown_field() -> None:
    crd = gadgets_crd()
    assert drop_unknown_fields(crd, KIND, API_VERSION) == []
    assert crd == gadgets_crd()


def test_an_unknown_field_of_the_schema_itself_is_reported_and_dropped() -> None:
    crd = gadgets_crd()
    _schema(crd)["colour"] = "red"
    problems = drop_unknown_fields(crd, KIND, API_VERSION)
    assert problems == ['unknown field "spec.versions[0].schema.openAPIV3Schema.colour"']
    assert "colour" not in _schema(crd)


def test_unknown_fields_inside_items_and_additional_properties_go_without_a_word() -> None:
    crd = gadgets_crd()
    spec = _schema(crd)["properties"]["spec"]["properties"]
    spec["tags"]["items"]["colour"] = "red"
    spec["labels"]["additionalProperties"]["shade"] = 1
    assert drop_unknown_fields(crd, KIND, API_VERSION) == []
    assert spec["tags"]["items"] == {"type": "string"}
    assert spec["labels"]["additionalProperties"] == {"type": "string"}


def test_a_wrong_type_inside_an_items_schema_cannot_be_decoded() -> None:
    crd = gadgets_crd()
    _schema(crd)["properties"]["spec"]["properties"]["tags"]["items"]["type"] = 5
    with pytest.raises(BadRequest) as refused:
        drop_unknown_fields(crd, KIND, API_VERSION)
    # the path as Go's decoders track it: struct fields only, through the inner decoder
    assert str(refused.value) == (
        'CustomResourceDefinition in version "v1" cannot be handled as a '
        "CustomResourceDefinition: json: cannot unmarshal number into Go struct field "
        "JSONSchemaProps.spec.versions.schema.openAPIV3Schema.properties.properties.items.type"
        " of type string")


def test_dependencies_names_must_be_strings() -> None:
    crd = gadgets_crd()
    _schema(crd)["dependencies"] = {"a": ["b", 1]}
    with pytest.raises(BadRequest) as refused:
        drop_unknown_fields(crd, KIND, API_VERSION)
    assert str(refused.value).endswith(
        "json: cannot unmarshal number into Go struct field JSONSchemaProps.spec.versions."
        "schema.openAPIV3Schema.dependencies of type string")
