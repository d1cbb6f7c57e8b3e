"""A definition's structural schema applied to a custom resource: pruning, defaulting and
validation with kube-apiserver's field paths and messages."""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.crd.columns import cell, evaluate, human_duration
from kubelet_sim.apiserver.crd.schema import apply_defaults, prune, validate
from kubelet_sim.apiserver.crd.schema_rules import schema_errors

SPEC: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "string", "pattern": "^[0-9]+(Mi|Gi)$"},
                "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
                "name": {"type": "string", "minLength": 2, "maxLength": 5},
                "tags": {"type": "array", "maxItems": 2, "minItems": 1,
                         "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                "ports": {"type": "array", "x-kubernetes-list-type": "map",
                          "x-kubernetes-list-map-keys": ["name"],
                          "items": {"type": "object", "required": ["name"], "properties": {
                              "name": {"type": "string"}, "port": {"type": "integer"}}}},
                "target": {"x-kubernetes-int-or-string": True},
                "note": {"type": "string", "nullable": True},
                "when": {"type": "string", "format": "date-time"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                          "properties": {"known": {"type": "object",
                                                   "properties": {"a": {"type": "string"}}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object",
                                                     "properties": {"x": {"type": "integer"}}}}},
                "ratio": {"type": "number"},
                "on": {"type": "boolean"},
            },
        },
    },
}


def doc(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": "1Gi", **spec}}


def messages(obj: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate(obj, SPEC)]


# -- pruning -------------------------------------------------------------------------------

def test_pruning_drops_undeclared_fields_and_names_their_paths() -> None:
    obj = doc(foo=1, ports=[{"name": "a", "bogus": True}])
    obj["top"] = "x"
    assert prune(obj, SPEC) == ["spec.foo", "spec.ports[0].bogus", "top"]
    assert obj["spec"] == {"size": "1Gi", "ports": [{"name": "a"}]}
    assert obj["metadata"] == {"name": "w"}  # apiVersion, kind, metadata are always kept


def test_pruning_keeps_what_preserve_unknown_fields_allows_but_prunes_declared_children() -> None:
    obj = doc(extra={"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}})
    assert prune(obj, SPEC) == ["spec.extra.known.b"]
    assert obj["spec"]["extra"] == {"anything": {"deep": 1}, "known": {"a": "x"}}


def test_an_embedded_resource_keeps_its_type_and_metadata() -> None:
    obj = doc(template={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"x": 1, "y": 2}})
    assert prune(obj, SPEC) == ["spec.template.spec.y"]
    assert obj["spec"]["template"]["metadata"] == {"name": "p"}


def test_additional_properties_values_are_pruned_by_their_schema() -> None:
    obj = doc(labels={"a": "b"})
    assert prune(obj, SPEC) == []
    assert obj["spec"]["labels"] == {"a": "b"}


# -- defaulting ----------------------------------------------------------------------------

def test_defaults_fill_missing_fields_and_keep_sent_ones() -> None:
    obj = doc(color="red")
    apply_defaults(obj, SPEC)
    assert obj["spec"] == {"size": "1Gi", "color": "red", "replicas": 1}


def test_a_null_that_is_not_nullable_takes_the_default() -> None:
    obj = doc(replicas=None)
    apply_defaults(obj, SPEC)
    assert obj["spec"]["replicas"] == 1


# -- validation ----------------------------------------------------------------------------

def test_a_valid_object_has_no_errors() -> None:
    assert messages(doc(replicas=3, color="red", name="abc", tags=["a"], target="80%",
                        note=None, when="2026-01-02T03:04:05Z", ratio=0.5, on=True,
                        ports=[{"name": "a", "port": 1}, {"name": "b", "port": 1}])) == []


def test_a_wrong_type_is_named_as_kube_apiserver_names_it() -> None:
    assert messages(doc(replicas="three")) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type '
        'integer: "string"']
    (error,) = validate(doc(replicas="three"), SPEC)
    assert (error.reason, error.field) == ("FieldValueInvalid", "spec.replicas")


def test_a_missing_required_field_is_required_value() -> None:
    obj = doc()
    del obj["spec"]["size"]
    (error,) = validate(obj, SPEC)
    assert (error.reason, str(error)) == ("FieldValueRequired", "spec.size: Required value")


def test_enum_pattern_and_bounds() -> None:
    assert messages(doc(size="big", color="pink", replicas=11)) == [
        "spec.size: Invalid value: \"big\": spec.size in body should match '^[0-9]+(Mi|Gi)$'",
        'spec.color: Unsupported value: "pink": supported values: "red", "blue"',
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or "
        "equal to 10"]
    assert messages(doc(replicas=-1)) == [
        "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or "
        "equal to 0"]


def test_string_lengths_and_item_counts() -> None:
    assert messages(doc(name="a")) == [
        'spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long']
    assert messages(doc(name="abcdef")) == ["spec.name: Too long: may not be more than 5 bytes"]
    assert messages(doc(tags=[])) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"]
    assert messages(doc(tags=["a", "b", "c"])) == [
        "spec.tags: Too many: 3: must have at most 2 items"]


def test_list_type_set_and_map_refuse_duplicates() -> None:
    assert messages(doc(tags=["a", "a"])) == ['spec.tags[1]: Duplicate value: "a"']
    assert messages(doc(ports=[{"name": "a", "port": 1}, {"name": "a", "port": 2}])) == [
        'spec.ports[1]: Duplicate value: {"name":"a"}']


def test_nullable_int_or_string_and_date_time() -> None:
    assert messages(doc(note=None, target=8080)) == []
    assert messages(doc(color=None)) == [
        'spec.color: Invalid value: "null": spec.color in body must be of type string: "null"']
    assert messages(doc(target=True)) == [
        'spec.target: Invalid value: "boolean": spec.target in body must be of type '
        'integer,string: "boolean"']
    assert messages(doc(when="yesterday")) == [
        'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: '
        '"yesterday"']


def test_an_embedded_resource_needs_apiversion_and_kind() -> None:
    assert messages(doc(template={"spec": {}})) == [
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty"]


def test_a_number_accepts_an_integer_but_an_integer_refuses_a_fraction() -> None:
    assert messages(doc(ratio=2)) == []
    assert messages(doc(replicas=1.5)) == [
        'spec.replicas: Invalid value: "number": spec.replicas in body must be of type '
        'integer: "number"']


# -- structure -----------------------------------------------------------------------------

def test_a_schema_without_types_or_an_object_root_is_not_structural() -> None:
    errors = schema_errors({"type": "object", "properties": {"spec": {
        "properties": {"a": {"type": "string"}}}}}, "spec.versions[0].schema.openAPIV3Schema",
        False)
    assert [str(e) for e in errors] == [
        "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must "
        "not be empty for specified object fields"]
    assert [e.field for e in schema_errors({"type": "string"}, "s", False)] == ["s.type"]
    assert schema_errors(SPEC, "s", False) == []


# -- printer columns -----------------------------------------------------------------------

def test_printer_column_paths_and_cells() -> None:
    obj = {"metadata": {"labels": {"app.kubernetes.io/name": "w"}},
           "status": {"conditions": [{"type": "Ready"}], "n": 3, "ok": True}}
    assert evaluate(obj, ".status.conditions[0].type") == "Ready"
    assert evaluate(obj, ".metadata.labels['app.kubernetes.io/name']") == "w"
    assert evaluate(obj, ".status.missing.deeper") is None
    assert (cell(3, "integer"), cell(True, "boolean"), cell("x", "string")) == (3, True, "x")
    assert cell(None, "string") is None
    assert cell("not a time", "date") == "<invalid>"
    assert cell("2000-01-01T00:00:00Z", "date").endswith("y")


def test_a_date_cell_is_apimachinerys_human_duration() -> None:
    hour, day = 3600, 86400
    assert [human_duration(s) for s in (-5, -1, 90, 190, 600, 5 * hour + 20 * 60, 30 * hour,
                                        2 * day + 4 * hour, 20 * day, 3 * 365 * day + 20 * day,
                                        9 * 365 * day)] == [
        "<invalid>", "0s", "90s", "3m10s", "10m", "5h20m", "30h", "2d4h", "20d", "3y20d", "9y"]
