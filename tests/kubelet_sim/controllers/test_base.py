"""The controller base: settle, per-object backoff, and the watch-driven run loop."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable

import grpc
import pytest

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers import Controller, ControllerManager, NotSettled
from kubelet_sim.controllers.base import FULL_PASS_SECONDS
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


class Counting(Controller):
    """Counts which claims each pass looked at; keys are the claims' names."""

    name = "counting"
    kinds = ("PersistentVolumeClaim", "StorageClass")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.full_passes = 0
        self.seen: list[str] = []

    async def reconcile(self) -> bool:
        self.full_passes += 1
        self.seen += [pvc.name for pvc in self.cache.list("PersistentVolumeClaim")]
        return False

    def keys_for(self, obj: Resource) -> list[str] | None:
        return [obj.name] if obj.kind == "PersistentVolumeClaim" else None

    async def reconcile_keys(self, keys: set[str]) -> bool:
        self.seen += sorted(keys)
        return False


async def test_a_work_queue_pass_looks_only_at_the_objects_that_changed(
    cluster: Cluster,
) -> None:
    for i in range(50):
        cluster.claim(f"c{i}")
    controller = Counting(cluster.api, clock=cluster.clock)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await until(lambda: controller.full_passes == 1)  # the first pass sees everything
        assert len(controller.seen) == 50
        controller.seen.clear()

        for _ in range(3):  # three changes of one claim: its key is queued once or more
            cluster.api.patch("PersistentVolumeClaim", "c7", {"metadata": {"labels": {
                "touched": str(len(controller.seen))}}}, "default")
        await until(lambda: "c7" in controller.seen)
        await asyncio.sleep(0.05)
        assert set(controller.seen) == {"c7"}
        assert controller.full_passes == 1

        cluster.storage_class("other")  # no key for a class: a pass over everything
        await until(lambda: controller.full_passes == 2)
        assert len(controller.seen) >= 50
    finally:
        stop.set()
        await task


async def test_targeted_passes_are_followed_by_a_full_pass_within_the_bound(
    cluster: Cluster,
) -> None:
    """A dependency a mapping misses is looked at by the full pass that follows targeted
    passes within FULL_PASS_SECONDS (on the controller's clock)."""
    cluster.claim("a")
    controller = Counting(cluster.api, clock=cluster.clock)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        await until(lambda: controller.full_passes == 1)
        cluster.claim("b")
        await until(lambda: "b" in controller.seen)
        assert controller.full_passes == 1

        start = cluster.clock.monotonic()

        def full_pass_came() -> bool:
            if controller.full_passes == 2:
                return True
            cluster.clock.advance(0.05)
            return False

        await until(full_pass_came)
        assert cluster.clock.monotonic() - start <= FULL_PASS_SECONDS + 0.05
    finally:
        stop.set()
        await task


async def test_storage_controllers_look_only_at_what_a_change_concerns(
    cluster: Cluster,
) -> None:
    """With 30 claims bound, a new claim's provisioning and binding costs the binder and
    the protection controller a few steps each, not a pass over all 61 objects."""
    cluster.storage_class()
    for i in range(30):
        cluster.claim(f"c{i}")
    await cluster.settle()
    steps: Counter[str] = Counter()
    for name in ("persistentvolume-binder", "storage-protection", "external-provisioner"):
        controller = cluster.manager.get(name)

        async def counted(key: str, action: Callable[..., Awaitable[bool]], *args: object,
                          _step: Callable[..., Awaitable[bool]] = controller.step,
                          _name: str = name) -> bool:
            steps[_name] += 1
            return await _step(key, action, *args)

        controller.step = counted  # type: ignore[method-assign]
    cluster.manager.start()
    try:
        # the first passes look at everything (30 claims and 30 volumes each)
        await until(lambda: steps["persistentvolume-binder"] >= 60
                    and steps["storage-protection"] >= 60)
        await asyncio.sleep(0.05)
        steps.clear()

        cluster.claim("new")
        await until(lambda: claim_phase(cluster, "new") == "Bound")
        await asyncio.sleep(0.05)
    finally:
        await cluster.manager.stop()

    assert cluster.driver.calls.count("CreateVolume") == 31
    assert 0 < steps["persistentvolume-binder"] < 20, steps
    assert 0 < steps["storage-protection"] < 20, steps
    assert 0 < steps["external-provisioner"] < 20, steps


async def test_a_claims_whole_life_runs_on_work_queue_passes_alone(cluster: Cluster) -> None:
    """The fake clock never moves, so after each controller's first pass no catch-up full
    pass can run: provisioning, binding, attach, detach, release and deletion all happen
    because each change queued the keys it concerns (a pod's claims, a volume's claim
    and attachments, an attachment's volume)."""
    cluster.storage_class()
    started = cluster.clock.monotonic()
    cluster.manager.start()
    try:
        cluster.claim()
        await until(lambda: claim_phase(cluster) == "Bound")
        pv_name = str(cluster.get("PersistentVolumeClaim", "data").spec["volumeName"])

        cluster.pod()
        await until(lambda: any(va.status.get("attached") is True
                                for va in cluster.api.list("VolumeAttachment").items))
        node = str(cluster.get("Pod", "app").spec["nodeName"])
        await until(lambda: bool(cluster.get("Node", node).status.get("volumesAttached")))

        # deleted under a pod that uses it: the claim waits, Terminating
        cluster.api.delete("PersistentVolumeClaim", "data", "default")
        await asyncio.sleep(0.3)
        assert cluster.get("PersistentVolumeClaim", "data").is_terminating
        assert cluster.names("PersistentVolume") == [pv_name]

        # the pod's change queues its claim: no container runs, so it has terminated
        cluster.api.delete("Pod", "app", "default")
        await until(lambda: not cluster.names("VolumeAttachment"))
        await until(lambda: not cluster.names("PersistentVolume"))
        assert "data" not in cluster.names("PersistentVolumeClaim")
        assert not cluster.get("Node", node).status.get("volumesAttached")
    finally:
        await cluster.manager.stop()

    assert cluster.clock.monotonic() == started  # so no full pass came from a timer
    assert [c for c in cluster.calls() if not c.endswith("Capabilities")] == [
        "Controller/CreateVolume", "Controller/ControllerPublishVolume",
        "Controller/ControllerUnpublishVolume", "Controller/DeleteVolume"]
