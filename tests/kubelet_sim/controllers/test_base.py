"""The controller base: settle, per-object backoff, and the watch-driven run loop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import grpc
import pytest

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers import Controller, ControllerManager, NotSettled
from tests.kubelet_sim.controller_cluster import Cluster

GUARD_SECONDS = 10.0  # only a guard against hangs, never asserted on


class AlwaysBusy(Controller):
    name = "always-busy"

    async def reconcile(self) -> bool:
        return True


async def until(predicate: Callable[[], bool]) -> None:
    async def poll() -> None:
        while not predicate():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(poll(), GUARD_SECONDS)


def claim_phase(cluster: Cluster, name: str = "data") -> str:
    claim: Resource = cluster.get("PersistentVolumeClaim", name)
    return str(claim.status.get("phase"))


async def test_settle_returns_once_a_round_changes_nothing(cluster: Cluster) -> None:
    cluster.storage_class()
    cluster.claim()

    busy_rounds = await cluster.manager.settle()

    assert busy_rounds >= 1
    assert await cluster.manager.settle() == 0


async def test_settle_gives_up_on_controllers_that_never_settle(cluster: Cluster) -> None:
    manager = ControllerManager([AlwaysBusy(cluster.api)])

    with pytest.raises(NotSettled):
        await manager.settle(max_rounds=3)


async def test_one_failing_object_backs_off_without_stopping_the_others(
    cluster: Cluster,
) -> None:
    cluster.storage_class("bad", parameters={"csi.storage.k8s.io/nope": "x"})
    cluster.storage_class()
    cluster.claim("broken", storage_class="bad")
    cluster.claim("fine")

    await cluster.settle()

    provisioner = cluster.manager.get("external-provisioner")
    assert claim_phase(cluster, "fine") == "Bound"
    assert list(provisioner.errors) == ["pvc/default/broken"]
    def failures() -> int:
        (event,) = cluster.recorder.for_object("PersistentVolumeClaim", "broken", "default")
        assert event.reason == "ProvisioningFailed"
        return event.count

    assert failures() == 1
    await cluster.settle()  # still backing off: no new attempt
    assert failures() == 1
    await cluster.retry_after_backoff(1.0)  # the first backoff is 500 ms
    assert failures() == 2


async def test_run_loops_react_to_watch_events_and_retry_after_backoff(
    cluster: Cluster,
) -> None:
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.UNAVAILABLE, "restarting")
    cluster.manager.start()
    try:
        cluster.storage_class()
        cluster.claim()
        await until(lambda: "CreateVolume" in cluster.driver.calls)
        assert claim_phase(cluster) == "Pending"

        cluster.clock.advance(1.0)
        await until(lambda: claim_phase(cluster) == "Bound")

        cluster.pod()
        await until(lambda: any(va.status.get("attached") is True
                                for va in cluster.api.list("VolumeAttachment").items))
    finally:
        await cluster.manager.stop()

    assert cluster.driver.calls.count("CreateVolume") == 2
    assert cluster.get("Pod", "app").spec.get("nodeName")
