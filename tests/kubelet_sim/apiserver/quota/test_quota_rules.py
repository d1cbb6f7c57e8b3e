"""ResourceQuota and LimitRange validation as kube-apiserver words it: field paths,
values as Go's JSON writes them, and the update rule on scopes."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

from .support import pod, quota


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def invalid(api: APIServer, body: dict) -> list[str]:
    with pytest.raises(InvalidObject) as caught:
        api.create(body)
    return [str(e) for e in caught.value.errors]


def test_quota_resources_are_quota_names_with_whole_non_negative_counts(api: APIServer) -> None:
    assert invalid(api, quota("q", {"pods": "1.5", "cpu": "-1", "foo": "1"})) == [
        'spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0',
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully '
        "qualified",
        'spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota',
        'spec.hard[pods]: Invalid value: "1500m": must be an integer',
    ]
    assert invalid(api, quota("q", {"count/widgets.example.com": "0.5"})) == [
        'spec.hard[count/widgets.example.com]: Invalid value: "500m": must be an integer']


def test_scopes_must_be_known_fit_the_resources_and_not_conflict(api: APIServer) -> None:
    assert invalid(api, quota("q", {"cpu": "1"}, scopes=["BestEffort", "NotBestEffort"])) == [
        'spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: unsupported scope '
        "applied to resource",
        'spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes']
    assert invalid(api, quota("q", {"pods": "1"}, scopes=["Sometimes"])) == [
        'spec.scopes: Invalid value: ["Sometimes"]: unsupported scope']


def test_the_scopes_of_a_quota_never_change(api: APIServer) -> None:
    created = api.create(quota("q", {"pods": "1"}, scopes=["BestEffort"]))
    created.spec["scopes"] = ["NotBestEffort"]
    with pytest.raises(InvalidObject) as caught:
        api.update(created)
    assert str(caught.value) == ('ResourceQuota "q" is invalid: spec.scopes: Invalid value: '
                                 '["NotBestEffort"]: field is immutable')


def test_limit_range_items_are_checked_against_each_other(api: APIServer) -> None:
    body = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
            "spec": {"limits": [
                {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
                {"type": "Pod", "default": {"cpu": "1"}},
                {"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
                {"type": "Container", "maxLimitRequestRatio": {"memory": "500m"}},
            ]}}
    assert invalid(api, body) == [
        'spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
        'spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than '
        "default request value 1",
        'spec.limits[0].default[cpu]: Invalid value: "2": min value 2 is greater than default '
        "value 1",
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
        "spec.limits[2].limits: Required value: either minimum or maximum storage value is "
        "required, but neither was provided",
        'spec.limits[3].type: Duplicate value: "Container"',
        'spec.limits[3].maxLimitRequestRatio[memory]: Invalid value: "500m": ratio 500m is '
        "less than 1",
    ]


def test_container_requests_stay_within_their_limits_and_names_are_container_resources(
        api: APIServer) -> None:
    body = pod("p", {"cpu": "2", "example.com/gpu": "1", "pods": "1"},
               {"cpu": "1", "example.com/gpu": "2", "memory": "-1"})
    assert invalid(api, body) == [
        'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater '
        "than or equal to 0",
        'spec.containers[0].resources.requests: Invalid value: "2": must be less than or '
        "equal to cpu limit of 1",
        'spec.containers[0].resources.requests: Invalid value: "1": must be equal to '
        "example.com/gpu limit of 2",
        'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a '
        "standard resource for containers",
    ]


def test_a_limit_range_default_below_the_request_makes_the_pod_invalid(api: APIServer) -> None:
    api.create({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
                "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}})
    assert invalid(api, pod("p", {"cpu": "1"})) == [
        'spec.containers[0].resources.requests: Invalid value: "1": must be less than or '
        "equal to cpu limit of 500m"]
