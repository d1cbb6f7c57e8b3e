"""kube-controller-manager's resource quota controller: ``status.hard`` follows
``spec.hard`` and ``status.used`` what exists, giving back what finished pods and
deleted objects held."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.resource_quota import ResourceQuotaController
from kubelet_sim.testing.fake_clock import FakeClock
from tests.kubelet_sim.apiserver.quota.support import claim, pod, quota, used


def status(api: APIServer) -> dict:
    return dict(api.get("ResourceQuota", "q").status)


async def test_a_new_quota_gets_its_hard_limits_and_what_is_used_already() -> None:
    api = APIServer(clock=FakeClock())
    api.create(pod("a", {"cpu": "250m", "memory": "64Mi"}, {"memory": "128Mi"}))
    api.create(claim("data", "1Gi", "fast"))
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    api.create(quota("q", {"pods": "5", "requests.cpu": "2", "limits.memory": "1Gi",
                           "requests.storage": "10Gi", "configmaps": "3",
                           "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                           "count/deployments.apps": "2", "example.com/unknown": "1"}))
    controller = ResourceQuotaController(api)
    assert await controller.sync_once()
    assert status(api)["hard"]["pods"] == "5"
    assert status(api)["used"] == {
        "configmaps": "1", "count/deployments.apps": "0",
        "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "limits.memory": "128Mi", "pods": "1", "requests.cpu": "250m",
        "requests.storage": "1Gi"}  # nothing measures example.com/unknown
    assert not await controller.sync_once()


async def test_finished_and_deleted_pods_give_their_usage_back() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.create(quota("q", {"pods": "3", "count/pods": "3"}))
    controller = ResourceQuotaController(api)
    await controller.sync_once()
    for name in ("a", "b", "c"):
        api.create(pod(name))
    assert used(api, "q") == {"pods": "3", "count/pods": "3"}  # charged at admission
    done = api.get("Pod", "a")
    done.status["phase"] = "Succeeded"
    api.update_status(done)
    api.delete("Pod", "b")
    assert await controller.sync_once()
    assert used(api, "q") == {"pods": "1", "count/pods": "2"}  # a finished pod still exists


async def test_a_pod_stuck_terminating_past_its_grace_no_longer_counts() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    api.create(quota("q", {"pods": "3"}))
    controller = ResourceQuotaController(api)
    await controller.sync_once()
    api.create(pod("a", nodeName="node-1"))
    api.delete("Pod", "a")  # scheduled: stays for its grace period
    await controller.sync_once()
    assert used(api, "q") == {"pods": "1"}
    # deletionTimestamp is already the delete's time plus the grace; quota waits one
    # grace period more past it (a node that is gone never finishes the pod)
    clock.advance(timedelta(seconds=31).total_seconds())
    assert not await controller.sync_once()
    clock.advance(timedelta(seconds=30).total_seconds())
    assert await controller.sync_once()
    assert used(api, "q") == {"pods": "0"}


async def test_a_changed_spec_moves_the_status_and_drops_what_is_no_longer_tracked() -> None:
    api = APIServer(clock=FakeClock())
    api.create(quota("q", {"pods": "3", "services": "1"}))
    controller = ResourceQuotaController(api)
    await controller.sync_once()
    current = api.get("ResourceQuota", "q")
    current.spec["hard"] = {"pods": "4"}
    api.update(current)
    assert await controller.sync_once()
    assert status(api) == {"hard": {"pods": "4"}, "used": {"pods": "0"}}
