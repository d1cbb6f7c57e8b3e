"""The scheduler's storage capacity check: a WaitForFirstConsumer claim of a driver with
``storageCapacity: true`` goes only where a CSIStorageCapacity of its class has room."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, condition
from kubelet_sim.controllers.common import ANN_SELECTED_NODE
from tests.kubelet_sim.controller_cluster import DRIVER, TOPOLOGY_KEY, Cluster

NOT_ENOUGH = "node(s) did not have enough free storage"


def scheduled(pod: Resource) -> dict[str, object]:
    cond = condition(pod, "PodScheduled") or {}
    return {k: cond.get(k) for k in ("status", "reason", "message")}


def publish(cluster: Cluster, zone: str, capacity: str | None,
            maximum: str | None = None, storage_class: str = "late") -> None:
    cluster.api.create(builders.csi_storage_capacity(
        f"csisc-{zone}-{storage_class}", "kube-system", storage_class,
        {"matchLabels": {TOPOLOGY_KEY: zone}}, capacity, maximum))


@pytest.fixture
def late(cluster: Cluster) -> Cluster:
    """The driver asks for capacity-aware scheduling (the fake publishes nothing itself:
    each test writes the objects it needs)."""
    driver = builders.csi_driver(DRIVER)
    driver.spec["storageCapacity"] = True
    cluster.api.create(driver)
    cluster.storage_class("late", volume_binding_mode="WaitForFirstConsumer")
    return cluster


async def test_a_claim_bigger_than_every_segment_leaves_the_pod_pending_with_the_reason(
    late: Cluster,
) -> None:
    publish(late, "zone-a", "1Gi")
    publish(late, "zone-b", "2Gi")
    late.claim(storage="3Gi", storage_class="late")
    late.pod()

    await late.settle()

    pod = late.get("Pod", "app")
    message = (f"0/2 nodes are available: 2 {NOT_ENOUGH}. preemption: 0/2 nodes are "
               "available: 2 Preemption is not helpful for scheduling.")
    assert "nodeName" not in pod.spec
    assert scheduled(pod) == {"status": "False", "reason": "Unschedulable", "message": message}
    assert f"FailedScheduling: {message}" in late.events("Pod", "app")
    assert late.requests("CreateVolume") == []


async def test_the_pod_goes_to_the_segment_with_room(late: Cluster) -> None:
    publish(late, "zone-a", "1Gi")
    publish(late, "zone-b", "5Gi")
    late.claim(storage="3Gi", storage_class="late")
    late.pod()

    await late.settle()

    claim = late.get("PersistentVolumeClaim", "data")
    assert claim.metadata.annotations[ANN_SELECTED_NODE] == "node-2"
    assert late.get("Pod", "app").spec["nodeName"] == "node-2"


async def test_maximum_volume_size_is_preferred_to_capacity(late: Cluster) -> None:
    publish(late, "zone-a", "100Gi", maximum="1Gi")
    publish(late, "zone-b", None)  # no capacity: no room
    late.claim(storage="2Gi", storage_class="late")
    late.pod()

    await late.settle()

    assert scheduled(late.get("Pod", "app"))["message"] == (
        f"0/2 nodes are available: 2 {NOT_ENOUGH}. preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling.")


async def test_objects_of_another_class_or_no_object_mean_no_room(late: Cluster) -> None:
    late.storage_class("other", volume_binding_mode="WaitForFirstConsumer")
    publish(late, "zone-a", "10Gi", storage_class="other")
    late.claim(storage="1Gi", storage_class="late")
    late.pod()

    await late.settle()

    assert scheduled(late.get("Pod", "app"))["reason"] == "Unschedulable"


async def test_without_storage_capacity_on_the_csidriver_capacity_is_not_checked(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.csi_driver(DRIVER))
    cluster.storage_class("late", volume_binding_mode="WaitForFirstConsumer")
    publish(cluster, "zone-a", "1Gi")
    cluster.claim(storage="3Gi", storage_class="late")
    cluster.pod()

    await cluster.settle()

    assert cluster.get("Pod", "app").spec["nodeName"] == "node-1"


async def test_a_matching_available_volume_needs_no_capacity(late: Cluster) -> None:
    late.api.create(builders.csi_persistent_volume(
        "static", driver=DRIVER, volume_handle="vol-static", storage="5Gi",
        storage_class="late", node_affinity={"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": TOPOLOGY_KEY, "operator": "In",
                                   "values": ["zone-b"]}]}]}}))
    late.claim(storage="3Gi", storage_class="late")
    late.pod()

    await late.settle()

    assert late.get("Pod", "app").spec["nodeName"] == "node-2"
    assert late.get("PersistentVolumeClaim", "data").spec["volumeName"] == "static"
