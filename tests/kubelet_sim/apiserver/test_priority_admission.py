"""PriorityClass (scheduling.k8s.io/v1) as kube-apiserver keeps it, and the Priority
admission plugin: the built-in classes, defaulting, validation and immutability, one
global default, and a pod's priority and preemption policy taken from its class."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import InvalidObject, ObjectForbidden
from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock(), admission_plugins=["Priority"])


def pod(name: str = "web", **spec: Any) -> Resource:
    return new("Pod", name, "default",
               spec={"containers": [{"name": "c", "image": "nginx"}], **spec})


def priority_class(name: str, value: int, **body: Any) -> Resource:
    return new("PriorityClass", name, value=value, **body)


def test_the_system_classes_exist_from_the_start(api: APIServer) -> None:
    classes = {pc.name: pc for pc in api.list("PriorityClass").items}
    assert {name: (pc.body["value"], pc.body["preemptionPolicy"], pc.metadata.generation)
            for name, pc in classes.items()} == {
        "system-node-critical": (2000001000, "PreemptLowerPriority", 1),
        "system-cluster-critical": (2000000000, "PreemptLowerPriority", 1)}
    assert classes["system-node-critical"].body["description"] == (
        "Used for system critical pods that must not be moved from their current node.")


def test_a_pod_without_a_class_gets_priority_zero_and_preempt_lower_priority(
        api: APIServer) -> None:
    made = api.create(pod())
    assert made.spec["priority"] == 0
    assert made.spec["preemptionPolicy"] == "PreemptLowerPriority"
    assert "priorityClassName" not in made.spec


def test_a_pod_takes_its_classes_value_and_preemption_policy(api: APIServer) -> None:
    api.create(priority_class("batch", 100, preemptionPolicy="Never"))
    made = api.create(pod(priorityClassName="batch"))
    assert (made.spec["priority"], made.spec["preemptionPolicy"]) == (100, "Never")
    critical = api.create(pod("critical", priorityClassName="system-node-critical"))
    assert critical.spec["priority"] == 2000001000


def test_the_global_default_class_is_given_to_pods_without_one(api: APIServer) -> None:
    api.create(priority_class("everyone", 7, globalDefault=True))
    made = api.create(pod())
    assert (made.spec["priorityClassName"], made.spec["priority"]) == ("everyone", 7)


def test_a_pod_naming_a_missing_class_is_forbidden(api: APIServer) -> None:
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod(priorityClassName="gold"))
    assert str(refused.value) == ('pods "web" is forbidden: no PriorityClass with name gold was '
                                  "found")


def test_a_priority_sent_that_differs_from_the_class_is_forbidden(api: APIServer) -> None:
    with pytest.raises(ObjectForbidden) as refused:
        api.create(pod(priority=5))
    assert refused.value.why == ("the integer value of priority (5) must not be provided in "
                                 "pod spec; priority admission controller computed 0 from the "
                                 "given PriorityClass name")
    api.create(priority_class("polite", 1, preemptionPolicy="Never"))
    with pytest.raises(ObjectForbidden, match=r"the string value of PreemptionPolicy "
                                              r"\(PreemptLowerPriority\) must not be provided"):
        api.create(pod(priorityClassName="polite", preemptionPolicy="PreemptLowerPriority"))


def test_an_update_leaving_out_the_priority_keeps_it(api: APIServer) -> None:
    made = api.create(pod())
    sent = made.copy()
    del sent.spec["priority"], sent.spec["preemptionPolicy"]
    sent.metadata.labels["touched"] = "yes"
    kept = api.update(sent)
    assert (kept.spec["priority"], kept.spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")


def test_only_one_class_may_be_the_global_default(api: APIServer) -> None:
    api.create(priority_class("first", 1, globalDefault=True))
    with pytest.raises(ObjectForbidden) as refused:
        api.create(priority_class("second", 2, globalDefault=True))
    assert str(refused.value) == (
        'priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass first is '
        "already marked as default. Only one default can exist")
    other = api.create(priority_class("third", 3))
    other.body["globalDefault"] = True
    with pytest.raises(ObjectForbidden):
        api.update(other)
    first = api.get("PriorityClass", "first")
    first.body["description"] = "still the default"
    api.update(first)  # the default itself may be updated


def test_a_class_defaults_its_preemption_policy_and_keeps_generation_one(
        api: APIServer) -> None:
    made = api.create(priority_class("plain", 10))
    assert made.body["preemptionPolicy"] == "PreemptLowerPriority"
    made.body["description"] = "changed"
    assert api.update(made).metadata.generation == 1


@pytest.mark.parametrize(("name", "body", "message"), [
    ("huge", {"value": 1000000001}, "value: Forbidden: maximum allowed value of a user defined "
                                    "priority is 1000000000"),
    ("system-mine", {"value": 1}, "metadata.name: Forbidden: priority class names with "
                                  "'system-' prefix are reserved for system use only. error: "
                                  "system-mine is not a known system priority class"),
    ("odd", {"value": 1, "preemptionPolicy": "Sometimes"},
     'preemptionPolicy: Unsupported value: "Sometimes": supported values: '
     '"PreemptLowerPriority", "Never"'),
])
def test_invalid_classes_are_refused_with_kube_apiservers_words(
        api: APIServer, name: str, body: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create(new("PriorityClass", name, **body))
    assert str(refused.value) == f'PriorityClass.scheduling.k8s.io "{name}" is invalid: {message}'


def test_value_and_preemption_policy_are_immutable(api: APIServer) -> None:
    made = api.create(priority_class("fixed", 10))
    made.body["value"], made.body["preemptionPolicy"] = 11, "Never"
    with pytest.raises(InvalidObject) as refused:
        api.update(made)
    assert str(refused.value) == (
        'PriorityClass.scheduling.k8s.io "fixed" is invalid: [value: Forbidden: may not be '
        'changed in an update., preemptionPolicy: Invalid value: "Never": field is immutable]')


def test_the_plugin_is_off_unless_asked() -> None:
    api = APIServer(clock=FakeClock())
    assert api.list("PriorityClass").items == []
    assert "priority" not in api.create(pod()).spec
