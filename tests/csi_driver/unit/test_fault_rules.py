"""Fault rules as written (YAML/JSON): parsing and its errors, which calls a rule acts
on (globs on the bare or full method name, volume/node id globs, after, times,
probability with a seed), and the first acting rule winning."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from csi_driver.errors import InvalidArgument
from csi_driver.server.faults import FaultInjector, FaultRule, load_rules

STAGE = "/csi.v1.Node/NodeStageVolume"


def call(volume_id: str = "v1", node_id: str = "") -> SimpleNamespace:
    return SimpleNamespace(volume_id=volume_id, node_id=node_id)


def test_the_rule_file_from_the_issue_parses_as_written() -> None:
    rules = load_rules("- method: NodeStageVolume\n  code: UNAVAILABLE\n"
                       "  message: injected by the test\n  times: 2\n")
    assert [(r.method, r.code, r.message, r.times) for r in rules] == [
        ("NodeStageVolume", "UNAVAILABLE", "injected by the test", 2)]
    injector = FaultInjector(rules)
    fired = [injector.pick(STAGE, call()) is not None for _ in range(4)]
    assert fired == [True, True, False, False]


def test_json_and_a_single_mapping_are_rules_too() -> None:
    assert [r.delay for r in load_rules('[{"method": "Probe", "delay": 0.5}]')] == [0.5]
    assert [r.hang for r in load_rules("method: Node*\nhang: true\n")] == [True]
    assert load_rules("") == []


@pytest.mark.parametrize(("text", "says"), [
    ("- code: UNAVAILABLE", "needs a method"),
    ("- method: Probe", "exactly one of code, delay or hang"),
    ("- method: Probe\n  code: UNAVAILABLE\n  delay: 1", "exactly one of"),
    ("- method: Probe\n  code: NOPE", "unknown gRPC status code"),
    ("- method: Probe\n  code: ABORTED\n  tiems: 2", "unknown fault rule field(s): tiems"),
    ("- method: Probe\n  code: ABORTED\n  probability: 2", "probability in [0, 1]"),
    ("- method: Probe\n  code: ABORTED\n  times: x", "bad fault rule"),
    ("- [", "not YAML/JSON"),
    ("- 7", "must be a mapping"),
])
def test_a_bad_rule_is_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        load_rules(text)
    assert says in str(err.value)


def test_globs_on_the_method_and_the_ids_choose_the_calls() -> None:
    rule = FaultRule.parse({"method": "/csi.v1.Node/*", "volume_id": "pvc-*", "code": "ABORTED"})
    assert rule.acts_on(STAGE, call("pvc-1"))
    assert not rule.acts_on(STAGE, call("other"))
    assert not rule.acts_on("/csi.v1.Controller/CreateVolume", call("pvc-1"))
    by_node = FaultRule.parse({"method": "Controller*Publish*", "node_id": "node-2",
                               "code": "UNAVAILABLE"})
    assert by_node.acts_on("/csi.v1.Controller/ControllerPublishVolume", call(node_id="node-2"))
    assert not by_node.acts_on("/csi.v1.Controller/ControllerPublishVolume", call(node_id="n1"))


def test_after_lets_calls_through_then_times_limits_and_counts_are_kept() -> None:
    rule = FaultRule.parse({"method": "NodeStageVolume", "code": "UNAVAILABLE",
                            "after": 1, "times": 2})
    assert [rule.acts_on(STAGE, call()) for _ in range(5)] == [False, True, True, False, False]
    assert (rule.matched, rule.fired) == (5, 2)


def test_a_seeded_probability_repeats_exactly() -> None:
    def run() -> list[bool]:
        rule = FaultRule.parse({"method": "*", "code": "ABORTED", "probability": 0.5,
                                "seed": 42})
        return [rule.acts_on(STAGE, call()) for _ in range(40)]
    first = run()
    assert first == run()
    assert 5 < sum(first) < 35


def test_the_first_acting_rule_wins_and_every_matching_rule_counts_the_call() -> None:
    injector = FaultInjector(load_rules(
        "- {method: NodeStageVolume, code: UNAVAILABLE, times: 1}\n"
        "- {method: Node*, code: INTERNAL}\n"))
    first, second = injector.pick(STAGE, call()), injector.pick(STAGE, call())
    assert first is not None and first.code == "UNAVAILABLE"
    assert second is not None and second.code == "INTERNAL"
    assert [(r["id"], r["matched"], r["fired"]) for r in injector.describe()] == [
        (1, 2, 1), (2, 2, 1)]
    assert injector.remove(1) and not injector.remove(1)
    assert injector.clear() == 1 and not injector
