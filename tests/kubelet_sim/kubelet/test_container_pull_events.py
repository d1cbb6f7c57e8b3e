"""The kubelet's image events before a container starts, by its imagePullPolicy."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.kubelet.container_events import pull_policy, start_events


def reasons_and_messages(policy: str | None, image: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in start_events("c", image, policy)]


def test_an_image_pulled_always_is_pulling_then_successfully_pulled() -> None:
    events = reasons_and_messages("Always", "nginx")
    assert events[0] == ("Pulling", 'Pulling image "nginx"')
    assert events[1][0] == "Pulled"
    assert events[1][1].startswith('Successfully pulled image "nginx" in 0s (0s including '
                                   "waiting). Image size: ")
    assert events[1][1].endswith(" bytes.")
    assert [r for r, _ in events[2:]] == ["Created", "Started"]


def test_an_if_not_present_image_is_already_present_and_the_pod_may_use_it() -> None:
    assert reasons_and_messages("IfNotPresent", "nginx")[0] == (
        "Pulled", 'Container image "nginx" already present on machine '
        "and can be accessed by the pod")
    assert reasons_and_messages("Never", "nginx:1.27")[0][0] == "Pulled"


def test_without_a_policy_the_apis_default_for_the_image_decides() -> None:
    assert reasons_and_messages(None, "nginx")[0][0] == "Pulling"
    assert reasons_and_messages(None, "nginx:latest")[0][0] == "Pulling"
    assert reasons_and_messages(None, "nginx:1.27")[0][0] == "Pulled"
    assert reasons_and_messages(None, "nginx@sha256:" + "a" * 64)[0][0] == "Pulled"


def test_the_policy_is_read_from_the_named_container_or_init_container() -> None:
    pod = Resource.from_dict({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"},
                              "spec": {"initContainers": [{"name": "i", "image": "busybox"}],
                                       "containers": [{"name": "c", "image": "nginx",
                                                       "imagePullPolicy": "IfNotPresent"}]}})
    assert pull_policy(pod, "c") == "IfNotPresent"
    assert pull_policy(pod, "i") == "Always"
