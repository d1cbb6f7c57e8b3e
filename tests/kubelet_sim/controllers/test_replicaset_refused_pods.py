"""The ReplicaSet controller when an admission plugin refuses its pods (a quota): a
FailedCreate Warning with the refusal, the ReplicaFailure condition, and the pods
created once the quota allows them."""

from __future__ import annotations

import pytest

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.testing.fake_clock import FakeClock
from tests.kubelet_sim.apiserver.quota.support import computed, quota


def replica_set(replicas: int) -> dict:
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": template}}


async def test_a_quota_refusal_is_a_failed_create_event_and_the_replica_failure_condition(
) -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    computed(api, quota("q", {"pods": "2"}))
    api.create(replica_set(3))
    controller = ReplicaSetController(api, clock=clock)
    with pytest.raises(RuntimeError):
        await controller.sync(api.get("ReplicaSet", "web"))
    assert len(api.list("Pod").items) == 2
    [warning] = [e for e in api.list("Event").items if e.body.get("type") == "Warning"]
    assert warning.body["reason"] == "FailedCreate"
    assert warning.body["message"].startswith('Error creating: pods "web-')
    assert warning.body["message"].endswith(
        '" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2')
    [failure] = api.get("ReplicaSet", "web").status["conditions"]
    assert (failure["type"], failure["status"], failure["reason"]) == (
        "ReplicaFailure", "True", "FailedCreate")
    assert failure["message"] == warning.body["message"].removeprefix("Error creating: ")

    grown = api.get("ResourceQuota", "q")
    grown.spec["hard"] = {"pods": "3"}
    api.update(grown)
    grown = api.get("ResourceQuota", "q")
    grown.status["hard"] = {"pods": "3"}
    api.update_status(grown)
    await controller.sync(api.get("ReplicaSet", "web"))
    assert len(api.list("Pod").items) == 3
    assert "conditions" not in api.get("ReplicaSet", "web").status
