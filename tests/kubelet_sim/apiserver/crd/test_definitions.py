"""CustomResourceDefinitions in the API server core: the definition's own validation and
status, its kind stored and validated, the status subresource, deletion, persistence."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubelet_sim.api.errors import Invalid, InvalidObject, NotFound
from kubelet_sim.api.model import condition, forget_custom_kind
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from tests.fixtures.up_process import PROJECT_ROOT

CRD: dict[str, Any] = yaml.safe_load(
    (PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml").read_text())


WIDGET_KIND = "Widget.stable.example.com"  # the store's key for the custom kind


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "stable.example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"size": "1Gi", **spec}}


@pytest.fixture
def api() -> APIServer:
    server = APIServer()
    server.create(copy.deepcopy(CRD))
    return server


def test_a_definition_is_established_with_its_accepted_names_and_stored_version(
        api: APIServer) -> None:
    crd = api.get("CustomResourceDefinition", "widgets.stable.example.com")
    for kind in ("NamesAccepted", "Established"):
        assert (condition(crd, kind) or {}).get("status") == "True"
    assert crd.status["acceptedNames"]["shortNames"] == ["wd"]
    assert crd.status["acceptedNames"]["listKind"] == "WidgetList"
    assert crd.status["storedVersions"] == ["v1"]
    assert crd.spec["conversion"] == {"strategy": "None"}


def test_a_definition_must_be_named_plural_dot_group_with_one_storage_version() -> None:
    bad = copy.deepcopy(CRD)
    bad["metadata"]["name"] = "gadgets.stable.example.com"
    bad["spec"]["scope"] = "Everywhere"
    bad["spec"]["versions"][1]["storage"] = True
    del bad["spec"]["versions"][1]["schema"]
    with pytest.raises(InvalidObject) as caught:
        APIServer().create(bad)
    fields = [e.field for e in caught.value.errors]
    # apiextensions' order: the schema a version lacks comes before the versions' checks
    assert fields == ["metadata.name", "spec.scope", "spec.versions[1].schema.openAPIV3Schema",
                      "spec.versions"]
    assert caught.value.message.startswith(
        'CustomResourceDefinition.apiextensions.k8s.io "gadgets.stable.example.com" is '
        'invalid: [metadata.name: Invalid value: "gadgets.stable.example.com": must be '
        'spec.names.plural+"."+spec.group')


def test_a_definition_of_a_built_in_kind_in_another_group_is_served_beside_it() -> None:
    clash = copy.deepcopy(CRD)
    clash["metadata"]["name"] = "pods.stable.example.com"
    clash["spec"]["names"] = {"plural": "pods", "kind": "Pod"}
    api = APIServer()
    crd = api.create(clash)
    assert (condition(crd, "NamesAccepted") or {}).get("status") == "True"
    assert [k.qualified_kind for k in api.custom.kinds()] == ["Pod.stable.example.com"]
    custom = api.create({**widget("p"), "kind": "Pod"})
    assert custom.to_dict()["kind"] == "Pod"
    assert custom.to_dict()["apiVersion"] == "stable.example.com/v1"
    assert api.list("Pod").items == []  # the built-in pods are apart
    forget_custom_kind("Pod.stable.example.com")


def test_a_built_in_kind_redefined_in_its_group_with_another_storage_version_is_not_served(
        ) -> None:
    clash = copy.deepcopy(CRD)
    clash["metadata"]["name"] = "volumesnapshots.snapshot.storage.k8s.io"
    clash["metadata"]["annotations"] = {"api-approved.kubernetes.io": "unapproved, test"}
    clash["spec"]["group"] = "snapshot.storage.k8s.io"
    clash["spec"]["names"] = {"plural": "volumesnapshots", "kind": "VolumeSnapshot"}
    clash["spec"]["versions"][0]["storage"] = False
    clash["spec"]["versions"][1]["storage"] = True  # v1beta1, where the simulator has v1
    api = APIServer()
    crd = api.create(clash)
    accepted = condition(crd, "NamesAccepted") or {}
    assert (accepted.get("status"), accepted.get("reason")) == ("False", "KindConflict")
    assert api.custom.kinds() == []


def test_a_custom_resource_is_pruned_defaulted_and_stored_in_its_storage_version(
        api: APIServer) -> None:
    created = api.create(widget("w", bogus=1))
    assert created.to_dict()["spec"] == {"size": "1Gi", "color": "blue", "replicas": 1}
    assert created.api_version == "stable.example.com/v1"


def test_a_custom_resource_failing_its_schema_is_invalid_with_every_cause(
        api: APIServer) -> None:
    with pytest.raises(InvalidObject) as caught:
        api.create(widget("w", replicas="x", color="pink"))
    assert caught.value.message == (
        'Widget.stable.example.com "w" is invalid: [spec.replicas: Invalid value: "string": '
        'spec.replicas in body must be of type integer: "string", spec.color: Unsupported '
        'value: "pink": supported values: "red", "green", "blue"]')
    with pytest.raises(NotFound):
        api.get(WIDGET_KIND, "w", "default")


def test_the_status_subresource_splits_spec_and_status(api: APIServer) -> None:
    created = api.create({**widget("w"), "status": {"ready": True}})
    assert created.status == {}  # create drops status when the subresource is declared
    doc = created.to_dict()
    doc["status"] = {"ready": True}
    doc["spec"]["replicas"] = 2
    updated = api.update(doc)
    assert updated.status == {} and updated.to_dict()["spec"]["replicas"] == 2
    assert updated.metadata.generation == 2
    doc = updated.to_dict()
    doc["status"] = {"ready": True, "replicas": "two"}
    with pytest.raises(Invalid):
        api.update_status(doc)
    doc["status"] = {"ready": True, "replicas": 2}
    after = api.update_status(doc)
    assert after.status == {"ready": True, "replicas": 2} and after.metadata.generation == 2


def test_deleting_the_definition_deletes_its_objects_and_the_kind(api: APIServer) -> None:
    api.create(widget("a"))
    api.create(widget("b"))
    api.delete("CustomResourceDefinition", "widgets.stable.example.com")
    assert api.custom.kinds() == []
    with pytest.raises(Invalid):
        api.list(WIDGET_KIND)


def test_definitions_and_their_objects_survive_a_restart(tmp_path: Path) -> None:
    first = APIServer(database=ObjectDatabase(tmp_path / "db.sqlite"))
    first.create(copy.deepcopy(CRD))
    first.create(widget("w", color="red"))
    forget_custom_kind(WIDGET_KIND)  # as a new process: the kind comes back from the disk
    again = APIServer(database=ObjectDatabase(tmp_path / "db.sqlite"))
    assert [k.kind for k in again.custom.kinds()] == ["Widget"]
    assert again.get(WIDGET_KIND, "w", "default").to_dict()["spec"]["color"] == "red"
