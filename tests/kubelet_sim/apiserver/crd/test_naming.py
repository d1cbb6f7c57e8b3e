"""Names of definitions as apiextensions' naming controller accepts them: conflicts only
within a group, the reason of the last conflicting name, its message; objects of the same
kind in two groups stored apart, also across a restart."""

from __future__ import annotations

import copy
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubelet_sim.api.model import Resource, condition, forget_custom_kind
from kubelet_sim.apiserver.crd.definition import set_defaults
from kubelet_sim.apiserver.crd.naming import NamesInUse, accept_names
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from tests.fixtures.up_process import PROJECT_ROOT

CRD: dict[str, Any] = yaml.safe_load(
    (PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml").read_text())


def in_group(group: str, plural: str = "widgets", **names: Any) -> dict[str, Any]:
    crd = copy.deepcopy(CRD)
    crd["metadata"]["name"] = f"{plural}.{group}"
    crd["spec"]["group"] = group
    crd["spec"]["names"] = {"plural": plural, "kind": "Widget", **names}
    return crd


def widget(group: str, name: str) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"size": "1Gi"}}


@pytest.fixture(autouse=True)
def forget_kinds() -> Any:
    yield
    for group in ("a.example.com", "b.example.com"):
        forget_custom_kind(f"Widget.{group}")


def names_accepted(crd: Resource) -> tuple[str, str, str]:
    found = condition(crd, "NamesAccepted") or {}
    return found.get("status", ""), found.get("reason", ""), found.get("message", "")


def test_the_same_kind_in_two_groups_is_accepted_and_stored_apart() -> None:
    api = APIServer()
    for group in ("a.example.com", "b.example.com"):
        crd = api.create(in_group(group))
        assert names_accepted(crd) == ("True", "NoConflicts", "no conflicts found")
        api.create(widget(group, "same"))
    a = api.get("Widget.a.example.com", "same", "default").to_dict()
    b = api.get("Widget.b.example.com", "same", "default").to_dict()
    assert (a["apiVersion"], a["kind"], b["apiVersion"], b["kind"]) == (
        "a.example.com/v1", "Widget", "b.example.com/v1", "Widget")
    assert a["metadata"]["uid"] != b["metadata"]["uid"]


def test_a_singular_taken_in_the_group_is_a_singular_conflict() -> None:
    api = APIServer()
    api.create(in_group("a.example.com"))
    taken = in_group("a.example.com", "gadgets", kind="Gadget", singular="widgets")
    crd = api.create(taken)
    assert names_accepted(crd) == ("False", "SingularConflict",
                                   '"widgets" is already in use')
    assert (condition(crd, "Established") or {}).get("reason") == "NotAccepted"
    assert crd.status["acceptedNames"] == {"plural": "gadgets", "kind": "Gadget",
                                           "listKind": "GadgetList"}
    assert [k.name for k in api.custom.kinds()] == ["widgets.a.example.com"]


def test_a_name_accepted_before_stays_the_definitions_own() -> None:
    mine = Resource.from_dict(in_group("a.example.com"))
    mine.status["acceptedNames"] = {"plural": "widgets", "kind": "Widget"}
    used = NamesInUse.of([{"plural": "widgets", "kind": "Widget"}])
    decision = accept_names(mine, used)
    assert decision.reason == ""
    assert decision.accepted["plural"] == "widgets"


def test_the_last_conflicting_name_gives_the_reason() -> None:
    used = NamesInUse.of([{"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "listKind": "WidgetList"}])
    crd = Resource.from_dict(in_group("a.example.com"))
    set_defaults(crd)  # singular widget, listKind WidgetList
    decision = accept_names(crd, used)
    assert (decision.reason, decision.message) == ("ListKindConflict",
                                                   '"WidgetList" is already in use')
    assert decision.accepted == {"plural": "", "kind": ""}


def test_objects_stored_under_the_bare_kind_move_to_the_groups_key_on_load(
        tmp_path: Path) -> None:
    first = APIServer(database=ObjectDatabase(tmp_path / "db.sqlite"))
    first.create(in_group("a.example.com"))
    first.create(widget("a.example.com", "old"))
    with sqlite3.connect(tmp_path / "db.sqlite") as db:  # as an older simulator wrote it
        db.execute("UPDATE objects SET kind='Widget' WHERE kind='Widget.a.example.com'")
    forget_custom_kind("Widget.a.example.com")
    again = APIServer(database=ObjectDatabase(tmp_path / "db.sqlite"))
    again.delete("Widget.a.example.com", "old", "default")
    with sqlite3.connect(tmp_path / "db.sqlite") as db:
        rows = [json.loads(body)["metadata"]["name"] for (body,) in db.execute(
            "SELECT body FROM objects WHERE kind LIKE 'Widget%'")]
    assert rows == []


def test_a_deleted_definition_frees_its_names_for_the_one_refused_them() -> None:
    api = APIServer()
    api.create(in_group("a.example.com"))
    refused = api.create(in_group("a.example.com", "gizmos"))
    assert names_accepted(refused)[0] == "False"
    api.delete("CustomResourceDefinition", "widgets.a.example.com")
    again = api.get("CustomResourceDefinition", "gizmos.a.example.com")
    assert names_accepted(again) == ("True", "NoConflicts", "no conflicts found")
    assert (condition(again, "Established") or {}).get("status") == "True"
    assert [k.name for k in api.custom.kinds()] == ["gizmos.a.example.com"]
    api.create(widget("a.example.com", "w"))  # served as Widget again, from gizmos
