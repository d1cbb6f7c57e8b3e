"""Definitions of the same kind in different groups, with the real kubectl: kube-apiserver
serves them all (names conflict only within a group), discovery lists each, kubectl reaches
each by ``<plural>.<group>`` and resolves a bare name to the group discovery ranks first
(the built-in groups, then the definitions' groups by name). Within one group the naming
controller refuses a name already accepted: NamesAccepted False with its reason and
message, Established False."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import yaml

from kubelet_sim.api import builders
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.server import APIServer

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl


def definition(group: str, plural: str = "widgets", kind: str = "Widget",
               short_names: tuple[str, ...] = ()) -> str:
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind, "shortNames": list(short_names)},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "additionalPrinterColumns": [
                                   {"name": "Group", "type": "string",
                                    "jsonPath": ".spec.from"}],
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": {
                                       "from": {"type": "string"}}}}}}}]}})


def instance(group: str, name: str, kind: str = "Widget") -> str:
    return yaml.safe_dump({"apiVersion": f"{group}/v1", "kind": kind,
                           "metadata": {"name": name, "namespace": "default"},
                           "spec": {"from": group}})


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    api = APIServer(history_limit=200)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True))
    handle = start_api_server(api, tmp_path_factory.mktemp("same-kind") / "state")
    served = Served(api, handle)
    try:
        # created in the reverse of discovery's order: resolution must not follow creation
        for group in ("zeta.example.com", "alpha.example.com"):
            served.kubectl("apply", "-f", "-", stdin=definition(group, short_names=("wg",)))
            served.kubectl("wait", "--for=condition=Established", "--timeout=20s",
                           f"crd/widgets.{group}")
            served.kubectl("apply", "-f", "-", stdin=instance(group, f"from-{group[0]}"))
        yield served
    finally:
        handle.stop()


def conditions(served: Served, name: str) -> dict[str, tuple[str, str, str]]:
    crd = served.kubectl_json("get", "crd", name)
    return {c["type"]: (c["status"], c["reason"], c["message"])
            for c in crd["status"]["conditions"]}


def test_both_definitions_of_the_kind_are_established(served: Served) -> None:
    for group in ("alpha.example.com", "zeta.example.com"):
        assert conditions(served, f"widgets.{group}") == {
            "NamesAccepted": ("True", "NoConflicts", "no conflicts found"),
            "Established": ("True", "InitialNamesAccepted",
                            "the initial names have been accepted")}


def test_discovery_lists_the_kind_in_each_group(served: Served) -> None:
    rows = [line.split() for line in served.kubectl(
        "api-resources", "--no-headers").stdout.splitlines() if "Widget" in line]
    assert rows == [["widgets", "wg", "alpha.example.com/v1", "true", "Widget"],
                    ["widgets", "wg", "zeta.example.com/v1", "true", "Widget"]]


def test_each_group_serves_its_own_objects(served: Served) -> None:
    for group in ("alpha.example.com", "zeta.example.com"):
        listed = served.kubectl_json("get", f"widgets.{group}")
        assert [(i["apiVersion"], i["kind"], i["metadata"]["name"])
                for i in listed["items"]] == [(f"{group}/v1", "Widget", f"from-{group[0]}")]
    table = served.kubectl("get", "widgets.zeta.example.com").stdout.split()
    assert table == ["NAME", "GROUP", "from-z", "zeta.example.com"]


def test_a_bare_name_resolves_to_the_group_discovery_ranks_first(served: Served) -> None:
    for name in ("widgets", "widget", "wg", "Widget"):
        assert served.kubectl("get", name, "-o", "name").stdout.split() == [
            "widget.alpha.example.com/from-a"], name


def test_the_same_name_in_two_groups_is_updated_and_deleted_apart(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=instance("alpha.example.com", "twin"))
    served.kubectl("apply", "-f", "-", stdin=instance("zeta.example.com", "twin"))
    served.kubectl("label", "widgets.zeta.example.com", "twin", "side=z")
    served.kubectl("delete", "widgets.alpha.example.com", "twin")
    left = served.kubectl_json("get", "widgets.zeta.example.com", "twin")
    assert left["metadata"]["labels"] == {"side": "z"}
    assert "NotFound" in served.kubectl("get", "widgets.alpha.example.com", "twin",
                                        check=False).stderr
    served.kubectl("delete", "widgets.zeta.example.com", "twin")


def test_a_definition_of_a_built_in_kind_leaves_kubectl_on_the_built_in_one(
        served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=definition("alpha.example.com", "leases",
                                                        "Lease"))
    served.kubectl("wait", "--for=condition=Established", "--timeout=20s",
                   "crd/leases.alpha.example.com")
    served.kubectl("apply", "-f", "-", stdin=instance("alpha.example.com", "mine", "Lease"))
    assert served.kubectl("get", "leases", "-o", "name").stdout.split() == []
    assert served.kubectl("get", "leases.alpha.example.com", "-o", "name").stdout.split() == [
        "lease.alpha.example.com/mine"]
    served.kubectl("delete", "crd", "leases.alpha.example.com")


def test_a_kind_already_accepted_in_the_group_is_a_kind_conflict(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=definition("alpha.example.com", "gizmos"))
    assert conditions(served, "gizmos.alpha.example.com") == {
        "NamesAccepted": ("False", "ListKindConflict", '"WidgetList" is already in use'),
        "Established": ("False", "NotAccepted", "not all names are accepted")}
    accepted = served.kubectl_json("get", "crd", "gizmos.alpha.example.com")["status"][
        "acceptedNames"]
    # the singular defaults to "widget", taken too: only the plural is accepted
    assert accepted == {"plural": "gizmos", "kind": ""}
    assert "gizmos" not in served.kubectl("api-resources").stdout
    served.kubectl("delete", "crd", "gizmos.alpha.example.com")


def test_a_short_name_already_accepted_in_the_group_is_a_short_names_conflict(
        served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=definition("alpha.example.com", "gadgets",
                                                        "Gadget", ("wg", "widgets")))
    assert conditions(served, "gadgets.alpha.example.com")["NamesAccepted"] == (
        "False", "ShortNamesConflict",
        '["wg" is already in use, "widgets" is already in use]')
    served.kubectl("delete", "crd", "gadgets.alpha.example.com")
