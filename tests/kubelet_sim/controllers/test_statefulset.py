"""The StatefulSet controller on a fake clock with a stand-in kubelet: ordered creation
that waits for Ready, claims per ordinal kept or owned as the retention policy says,
scale down from the highest ordinal, Parallel, start ordinals and moving them, and the
rolling update by ordinal down to the partition (counted from the start ordinal) within
maxUnavailable, with its ControllerRevisions and minReadySeconds."""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.statefulset import StatefulSetController

from .workload_kubelet import cluster, finish_deletes, live_pods, pods, run, settle


def stateful_set(replicas: int = 3, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"replicas": replicas, "serviceName": "db",
                     "selector": {"matchLabels": {"app": "db"}},
                     "template": {"metadata": {"labels": {"app": "db"}},
                                  "spec": {"containers": [{"name": "c", "image": "v1"}]}},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                         "accessModes": ["ReadWriteOnce"],
                         "resources": {"requests": {"storage": "1Gi"}}}}],
                     **spec}}


def names(api: APIServer) -> list[str]:
    return [p.name for p in live_pods(api)]


def claims(api: APIServer) -> dict[str, list[str]]:
    """Claim name -> the kinds of its owners."""
    return {c.name: [r["kind"] for r in c.metadata.owner_references or []]
            for c in api.list("PersistentVolumeClaim", "default").items}


async def test_ordered_ready_creates_one_pod_at_a_time_with_its_claim() -> None:
    api, clock = cluster()
    api.create(stateful_set())
    ctl = StatefulSetController(api, clock=clock)
    await settle(ctl)
    assert names(api) == ["db-0"]
    assert claims(api) == {"data-db-0": []}  # Retain/Retain: no owner
    pod = api.get("Pod", "db-0", "default")
    assert pod.spec["hostname"] == "db-0" and pod.spec["subdomain"] == "db"
    assert [(v["name"], v["persistentVolumeClaim"]["claimName"])
            for v in pod.spec["volumes"]] == [("data", "data-db-0")]
    assert pod.metadata.labels["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert pod.metadata.labels["apps.kubernetes.io/pod-index"] == "0"
    run(api, clock, ready=False)
    await settle(ctl)
    assert names(api) == ["db-0"]  # waits for Ready
    for expected in (["db-0", "db-1"], ["db-0", "db-1", "db-2"]):
        run(api, clock)
        await settle(ctl)
        assert names(api) == expected
    run(api, clock)
    await settle(ctl)
    status = api.get("StatefulSet", "db", "default").status
    assert status["readyReplicas"] == 3 and status["currentRevision"] == status["updateRevision"]
    [revision] = api.list("ControllerRevision", "default").items
    assert revision.name == status["updateRevision"] and revision.body["revision"] == 1
    assert revision.body["data"]["spec"]["template"]["$patch"] == "replace"


async def test_scale_down_removes_the_highest_ordinal_first_and_keeps_the_claims() -> None:
    api, clock = cluster()
    api.create(stateful_set())
    ctl = StatefulSetController(api, clock=clock)
    for _ in range(4):
        await settle(ctl)
        run(api, clock)
    sts = api.get("StatefulSet", "db", "default")
    sts.spec["replicas"] = 1
    api.update(sts)
    await settle(ctl)
    assert [p.name for p in pods(api) if p.metadata.deletion_timestamp] == ["db-2"]
    finish_deletes(api)
    await settle(ctl)
    assert names(api) == ["db-0"]
    finish_deletes(api)
    assert sorted(claims(api)) == ["data-db-0", "data-db-1", "data-db-2"]
    sts = api.get("StatefulSet", "db", "default")
    sts.spec["replicas"] = 3
    api.update(sts)
    for _ in range(3):
        await settle(ctl)
        run(api, clock)
    assert names(api) == ["db-0", "db-1", "db-2"]
    volume = api.get("Pod", "db-2", "default").spec["volumes"][0]
    assert volume["persistentVolumeClaim"]["claimName"] == "data-db-2"
    assert sorted(claims(api)) == ["data-db-0", "data-db-1", "data-db-2"]


async def test_retention_policy_delete_gives_claims_owners() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=2, persistentVolumeClaimRetentionPolicy={
        "whenDeleted": "Delete", "whenScaled": "Delete"}))
    ctl = StatefulSetController(api, clock=clock)
    for _ in range(3):
        await settle(ctl)
        run(api, clock)
    assert claims(api) == {"data-db-0": ["StatefulSet"], "data-db-1": ["StatefulSet"]}
    sts = api.get("StatefulSet", "db", "default")
    sts.spec["replicas"] = 1
    api.update(sts)
    await settle(ctl)
    assert claims(api)["data-db-1"] == ["Pod"]  # goes with its pod
    owner = api.get("PersistentVolumeClaim", "data-db-1", "default").metadata.owner_references
    assert owner[0]["name"] == "db-1"


async def test_parallel_creates_every_pod_at_once() -> None:
    api, clock = cluster()
    api.create(stateful_set(podManagementPolicy="Parallel"))
    await settle(StatefulSetController(api, clock=clock))
    assert names(api) == ["db-0", "db-1", "db-2"]


async def test_rolling_update_goes_from_the_highest_ordinal_down_to_the_partition() -> None:
    api, clock = cluster()
    api.create(stateful_set(updateStrategy={"type": "RollingUpdate",
                                            "rollingUpdate": {"partition": 1}}))
    ctl = StatefulSetController(api, clock=clock)
    for _ in range(4):
        await settle(ctl)
        run(api, clock)
    sts = api.get("StatefulSet", "db", "default")
    first = sts.status["updateRevision"]
    sts.spec["template"]["spec"]["containers"][0]["image"] = "v2"
    api.update(sts)
    await settle(ctl)
    assert [p.name for p in pods(api) if p.metadata.deletion_timestamp] == ["db-2"]
    deleted: list[str] = []
    for _ in range(6):
        deleted += [p.name for p in pods(api) if p.metadata.deletion_timestamp]
        run(api, clock)
        await settle(ctl)
    assert deleted == ["db-2", "db-1"]  # one at a time, never below the partition
    images = {p.name: p.spec["containers"][0]["image"] for p in live_pods(api)}
    assert images == {"db-0": "v1", "db-1": "v2", "db-2": "v2"}
    status = api.get("StatefulSet", "db", "default").status
    assert status["currentRevision"] == first != status["updateRevision"]
    assert (status["currentReplicas"], status["updatedReplicas"]) == (1, 2)
    assert sorted(r.body["revision"] for r in api.list("ControllerRevision", "default").items) \
        == [1, 2]


def set_image(api: APIServer, image: str) -> None:
    sts = api.get("StatefulSet", "db", "default")
    sts.spec["template"]["spec"]["containers"][0]["image"] = image
    api.update(sts)


def terminating(api: APIServer) -> list[str]:
    return [p.name for p in pods(api) if p.metadata.deletion_timestamp]


async def ready_set(api: APIServer, clock: Any, ctl: StatefulSetController,
                    rounds: int = 6) -> None:
    for _ in range(rounds):
        await settle(ctl)
        run(api, clock)


async def test_max_unavailable_deletes_that_many_old_pods_at_once_from_the_top() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=5, podManagementPolicy="Parallel", updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "40%"}}))
    ctl = StatefulSetController(api, clock=clock)
    await ready_set(api, clock, ctl)
    set_image(api, "v2")
    await settle(ctl)
    # 40% of 5 is 2: the two highest ordinals go together
    assert terminating(api) == ["db-3", "db-4"]
    finish_deletes(api)
    await settle(ctl)
    run(api, clock, ready=False, only=["db-3", "db-4"])
    await settle(ctl)
    assert terminating(api) == []  # two new pods not Ready: the budget is spent
    run(api, clock, only=["db-4"])
    await settle(ctl)
    assert terminating(api) == ["db-2"]  # one of two Ready again: one more goes
    await ready_set(api, clock, ctl, rounds=8)
    images = {p.name: p.spec["containers"][0]["image"] for p in live_pods(api)}
    assert images == {f"db-{i}": "v2" for i in range(5)}
    status = api.get("StatefulSet", "db", "default").status
    assert status["currentRevision"] == status["updateRevision"]
    assert status["updatedReplicas"] == 5


async def test_an_unavailable_pod_below_the_partition_uses_up_the_budget() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=3, updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": 1}}))
    ctl = StatefulSetController(api, clock=clock)
    await ready_set(api, clock, ctl)
    # db-0 (kept by the partition) stops being Ready
    run(api, clock, ready=False, only=["db-0"])
    set_image(api, "v2")
    await settle(ctl)
    assert terminating(api) == []
    run(api, clock, only=["db-0"])
    await ready_set(api, clock, ctl)
    images = {p.name: p.spec["containers"][0]["image"] for p in live_pods(api)}
    assert images == {"db-0": "v1", "db-1": "v2", "db-2": "v2"}


async def test_partition_counts_from_the_start_ordinal() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=3, ordinals={"start": 5}, updateStrategy={
        "type": "RollingUpdate", "rollingUpdate": {"partition": 2}}))
    ctl = StatefulSetController(api, clock=clock)
    await ready_set(api, clock, ctl)
    assert names(api) == ["db-5", "db-6", "db-7"]
    set_image(api, "v2")
    await ready_set(api, clock, ctl)
    images = {p.name: p.spec["containers"][0]["image"] for p in live_pods(api)}
    assert images == {"db-5": "v1", "db-6": "v1", "db-7": "v2"}


async def test_ordered_ready_waits_for_min_ready_seconds_before_the_next_ordinal() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=2, minReadySeconds=10))
    ctl = StatefulSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    await settle(ctl)
    assert names(api) == ["db-0"]
    status = api.get("StatefulSet", "db", "default").status
    assert (status["readyReplicas"], status["availableReplicas"]) == (1, 0)
    clock.advance(10)
    await settle(ctl)
    assert names(api) == ["db-0", "db-1"]
    assert api.get("StatefulSet", "db", "default").status["availableReplicas"] == 1


async def test_moving_the_start_ordinal_makes_the_new_range_then_removes_the_old() -> None:
    api, clock = cluster()
    api.create(stateful_set(replicas=3))
    ctl = StatefulSetController(api, clock=clock)
    await ready_set(api, clock, ctl)
    sts = api.get("StatefulSet", "db", "default")
    sts.spec["ordinals"] = {"start": 2}
    api.update(sts)
    seen: list[list[str]] = []
    for _ in range(8):
        await settle(ctl)
        run(api, clock)
        if not seen or seen[-1] != names(api):
            seen.append(names(api))
    # OrderedReady: db-3 then db-4 are made first, then db-1 and db-0 go, highest first
    assert seen == [["db-0", "db-1", "db-2", "db-3"], ["db-0", "db-1", "db-2", "db-3", "db-4"],
                    ["db-0", "db-2", "db-3", "db-4"], ["db-2", "db-3", "db-4"]]
    assert set(claims(api)) == {f"data-db-{i}" for i in range(5)}  # Retain keeps them
