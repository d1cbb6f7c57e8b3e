"""The workload controllers when an admission plugin refuses their pods or claims (a
quota): FailedCreate Warnings worded as each controller words them, the ReplicaSet's
ReplicaFailure condition, and the pods created once the quota allows them."""

from __future__ import annotations

import pytest

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.job import JobController
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.controllers.statefulset import StatefulSetController
from kubelet_sim.testing.fake_clock import FakeClock
from tests.kubelet_sim.apiserver.quota.support import computed, quota

from .test_statefulset import stateful_set


def warnings(api: APIServer) -> list[str]:
    return [e.body["message"] for e in api.list("Event").items
            if e.body.get("type") == "Warning" and e.body.get("reason") == "FailedCreate"]


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


async def test_a_refused_claim_of_a_stateful_set_is_two_failed_create_events() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    computed(api, quota("q", {"persistentvolumeclaims": "0"}))
    api.create(stateful_set(1))
    controller = StatefulSetController(api, clock=clock)
    with pytest.raises(Exception, match="exceeded quota"):
        await controller.sync(api.get("StatefulSet", "db"))
    refusal = ('persistentvolumeclaims "data-db-0" is forbidden: exceeded quota: q, '
               "requested: persistentvolumeclaims=1, used: persistentvolumeclaims=0, "
               "limited: persistentvolumeclaims=0")
    assert warnings(api) == [
        f"create Claim data-db-0 for Pod db-0 in StatefulSet db failed error: {refusal}",
        f"create Pod db-0 in StatefulSet db failed error: failed to create PVC data-db-0: "
        f"{refusal}"]
    assert api.list("Pod").items == []


async def test_a_refused_pod_of_a_job_is_a_failed_create_event() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    computed(api, quota("q", {"count/pods": "0"}))
    api.create({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [
                    {"name": "c", "image": "busybox"}]}}}})
    controller = JobController(api, clock=clock)
    with pytest.raises(Exception, match="exceeded quota"):
        await controller.sync(api.get("Job", "once"))
    [message] = warnings(api)
    assert message.startswith('Error creating: pods "once-')
    assert message.endswith('" is forbidden: exceeded quota: q, requested: count/pods=1, '
                            "used: count/pods=0, limited: count/pods=0")
