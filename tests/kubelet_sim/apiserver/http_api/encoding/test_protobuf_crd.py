"""CustomResourceDefinitions ↔ protobuf: the schema's JSON unions take the shapes of
apiextensions-apiserver's generated.proto (read here with the compiled classes, not with
the server's converter), and a definition comes back to the same JSON either way."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from k8s_protos import apiextensions_v1_pb2 as ext
from k8s_protos import runtime_pb2
from kubelet_sim.apiserver.http.encoding import envelope

from .crd_samples import LEGACY_SCHEMA_PARTS, gadgets_crd

API_VERSION = "apiextensions.k8s.io/v1"


def _message(data: bytes | None) -> ext.CustomResourceDefinition:
    assert data is not None and data[:4] == envelope.MAGIC
    unknown = runtime_pb2.Unknown.FromString(data[4:])
    assert (unknown.typeMeta.apiVersion, unknown.typeMeta.kind) == (
        API_VERSION, "CustomResourceDefinition")
    return ext.CustomResourceDefinition.FromString(unknown.raw)


def _enveloped(kind: str, message: Any) -> bytes:
    unknown = runtime_pb2.Unknown(raw=message.SerializeToString())
    unknown.typeMeta.apiVersion, unknown.typeMeta.kind = API_VERSION, kind
    return envelope.MAGIC + unknown.SerializeToString()


def _legacy_crd() -> dict[str, Any]:
    crd = gadgets_crd()
    crd["spec"]["versions"][1]["schema"]["openAPIV3Schema"] = copy.deepcopy(
        LEGACY_SCHEMA_PARTS)
    return crd


@pytest.mark.parametrize("crd", [gadgets_crd(), _legacy_crd()], ids=["v1-valid", "legacy"])
def test_a_definition_comes_back_from_protobuf_as_the_same_json(crd: dict[str, Any]) -> None:
    assert envelope.decode(envelope.encode(crd) or b"") == crd


def test_a_definition_list_comes_back_with_its_items() -> None:
    first, second = gadgets_crd(), gadgets_crd("widgets", "Widget")
    listed = {"apiVersion": API_VERSION, "kind": "CustomResourceDefinitionList",
              "metadata": {"resourceVersion": "42"}, "items": [first, second]}
    back = envelope.decode(envelope.encode(listed) or b"")
    # as in every protobuf list, the items carry no apiVersion/kind of their own
    strip = [{k: v for k, v in o.items() if k not in ("apiVersion", "kind")}
             for o in (first, second)]
    assert back == {**listed, "items": strip}


def test_json_values_are_json_text_in_raw() -> None:
    message = _message(envelope.encode(gadgets_crd()))
    spec = message.spec.versions[0].schema.openAPIV3Schema.properties["spec"]
    assert json.loads(spec.properties["size"].default.raw) == 3
    assert json.loads(spec.properties["ratio"].example.raw) == 1.75
    settings = json.loads(spec.properties["settings"].default.raw)
    assert settings == {"retries": [1, 2.5, {"deep": None}], "name": "é\u2603", "on": True}
    assert "é".encode() in spec.properties["settings"].default.raw  # UTF-8, as Go writes it
    # a null member holds no bytes (Go's JSON type keeps none for null)
    assert [e.raw for e in spec.properties["mode"].enum] == [b'"fast"', b'"slow"', b""]


def test_the_unions_are_set_on_the_side_the_json_value_is() -> None:
    message = _message(envelope.encode(_legacy_crd()))
    spec = message.spec.versions[0].schema.openAPIV3Schema.properties["spec"]
    tags = spec.properties["tags"].items
    assert tags.HasField("schema") and tags.schema.type == "string"
    assert len(tags.jSONSchemas) == 0
    labels = spec.properties["labels"].additionalProperties
    assert labels.allows and labels.schema.type == "string"  # a schema allows, as in Go
    settings = spec.properties["settings"].additionalProperties
    assert settings.allows and not settings.HasField("schema")
    assert spec.properties["settings"].xKubernetesPreserveUnknownFields

    legacy = message.spec.versions[1].schema.openAPIV3Schema
    pair = legacy.properties["pair"]
    assert [s.type for s in pair.items.jSONSchemas] == ["string", "integer"]
    assert not pair.items.HasField("schema")
    assert pair.additionalItems.HasField("allows") and not pair.additionalItems.allows
    assert legacy.properties["rest"].additionalItems.schema.type == "integer"
    closed = legacy.properties["closed"].additionalProperties
    assert closed.HasField("allows") and not closed.allows
    assert list(legacy.dependencies["credit"].property) == ["billing", "address"]
    assert not legacy.dependencies["credit"].HasField("schema")
    assert list(legacy.dependencies["debit"].schema.required) == ["account"]
    assert (legacy.id, legacy.schema, legacy.ref) == (
        "urn:gadget", "http://json-schema.org/draft-04/schema#", "#/definitions/thing")
    assert legacy.patternProperties["^x-"].type == "string"
    assert legacy.definitions["thing"].exclusiveMaximum


def test_numbers_and_extensions_are_on_their_fields() -> None:
    message = _message(envelope.encode(gadgets_crd()))
    version = message.spec.versions[0]
    spec = version.schema.openAPIV3Schema.properties["spec"]
    size = spec.properties["size"]
    assert (size.minimum, size.maximum, size.multipleOf) == (1.0, 10.0, 1.0)
    ports = spec.properties["ports"]
    assert (ports.xKubernetesListType, list(ports.xKubernetesListMapKeys)) == ("map", ["name"])
    assert ports.items.schema.properties["target"].xKubernetesIntOrString
    assert spec.properties["template"].xKubernetesEmbeddedResource
    rules = spec.properties["limits"].xKubernetesValidations
    assert (rules[0].reason, rules[0].fieldPath) == ("FieldValueRequired", ".cpu")
    assert rules[1].HasField("optionalOldSelf") and rules[1].optionalOldSelf
    assert version.subresources.HasField("status")
    assert version.subresources.scale.labelSelectorPath == ".status.selector"
    assert [c.priority for c in version.additionalPrinterColumns] == [0, 1]


def test_what_a_go_client_writes_reads_as_go_writes_its_json() -> None:
    """gogo writes every non-pointer scalar, zero or not; Go's JSON then leaves out the
    ``omitempty`` ones and keeps pointers (``x-kubernetes-preserve-unknown-fields``)."""
    crd = ext.CustomResourceDefinition()
    crd.metadata.name = "things.example.com"
    crd.spec.group, crd.spec.scope = "example.com", "Cluster"
    crd.spec.names.plural, crd.spec.names.kind = "things", "Thing"
    crd.spec.preserveUnknownFields = False
    version = crd.spec.versions.add(name="v1", served=True, storage=False, deprecated=False)
    root = version.schema.openAPIV3Schema
    root.type, root.description, root.nullable = "object", "", False
    root.exclusiveMaximum = root.uniqueItems = root.xKubernetesIntOrString = False
    root.xKubernetesPreserveUnknownFields = False
    count = root.properties["count"]
    count.type, count.maximum = "number", 20.0
    count.default.SetInParent()  # a JSON with no bytes: Go writes null
    extra = root.properties["extra"]
    extra.type = "object"
    extra.additionalProperties.allows = False
    items = root.properties["items"]
    items.type = "array"
    items.items.SetInParent()  # neither side: Go writes null
    doc = envelope.decode(_enveloped("CustomResourceDefinition", crd))
    assert doc["spec"] == {
        "group": "example.com", "scope": "Cluster",
        "names": {"plural": "things", "kind": "Thing"},
        "versions": [{"name": "v1", "served": True, "storage": False, "schema": {
            "openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": False,
                "properties": {
                    "count": {"type": "number", "maximum": 20, "default": None},
                    "extra": {"type": "object", "additionalProperties": False},
                    "items": {"type": "array", "items": None}}}}}]}
    assert isinstance(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
                      ["count"]["maximum"], int)  # 20, as Go prints a float64


def test_additional_properties_that_is_neither_a_boolean_nor_a_schema_is_refused() -> None:
    crd = gadgets_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["additionalProperties"] = "yes"
    with pytest.raises(ValueError, match="boolean or JSON schema expected"):
        envelope.encode(crd)


def test_custom_resources_have_no_protobuf_form() -> None:
    gadget = {"apiVersion": "gadgets.example.com/v1", "kind": "Gadget",
              "metadata": {"name": "g", "namespace": "default"}, "spec": {"size": 3}}
    assert envelope.encode(gadget) is None
    assert envelope.message_of("gadgets.example.com/v1", "Gadget") is None
