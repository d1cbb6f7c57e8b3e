"""VolumeAttributesClass through the real driver process: CreateVolume carries a claim's
class parameters as mutable_parameters, and moving the claim to another class calls
ControllerModifyVolume with that class's parameters (the driver's MODIFY_VOLUME, on by
default)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON
from kubelet_sim.cluster import DRIVER_NAME, Cluster
from tests.fixtures.cluster import running_cluster


@pytest.fixture
async def one_node() -> AsyncIterator[Cluster]:
    async with running_cluster(1) as c:
        yield c


def requests(cluster: Cluster, start: int, method: str) -> list[JSON]:
    return [e.request for e in cluster.trace.events[start:] if e.call.endswith(f"/{method}")]


async def test_a_claim_is_created_with_its_class_and_modified_to_another(
    one_node: Cluster,
) -> None:
    cluster = one_node
    start = len(cluster.trace.events)
    for name, iops in (("iops-3000", "3000"), ("iops-6000", "6000")):
        cluster.api.create(builders.volume_attributes_class(name, DRIVER_NAME,
                                                            {"iops": iops}))
    cluster.api.create(builders.storage_class("modifiable", DRIVER_NAME))
    cluster.api.create(builders.persistent_volume_claim(
        "data", storage="1Gi", storage_class="modifiable",
        volume_attributes_class="iops-3000"))
    await cluster.settle()

    [create] = requests(cluster, start, "CreateVolume")
    assert create["mutable_parameters"] == {"iops": "3000"}
    pvc = cluster.api.get("PersistentVolumeClaim", "data", "default")
    assert pvc.status["currentVolumeAttributesClassName"] == "iops-3000"

    pvc.spec["volumeAttributesClassName"] = "iops-6000"
    cluster.api.update(pvc)
    await cluster.settle()

    [modify] = requests(cluster, start, "ControllerModifyVolume")
    pv = cluster.api.get("PersistentVolume", pvc.spec["volumeName"])
    assert modify == {"volume_id": pv.spec["csi"]["volumeHandle"],
                      "mutable_parameters": {"iops": "6000"}}
    pvc = cluster.api.get("PersistentVolumeClaim", "data", "default")
    assert pvc.status["currentVolumeAttributesClassName"] == "iops-6000"
    assert "modifyVolumeStatus" not in pvc.status
    assert pv.spec["volumeAttributesClassName"] == "iops-6000"
