"""Label selectors (query string and structured), node selector terms."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import BadRequest, Invalid
from kubelet_sim.api.selectors import LabelSelector, node_selector_matches

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(("text", "expected"), [
    ("", True),
    ("app=web", True),
    ("app==web", True),
    ("app=db", False),
    ("app!=db", True),
    ("missing!=x", True),       # != matches objects without the key
    ("app in (web,db)", True),
    ("app in (db, cache)", False),
    ("app notin (db)", True),
    ("missing notin (x)", True),  # notin matches objects without the key
    ("tier", True),
    ("missing", False),
    ("!missing", True),
    ("!app", False),
    ("app=web,tier=front,env in (prod)", True),
    ("app=web,tier=back", False),
])
def test_query_string_selector(text: str, expected: bool) -> None:
    assert LabelSelector.parse(text).matches(LABELS) is expected


@pytest.mark.parametrize("text", ["app in web", "app in ()", "=x", "app=web,,", "a b"])
def test_bad_query_string_fails_bad_request(text: str) -> None:
    with pytest.raises(BadRequest):
        LabelSelector.parse(text)


@pytest.mark.parametrize(("raw", "expected"), [
    ({}, True),
    ({"matchLabels": {"app": "web"}}, True),
    ({"matchLabels": {"app": "db"}}, False),
    ({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "x"]}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"app": "web"},
      "matchExpressions": [{"key": "env", "operator": "In", "values": ["dev"]}]}, False),
])
def test_structured_selector(raw: dict, expected: bool) -> None:
    assert LabelSelector.from_dict(raw).matches(LABELS) is expected


def test_null_structured_selector_matches_nothing_and_empty_matches_everything() -> None:
    assert not LabelSelector.from_dict(None).matches(LABELS)
    assert LabelSelector.from_dict({}).matches({})


@pytest.mark.parametrize("expr", [
    {"key": "app", "operator": "In", "values": []},
    {"key": "app", "operator": "Exists", "values": ["x"]},
    {"key": "app", "operator": "Near", "values": ["x"]},
    {"operator": "Exists"},
])
def test_malformed_match_expression_is_invalid(expr: dict) -> None:
    with pytest.raises(Invalid):
        LabelSelector.from_dict({"matchExpressions": [expr]})


def test_node_selector_terms_are_ored_and_expressions_anded() -> None:
    labels = {"topology.kubernetes.io/zone": "a", "cpus": "8"}
    zone_b = {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}
    big_zone_a = {"matchExpressions": [
        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]},
        {"key": "cpus", "operator": "Gt", "values": ["4"]}]}
    by_name = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
    assert node_selector_matches([zone_b, big_zone_a], labels, {"metadata.name": "n2"})
    assert not node_selector_matches([zone_b], labels, {"metadata.name": "n2"})
    assert node_selector_matches([by_name], {}, {"metadata.name": "n1"})
    assert not node_selector_matches([{}], labels, {"metadata.name": "n1"})


def test_a_selector_value_over_63_characters_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as err:
        LabelSelector.parse("app=" + "b" * 64)
    assert str(err.value.message) == (
        f'unable to parse requirement: values[0][app]: Invalid value: "{"b" * 64}": '
        "must be no more than 63 characters")


def test_a_selector_with_a_nul_or_a_bad_key_is_a_bad_request() -> None:
    with pytest.raises(BadRequest) as err:
        LabelSelector.parse("app in (a\x00b)")
    assert "values[0][app]: Invalid value" in err.value.message
    with pytest.raises(BadRequest) as err:
        LabelSelector.parse("-bad-=x")
    assert "key: Invalid value" in err.value.message
    assert LabelSelector.parse("example.com/app=web,tier notin (db)").requirements
