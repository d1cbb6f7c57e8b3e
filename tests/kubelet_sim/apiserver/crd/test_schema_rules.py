"""What apiextensions.k8s.io/v1 refuses in a definition's openAPIV3Schema, with the field
paths and texts kube-apiserver gives: unsupported JSON-Schema features, the structural
invariants, defaults, list and map extensions, and where the paths start (the v1 form holds
a schema shared by every version once, at ``spec.validation``)."""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.crd.definition import definition_errors, set_defaults
from kubelet_sim.apiserver.crd.schema_rules import schema_errors

ROOT = "spec.validation.openAPIV3Schema"


def definition(schema: dict[str, Any], *, versions: int = 1, group: str = "example.com",
               annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}", "annotations": annotations or {}},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": f"v{i + 1}", "served": True, "storage": i == 0,
                                   "schema": {"openAPIV3Schema": copy.deepcopy(schema)}}
                                  for i in range(versions)]}}


def errors_of(doc: dict[str, Any]) -> list[str]:
    crd = Resource.from_dict(doc)
    set_defaults(crd)
    return [str(e) for e in definition_errors(crd)]


def with_spec(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"spec": {"type": "object",
                                                      "properties": properties}}}


def spec_errors(**properties: Any) -> list[str]:
    return [str(e) for e in schema_errors(with_spec(**properties), ROOT, False)]


SPEC = f"{ROOT}.properties[spec].properties"


def test_items_given_as_an_array_is_forbidden_as_kube_apiserver_words_it() -> None:
    assert spec_errors(list={"type": "array", "items": [{"type": "string"}]}) == [
        f"{SPEC}[list].items: Forbidden: items must be a schema object and not an array"]


def test_json_schema_features_kubernetes_does_not_support_are_each_forbidden() -> None:
    assert spec_errors(a={"type": "object", "patternProperties": {"^x": {"type": "string"}}},
                       b={"type": "string", "$ref": "#/definitions/b"},
                       c={"type": "string", "id": "c"},
                       d={"type": "object", "dependencies": {"x": ["y"]}},
                       e={"type": "array", "items": {"type": "string"},
                          "additionalItems": False},
                       f={"type": "object", "definitions": {"x": {"type": "string"}}}) == [
        f"{SPEC}[a].patternProperties: Forbidden: patternProperties is not supported",
        f"{SPEC}[b].$ref: Forbidden: $ref is not supported",
        f"{SPEC}[c].id: Forbidden: id is not supported",
        f"{SPEC}[d].dependencies: Forbidden: dependencies is not supported",
        f"{SPEC}[e].additionalItems: Forbidden: additionalItems is not supported",
        f"{SPEC}[f].definitions: Forbidden: definitions is not supported"]


def test_dollar_schema_alone_is_the_structural_conversion_error() -> None:
    schema = with_spec(a={"type": "string"})
    schema["$schema"] = "http://json-schema.org/draft-04/schema#"
    assert [str(e) for e in schema_errors(schema, ROOT, False)] == [
        f"{ROOT}: Invalid value: \"\": OpenAPIV3Schema 'schema' is not supported"]


def test_type_null_unique_items_and_preserve_false_are_refused() -> None:
    assert spec_errors(a={"type": "null"}) == [
        f'{SPEC}[a].type: Unsupported value: "null": supported values: "array", "boolean", '
        '"integer", "number", "object", "string"',
        f"{SPEC}[a].type: Forbidden: type cannot be set to null, use nullable as an "
        "alternative"]
    assert spec_errors(a={"type": "array", "items": {"type": "string"},
                          "uniqueItems": True}) == [
        f"{SPEC}[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the "
        "runtime complexity becomes quadratic"]
    assert spec_errors(a={"type": "object", "x-kubernetes-preserve-unknown-fields": False}) == [
        f"{SPEC}[a].x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true "
        "or undefined"]


def test_every_level_needs_a_type_worded_by_where_it_is() -> None:
    assert spec_errors(list={"type": "array", "items": {"properties": {}}},
                       open={"x-kubernetes-preserve-unknown-fields": True},
                       port={"x-kubernetes-int-or-string": True},
                       bare={"description": "no type"}) == [
        f"{SPEC}[bare].type: Required value: must not be empty for specified object fields",
        f"{SPEC}[list].items.type: Required value: must not be empty for specified array items"]
    assert [str(e) for e in schema_errors({"properties": {}}, ROOT, False)] == [
        f"{ROOT}.type: Required value: must not be empty at the root"]
    assert [str(e) for e in schema_errors({"type": "array", "items": {"type": "string"}},
                                          ROOT, False)] == [
        f'{ROOT}.type: Invalid value: "array": must be object at the root']


def test_root_metadata_may_only_restrict_name_and_generate_name() -> None:
    allowed = {"type": "object", "properties": {"metadata": {
        "type": "object", "properties": {"name": {"type": "string", "maxLength": 20}}}}}
    assert schema_errors(allowed, ROOT, False) == []
    labels = {"type": "object", "properties": {"metadata": {
        "type": "object", "properties": {"labels": {"type": "object"}}}}}
    assert [str(e) for e in schema_errors(labels, ROOT, False)] == [
        f"{ROOT}.properties[metadata]: Forbidden: must not specify anything other than name "
        "and generateName, but metadata is implicitly specified"]
    defaulted = {"type": "object", "properties": {"metadata": {"type": "object",
                                                               "default": {}}}}
    assert [str(e) for e in schema_errors(defaulted, ROOT, False)] == [
        f"{ROOT}.properties[metadata].default: Forbidden: must not be set in top-level "
        "metadata"]


def test_additional_properties_are_refused_at_the_root_and_beside_properties() -> None:
    root = {"type": "object", "additionalProperties": {"type": "string"}}
    assert [str(e) for e in schema_errors(root, ROOT, False)] == [
        f"{ROOT}.additionalProperties: Forbidden: must not be used at the root"]
    assert spec_errors(a={"type": "object", "properties": {"x": {"type": "string"}},
                          "additionalProperties": False}) == [
        f"{SPEC}[a].additionalProperties: Forbidden: additionalProperties and properties are "
        "mutual exclusive"]


def test_nullable_is_refused_at_the_root() -> None:
    assert [str(e) for e in schema_errors({"type": "object", "nullable": True}, ROOT,
                                          False)] == [
        f"{ROOT}.nullable: Forbidden: nullable cannot be true at the root"]


def test_value_validations_may_not_declare_structure_nor_name_undeclared_fields() -> None:
    schema = with_spec(a={"type": "string"})
    schema["properties"]["spec"]["anyOf"] = [{"type": "object", "required": ["a"]}]
    schema["anyOf"] = [{"properties": {"spec": {"properties": {"b": {}}}}}]
    assert [str(e) for e in schema_errors(schema, ROOT, False)] == [
        f"{ROOT}.properties[spec].anyOf[0].type: Forbidden: must be empty to be structural",
        f"{ROOT}.properties[spec].properties[b]: Required value: because it is defined in "
        f"{ROOT}.anyOf[0].properties[spec].properties[b]"]


def test_int_or_string_keeps_its_any_of_pattern() -> None:
    assert spec_errors(port={"x-kubernetes-int-or-string": True,
                             "anyOf": [{"type": "integer"}, {"type": "string"}]}) == []


def test_a_default_must_survive_pruning_and_validate_against_its_schema() -> None:
    assert spec_errors(size={"type": "integer", "default": "big"}) == [
        f'{SPEC}[size].default: Invalid value: "string": {SPEC}[size].default in body must be '
        'of type integer: "string"']
    assert spec_errors(box={"type": "object", "properties": {"w": {"type": "integer"}},
                            "default": {"w": 1, "h": 2}}) == [
        f'{SPEC}[box].default: Invalid value: {{"h":2,"w":1}}: must not have unknown fields']


def test_list_map_keys_need_a_map_list_of_objects_whose_keys_are_required_or_defaulted() -> None:
    ports = {"type": "array", "x-kubernetes-list-type": "map",
             "x-kubernetes-list-map-keys": ["name"],
             "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    assert spec_errors(ports=ports) == [
        f"{SPEC}[ports].items.properties[name].default: Required value: this property is in "
        "x-kubernetes-list-map-keys, so it must have a default or be a required property"]
    assert spec_errors(tags={"type": "array", "x-kubernetes-list-map-keys": ["name"],
                             "items": {"type": "string"}}) == [
        f"{SPEC}[tags].x-kubernetes-list-type: Required value: must be map if "
        "x-kubernetes-list-map-keys is non-empty"]
    assert spec_errors(m={"type": "string", "x-kubernetes-list-type": "set"}) == [
        f'{SPEC}[m].type: Invalid value: "string": must be array if x-kubernetes-list-type '
        "is specified"]


def test_a_schema_every_version_shares_is_reported_at_spec_validation() -> None:
    bad = with_spec(a={"type": "array", "items": [{"type": "string"}]})
    shared = errors_of(definition(bad, versions=2))
    assert shared == [f"{SPEC}[a].items: Forbidden: items must be a schema object and not an "
                      "array"]
    doc = definition(bad, versions=2)
    doc["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["description"] = "v2"
    assert errors_of(doc) == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].items: "
        "Forbidden: items must be a schema object and not an array",
        "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[a].items: "
        "Forbidden: items must be a schema object and not an array"]


def test_a_protected_group_needs_the_api_approval_annotation() -> None:
    schema = with_spec(a={"type": "string"})
    assert errors_of(definition(schema, group="things.k8s.io")) == [
        "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups "
        'must have approval annotation "api-approved.kubernetes.io", see '
        "https://github.com/kubernetes/enhancements/pull/1111"]
    for value in ("https://github.com/kubernetes/enhancements/pull/1111", "unapproved, test"):
        approved = definition(schema, group="things.k8s.io",
                              annotations={"api-approved.kubernetes.io": value})
        assert errors_of(approved) == []


def test_names_are_dns_1035_labels_and_kind_differs_from_list_kind() -> None:
    doc = definition(with_spec())
    doc["spec"]["names"].update(plural="widgets", shortNames=["1w"], listKind="Widget")
    assert errors_of(doc) == [
        'spec.names.shortNames[0]: Invalid value: "1w": a DNS-1035 label must consist of lower '
        "case alphanumeric characters or '-', start with an alphabetic character, and end "
        "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
        "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        'spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same']


def test_printer_columns_and_scale_paths_are_checked_where_every_version_shares_them() -> None:
    doc = definition(with_spec(), versions=2)
    for version in doc["spec"]["versions"]:
        version["additionalPrinterColumns"] = [{"name": "Size", "type": "text",
                                                "jsonPath": "spec.size"}]
        version["subresources"] = {"scale": {"specReplicasPath": ".status.replicas",
                                             "statusReplicasPath": ".status.replicas"}}
    assert errors_of(doc) == [
        'spec.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should '
        "be a json path under .spec",
        'spec.additionalPrinterColumns[0].type: Invalid value: "text": must be one of '
        "boolean,date,integer,number,string",
        'spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a '
        "simple json path starting with ."]


def test_two_storage_versions_show_the_versions_as_the_internal_go_structs() -> None:
    doc = definition(with_spec(), versions=2)
    doc["spec"]["versions"][1]["storage"] = True
    doc["spec"]["versions"][1]["deprecated"] = True
    version = ('{{"Name":"{}","Served":true,"Storage":true,"Deprecated":{},'
               '"DeprecationWarning":null,"Schema":null,"Subresources":null,'
               '"AdditionalPrinterColumns":null,"SelectableFields":null}}')
    assert errors_of(doc) == [
        f'spec.versions: Invalid value: [{version.format("v1", "false")},'
        f'{version.format("v2", "true")}]: must have exactly one version marked as storage '
        "version"]


def test_a_version_schema_of_its_own_is_shown_with_every_go_field() -> None:
    doc = definition({"type": "object", "properties": {"a": {"type": "integer",
                                                             "default": 2}}}, versions=2)
    doc["spec"]["versions"][0]["name"] = "v2"
    doc["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["description"] = "<b>"
    message = errors_of(doc)[0]
    assert message.startswith(
        'spec.versions: Invalid value: [{"Name":"v2","Served":true,"Storage":true,'
        '"Deprecated":false,"DeprecationWarning":null,"Schema":{"OpenAPIV3Schema":{"ID":"",'
        '"Schema":"","Ref":null,"Description":"","Type":"object","Nullable":false,')
    assert '"Properties":{"a":{"ID":"","Schema":"","Ref":null,"Description":"",' \
        '"Type":"integer","Nullable":false,"Format":"","Title":"","Default":2,' in message
    assert '"Description":"\\u003cb\\u003e"' in message
    assert message.endswith(": must contain unique version names")


def test_a_webhook_conversion_needs_a_client_config_and_a_known_review_version() -> None:
    doc = definition(with_spec())
    doc["spec"]["conversion"] = {"strategy": "Webhook",
                                 "webhook": {"conversionReviewVersions": ["v2"]}}
    assert errors_of(doc) == [
        "spec.conversion.webhookClientConfig: Required value: required when strategy is set "
        "to Webhook",
        'spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at '
        "least one of v1, v1beta1"]
    doc["spec"]["conversion"] = {"strategy": "None", "webhook": {
        "clientConfig": {"url": "https://x"}, "conversionReviewVersions": ["v1"]}}
    assert errors_of(doc) == [
        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is "
        "not set to Webhook",
        "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy "
        "is not set to Webhook"]


def test_with_the_status_subresource_the_root_holds_only_what_status_extraction_keeps() -> None:
    schema = {"type": "object", "anyOf": [{"required": ["spec"]}],
              "properties": {"spec": {"type": "object"}}}
    errors = [str(e) for e in schema_errors(schema, ROOT, True)]
    assert len(errors) == 1
    assert errors[0].startswith(f'{ROOT}: Invalid value: {{"ID":"","Schema":"","Ref":null,')
    assert errors[0].endswith(
        ": only [Description Type Format Title Maximum ExclusiveMaximum Minimum "
        "ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf "
        "Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] "
        "fields are allowed at the root of the schema if the status subresource is enabled")
    assert schema_errors({"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                         ROOT, True) == []
