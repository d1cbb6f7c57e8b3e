"""external-provisioner's capacity controller: one CSIStorageCapacity per topology segment
and WaitForFirstConsumer class of the driver, from GetCapacity, kept current and removed
with its class or segment."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.sidecars.storage_capacity import StorageCapacityController
from kubelet_sim.testing.fake_controller import DEFAULT_CONTROLLER_CAPS, CtrlRpc
from kubelet_sim.testing.fake_csi import FakeCsiClient
from tests.kubelet_sim.controller_cluster import DRIVER, TOPOLOGY_KEY, Cluster

GiB = 1 << 30


def enable_capacity(cluster: Cluster, *, storage_capacity: bool = True) -> None:
    driver = builders.csi_driver(DRIVER)
    driver.spec["storageCapacity"] = storage_capacity
    cluster.api.create(driver)
    cluster.driver.controller_capabilities = (*DEFAULT_CONTROLLER_CAPS, CtrlRpc.GET_CAPACITY)
    cluster.driver.segment_capacity = {"zone-a": 10 * GiB, "zone-b": 3 * GiB}


def capacities(cluster: Cluster) -> list[Resource]:
    return cluster.api.list("CSIStorageCapacity", "kube-system").items


def by_zone(cluster: Cluster) -> dict[tuple[str, str], dict[str, Any]]:
    return {(c.body["storageClassName"], c.body["nodeTopology"]["matchLabels"][TOPOLOGY_KEY]):
            {k: c.body.get(k) for k in ("capacity", "maximumVolumeSize")}
            for c in capacities(cluster)}


@pytest.fixture
def capacity_cluster(cluster: Cluster) -> Cluster:
    enable_capacity(cluster)
    cluster.storage_class("late", volume_binding_mode="WaitForFirstConsumer",
                          parameters={"pool": "fast"})
    return cluster


async def test_no_object_is_published_unless_the_csidriver_asks_for_storage_capacity(
    cluster: Cluster,
) -> None:
    enable_capacity(cluster, storage_capacity=False)
    cluster.storage_class("late", volume_binding_mode="WaitForFirstConsumer")

    await cluster.settle()

    assert capacities(cluster) == []
    assert cluster.requests("GetCapacity") == []


async def test_one_object_per_segment_and_wait_for_first_consumer_class_of_the_driver(
    capacity_cluster: Cluster,
) -> None:
    capacity_cluster.storage_class("now")  # Immediate: the scheduler never asks
    capacity_cluster.storage_class("other", provisioner="other.example.com",
                                   volume_binding_mode="WaitForFirstConsumer")

    await capacity_cluster.settle()

    assert by_zone(capacity_cluster) == {("late", "zone-a"): {"capacity": "10Gi",
                                                              "maximumVolumeSize": None},
                                         ("late", "zone-b"): {"capacity": "3Gi",
                                                              "maximumVolumeSize": None}}
    one = capacities(capacity_cluster)[0]
    assert one.name.startswith("csisc-") and one.metadata.generate_name == "csisc-"
    assert one.labels == {"csi.storage.k8s.io/drivername": DRIVER,
                          "csi.storage.k8s.io/managed-by": "external-provisioner"}
    assert one.metadata.owner_references == []
    asked = capacity_cluster.requests("GetCapacity")
    assert sorted(dict(r.accessible_topology.segments)[TOPOLOGY_KEY] for r in asked) == \
        ["zone-a", "zone-b"]
    assert all(dict(r.parameters) == {"pool": "fast"} and not r.volume_capabilities
               for r in asked)


async def test_a_provisioned_volume_shrinks_its_segments_capacity_at_once(
    capacity_cluster: Cluster,
) -> None:
    capacity_cluster.driver.maximum_volume_size = 4 * GiB
    capacity_cluster.claim(storage="2Gi", storage_class="late")
    capacity_cluster.pod()

    await capacity_cluster.settle()

    assert capacity_cluster.get("Pod", "app").spec["nodeName"] == "node-1"
    assert by_zone(capacity_cluster) == {
        ("late", "zone-a"): {"capacity": "8Gi", "maximumVolumeSize": "4Gi"},
        ("late", "zone-b"): {"capacity": "3Gi", "maximumVolumeSize": "3Gi"}}


async def test_capacity_is_polled_again_once_the_period_has_passed(
    capacity_cluster: Cluster,
) -> None:
    await capacity_cluster.settle()
    capacity_cluster.driver.segment_capacity["zone-b"] = 5 * GiB

    capacity_cluster.clock.advance(30)
    await capacity_cluster.settle()
    assert by_zone(capacity_cluster)[("late", "zone-b")]["capacity"] == "3Gi"

    capacity_cluster.clock.advance(30)
    await capacity_cluster.settle()
    assert by_zone(capacity_cluster)[("late", "zone-b")]["capacity"] == "5Gi"


async def test_objects_go_with_their_class_or_segment_and_come_back_when_deleted(
    capacity_cluster: Cluster,
) -> None:
    await capacity_cluster.settle()
    zone_a = next(c for c in capacities(capacity_cluster)
                  if c.body["nodeTopology"]["matchLabels"][TOPOLOGY_KEY] == "zone-a")

    capacity_cluster.api.delete("CSIStorageCapacity", zone_a.name, "kube-system")
    await capacity_cluster.settle()
    assert sorted(by_zone(capacity_cluster)) == [("late", "zone-a"), ("late", "zone-b")]

    capacity_cluster.api.delete("CSINode", "node-2")
    await capacity_cluster.settle()
    assert sorted(by_zone(capacity_cluster)) == [("late", "zone-a")]

    capacity_cluster.api.delete("StorageClass", "late")
    await capacity_cluster.settle()
    assert capacities(capacity_cluster) == []


async def test_objects_carry_the_owner_the_provisioner_was_given(
    capacity_cluster: Cluster,
) -> None:
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "csi-provisioner",
             "uid": "0d5b8a3c-6c52-4bd5-9b8e-1f1f4a6f0d11", "controller": True}
    client = FakeCsiClient(capacity_cluster.driver, trace=capacity_cluster.trace,
                           node="controller")
    controller = StorageCapacityController(capacity_cluster.api, client, DRIVER,
                                           namespace="default", owner=owner,
                                           clock=capacity_cluster.clock)

    await controller.sync_once()

    published = capacity_cluster.api.list("CSIStorageCapacity", "default").items
    assert len(published) == 2
    assert all(c.metadata.owner_references == [owner] for c in published)
