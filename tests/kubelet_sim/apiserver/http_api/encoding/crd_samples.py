"""CustomResourceDefinitions whose schemas use every shape of apiextensions' JSON unions.

``gadgets_crd()`` is valid for kube-apiserver (a structural v1 schema): nested properties,
``items`` as a schema, ``additionalProperties`` as a schema and as ``true``, defaults and
examples of every JSON type, enums (with null), and the ``x-kubernetes-*`` extensions.
``LEGACY_SCHEMA_PARTS`` are what JSONSchemaProps can hold but a v1 definition may not
(kube-apiserver refuses them with 422): ``items`` as an array, ``dependencies``,
``additionalItems``, ``patternProperties``, ``definitions``, ``$ref``, ``id`` — the codec
carries them all the same.
"""

from __future__ import annotations

import copy
from typing import Any

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "what a gadget should be",
    "required": ["size"],
    "properties": {
        "size": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10,
                 "default": 3, "multipleOf": 1},
        "ratio": {"type": "number", "minimum": 0.5, "exclusiveMinimum": True,
                  "maximum": 2.5, "example": 1.75},
        "mode": {"type": "string", "enum": ["fast", "slow", None], "nullable": True,
                 "default": "fast", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 8},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5, "minItems": 0,
                 "x-kubernetes-list-type": "set", "default": ["a", "b"]},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "required": ["name"], "properties": {
                      "name": {"type": "string"},
                      "target": {"x-kubernetes-int-or-string": True,
                                 "anyOf": [{"type": "integer"}, {"type": "string"}]}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"},
                   "x-kubernetes-map-type": "granular", "maxProperties": 16},
        "settings": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "additionalProperties": True,
                     "default": {"retries": [1, 2.5, {"deep": None}], "name": "é\u2603",
                                 "on": True}},
        "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                     "x-kubernetes-preserve-unknown-fields": True},
        "limits": {"type": "object", "x-kubernetes-map-type": "atomic",
                   "properties": {"cpu": {"type": "string", "title": "CPU"}},
                   "x-kubernetes-validations": [
                       {"rule": "has(self.cpu)", "message": "cpu is required",
                        "reason": "FieldValueRequired", "fieldPath": ".cpu"},
                       {"rule": "!oldSelf.hasValue() || self == oldSelf.value()",
                        "messageExpression": "'limits are frozen'",
                        "optionalOldSelf": True}]},
        "choice": {"type": "object", "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
                   "not": {"required": ["c"]},
                   "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                                  "c": {"type": "string"}}},
        "docs": {"type": "string", "externalDocs": {"description": "more",
                                                    "url": "https://example.com/docs"}},
    },
}

LEGACY_SCHEMA_PARTS: dict[str, Any] = {
    "id": "urn:gadget", "$schema": "http://json-schema.org/draft-04/schema#",
    "$ref": "#/definitions/thing",
    "type": "object",
    "properties": {
        "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}],
                 "additionalItems": False},
        "rest": {"type": "array", "items": {"type": "string"},
                 "additionalItems": {"type": "integer"}, "uniqueItems": True},
        "closed": {"type": "object", "additionalProperties": False},
    },
    "dependencies": {"credit": ["billing", "address"], "debit": {"required": ["account"]}},
    "patternProperties": {"^x-": {"type": "string"}},
    "definitions": {"thing": {"type": "object", "exclusiveMaximum": True}},
}


def gadgets_crd(name_prefix: str = "gadgets", kind: str = "Gadget") -> dict[str, Any]:
    """A definition of a namespaced kind with two versions and the subresources (the group
    ``<name_prefix>.example.com``)."""
    group = f"{name_prefix}.example.com"
    singular = kind.lower()
    schema = {"type": "object", "properties": {
        "spec": copy.deepcopy(SPEC_SCHEMA),
        "status": {"type": "object", "properties": {
            "size": {"type": "integer"}, "selector": {"type": "string"}}}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{singular}s.{group}", "labels": {"sample": "gadgets"},
                     "annotations": {"note": "protobuf"}},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": f"{singular}s", "singular": singular, "kind": kind,
                      "listKind": f"{kind}List", "shortNames": [singular[:2]],
                      "categories": ["examples"]},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": schema},
                 "subresources": {"status": {}, "scale": {
                     "specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size",
                     "labelSelectorPath": ".status.selector"}},
                 "additionalPrinterColumns": [
                     {"name": "Size", "type": "integer", "jsonPath": ".spec.size",
                      "description": "how big"},
                     {"name": "Mode", "type": "string", "jsonPath": ".spec.mode",
                      "priority": 1, "format": "byte"}],
                 "selectableFields": [{"jsonPath": ".spec.mode"}]},
                {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                 "deprecationWarning": "use v1",
                 "schema": {"openAPIV3Schema": {
                     "type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
            ],
            "conversion": {"strategy": "None"},
        },
    }
