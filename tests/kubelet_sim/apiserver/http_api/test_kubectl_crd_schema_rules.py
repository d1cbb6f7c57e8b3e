"""``kubectl apply`` of definitions apiextensions.k8s.io/v1 refuses: kubectl prints
kube-apiserver's aggregate message, ``CustomResourceDefinition.apiextensions.k8s.io "<name>"
is invalid: [...]``, with the same field paths and texts, and nothing is stored."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from kubelet_sim.api import builders
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.server import APIServer

from .conftest import Served, needs_kubectl
from .test_kubectl_crd import call

pytestmark = needs_kubectl

ROOT = "spec.validation.openAPIV3Schema.properties[spec].properties"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    api = APIServer(history_limit=50)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True))
    handle = start_api_server(api, tmp_path_factory.mktemp("crd-rules") / "state")
    try:
        yield Served(api, handle)
    finally:
        handle.stop()


def manifest(name: str, spec_properties: dict[str, object]) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}.rules.example.com"},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": name, "kind": name.capitalize()[:-1]},
                 "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                     "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                         "type": "object", "properties": spec_properties}}}}}]}})


def refused(served: Served, name: str, spec_properties: dict[str, object]) -> str:
    done = served.kubectl("apply", "-f", "-", stdin=manifest(name, spec_properties),
                          check=False)
    assert done.returncode == 1, done.stdout
    missing = served.kubectl("get", "crd", f"{name}.rules.example.com", check=False)
    assert "NotFound" in missing.stderr
    return done.stderr.strip()


def test_kubectl_apply_of_items_as_an_array_prints_kube_apiservers_error(
        served: Served) -> None:
    assert refused(served, "lists", {"list": {"type": "array",
                                              "items": [{"type": "string"}]}}) == (
        'The CustomResourceDefinition "lists.rules.example.com" is invalid: '
        f"{ROOT}[list].items: Forbidden: items must be a schema object and not an array")


def test_kubectl_apply_lists_every_problem_of_the_schema(served: Served) -> None:
    message = refused(served, "things", {
        "ref": {"type": "string", "$ref": "#/definitions/x"},
        "bare": {"description": "no type"},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    })
    # the $ref makes the schema unreadable as structural: the missing type is not reported
    assert message == (
        'The CustomResourceDefinition "things.rules.example.com" is invalid: \n'
        f"* {ROOT}[ref].$ref: Forbidden: $ref is not supported\n"
        f"* {ROOT}[tags].uniqueItems: Forbidden: uniqueItems cannot be set to true since the "
        "runtime complexity becomes quadratic")


def test_the_status_message_is_kube_apiservers_aggregate(served: Served) -> None:
    body = yaml.safe_load(manifest("boxes", {
        "size": {"type": "integer", "default": "big"},
        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                  "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}))
    default = (f'{ROOT}[size].default: Invalid value: "string": {ROOT}[size].default in body '
               'must be of type integer: "string"')
    key = (f"{ROOT}[ports].items.properties[name].default: Required value: this property is "
           "in x-kubernetes-list-map-keys, so it must have a default or be a required property")
    code, status, _ = call(served, "POST",
                           "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == ('CustomResourceDefinition.apiextensions.k8s.io '
                                 f'"boxes.rules.example.com" is invalid: [{default}, {key}]')
    assert status["details"]["causes"][1] == {
        "reason": "FieldValueRequired", "field": key.split(": ")[0],
        "message": key.split(": ", 1)[1]}
    done = served.kubectl("create", "-f", "-", stdin=yaml.safe_dump(body), check=False)
    assert done.stderr.strip() == (
        'The CustomResourceDefinition "boxes.rules.example.com" is invalid: \n'
        f"* {default}\n* {key}")
