"""The Deployment and ReplicaSet controllers on a fake clock, with a stand-in kubelet:
pods per ReplicaSet, adoption and release, a rolling update that keeps within maxSurge and
maxUnavailable, Recreate, revisions and rollback, the conditions kubectl rollout status
reads, and the progress deadline."""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.deployment import (
    REVISION,
    DeploymentController,
    resolve,
    surge_and_unavailable,
)
from kubelet_sim.controllers.deployment_scale import proportional_sizes
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.controllers.workload_pods import safe_encode, template_hash

from .workload_kubelet import cluster, finish_deletes, live_pods, pods, run, settle


def deployment(name: str = "web", replicas: int = 3, image: str = "nginx",
               strategy: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     **({"strategy": strategy} if strategy else {}),
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def sets(api: APIServer) -> list[Resource]:
    return sorted(api.list("ReplicaSet", "default").items,
                  key=lambda r: int(r.metadata.annotations.get(REVISION, "0")))


def set_image(api: APIServer, image: str, name: str = "web") -> None:
    d = api.get("Deployment", name, "default")
    d.spec["template"]["spec"]["containers"][0]["image"] = image
    api.update(d)


def controllers(api: APIServer, clock: Any) -> tuple[DeploymentController, ReplicaSetController]:
    return (DeploymentController(api, clock=clock), ReplicaSetController(api, clock=clock))


def test_percentages_round_surge_up_and_unavailable_down() -> None:
    assert resolve("25%", 5, round_up=True) == 2
    assert resolve("25%", 5, round_up=False) == 1
    d = Resource.from_dict(deployment(replicas=1))
    d.spec["strategy"] = {"type": "RollingUpdate",
                          "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert surge_and_unavailable(d) == (1, 0)


def test_template_hash_is_stable_in_the_safe_alphabet_and_moves_with_collisions() -> None:
    template = deployment()["spec"]["template"]
    assert template_hash(template) == template_hash(copy.deepcopy(template))
    assert template_hash(template) != template_hash(template, 1)
    assert set(template_hash(template)) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert safe_encode("0123") == "4567"  # (48 % 27 = 21: the "4")


async def test_a_deployment_gets_a_replica_set_per_template_and_its_pods() -> None:
    api, clock = cluster()
    api.create(deployment())
    await settle(*controllers(api, clock))
    [rs] = sets(api)
    pod_hash = rs.metadata.labels["pod-template-hash"]
    assert rs.name == f"web-{pod_hash}"
    assert rs.spec["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": pod_hash}
    assert rs.metadata.annotations[REVISION] == "1"
    assert rs.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "4"
    assert [p.metadata.owner_references[0]["name"] for p in pods(api)] == [rs.name] * 3
    assert all(p.name.startswith(f"{rs.name}-") and len(p.name) == len(rs.name) + 6
               for p in pods(api))
    d = api.get("Deployment", "web", "default")
    conditions = {c["type"]: (c["status"], c["reason"]) for c in d.status["conditions"]}
    assert conditions["Available"] == ("False", "MinimumReplicasUnavailable")
    assert conditions["Progressing"][0] == "True"
    run(api, clock)
    await settle(*controllers(api, clock))
    d = api.get("Deployment", "web", "default")
    assert {k: d.status[k] for k in ("replicas", "updatedReplicas", "readyReplicas",
                                     "availableReplicas", "observedGeneration")} == {
        "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
        "observedGeneration": 1}
    assert {c["type"]: (c["status"], c["reason"]) for c in d.status["conditions"]} == {
        "Available": ("True", "MinimumReplicasAvailable"),
        "Progressing": ("True", "NewReplicaSetAvailable")}
    assert d.metadata.annotations[REVISION] == "1"


async def test_rolling_update_stays_within_max_surge_and_max_unavailable() -> None:
    api, clock = cluster()
    api.create(deployment(replicas=4, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 1, "maxUnavailable": 0}}))
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    run(api, clock)
    await settle(d_ctl, rs_ctl)
    set_image(api, "nginx:2")
    await settle(d_ctl, rs_ctl)
    old, new = sets(api)
    # one surge pod, nothing old goes while it is not available
    assert (old.spec["replicas"], new.spec["replicas"]) == (4, 1)
    assert new.metadata.annotations[REVISION] == "2"
    for _ in range(10):
        run(api, clock)
        await settle(d_ctl, rs_ctl)
        total = sum(r.spec["replicas"] for r in sets(api))
        assert total <= 5
        assert len(live_pods(api)) <= 5
    old, new = sets(api)
    assert (old.spec["replicas"], new.spec["replicas"]) == (0, 4)
    assert {p.spec["containers"][0]["image"] for p in live_pods(api)} == {"nginx:2"}
    d = api.get("Deployment", "web", "default")
    assert d.status["updatedReplicas"] == 4 and d.status.get("unavailableReplicas") is None


async def test_recreate_removes_the_old_pods_before_the_new_replica_set_grows() -> None:
    api, clock = cluster()
    api.create(deployment(strategy={"type": "Recreate"}))
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    run(api, clock)
    await settle(d_ctl, rs_ctl)
    set_image(api, "nginx:2")
    await settle(d_ctl, rs_ctl)
    [old] = sets(api)  # no new ReplicaSet while old pods run, as rolloutRecreate waits
    assert old.spec["replicas"] == 0
    assert all(p.metadata.deletion_timestamp for p in pods(api))  # terminating still
    finish_deletes(api)
    await settle(d_ctl, rs_ctl)
    old, new = sets(api)
    assert new.spec["replicas"] == 3
    assert new.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "3"
    assert {p.spec["containers"][0]["image"] for p in pods(api)} == {"nginx:2"}


async def test_going_back_to_an_old_template_reuses_its_replica_set_at_the_next_revision(
        ) -> None:
    api, clock = cluster()
    api.create(deployment(replicas=1))
    d_ctl, rs_ctl = controllers(api, clock)
    for image in ("nginx:2", "nginx"):
        await settle(d_ctl, rs_ctl)
        run(api, clock)
        await settle(d_ctl, rs_ctl)
        set_image(api, image)
    for _ in range(4):
        await settle(d_ctl, rs_ctl)
        run(api, clock)
    by_image = {r.spec["template"]["spec"]["containers"][0]["image"]: r
                for r in api.list("ReplicaSet", "default").items}
    assert len(by_image) == 2
    first, second = by_image["nginx"], by_image["nginx:2"]
    assert first.metadata.annotations[REVISION] == "3"
    assert first.metadata.annotations["deployment.kubernetes.io/revision-history"] == "1"
    assert (first.spec["replicas"], second.spec["replicas"]) == (1, 0)
    assert api.get("Deployment", "web", "default").metadata.annotations[REVISION] == "3"


async def test_old_replica_sets_beyond_the_history_limit_are_deleted() -> None:
    api, clock = cluster()
    manifest = deployment(replicas=1)
    manifest["spec"]["revisionHistoryLimit"] = 1
    api.create(manifest)
    d_ctl, rs_ctl = controllers(api, clock)
    for image in ("v2", "v3", "v4"):
        for _ in range(3):
            await settle(d_ctl, rs_ctl)
            run(api, clock)
        set_image(api, image)
    for _ in range(3):
        await settle(d_ctl, rs_ctl)
        run(api, clock)
    revisions = sorted(int(r.metadata.annotations[REVISION]) for r in sets(api))
    assert revisions == [3, 4]


async def test_progress_deadline_exceeded_after_progress_deadline_seconds() -> None:
    api, clock = cluster()
    manifest = deployment(replicas=1)
    manifest["spec"]["progressDeadlineSeconds"] = 30
    api.create(manifest)
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    run(api, clock, ready=False)
    await settle(d_ctl, rs_ctl)
    clock.advance(29)
    await settle(d_ctl, rs_ctl)
    progressing = next(c for c in api.get("Deployment", "web", "default").status["conditions"]
                   if c["type"] == "Progressing")
    assert progressing["status"] == "True"
    clock.advance(2)
    await settle(d_ctl, rs_ctl)
    progressing = next(c for c in api.get("Deployment", "web", "default").status["conditions"]
                   if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False",
                                                              "ProgressDeadlineExceeded")
    assert progressing["message"].endswith("has timed out progressing.")


async def test_replica_set_adopts_orphans_releases_strays_and_deletes_unready_first() -> None:
    api, clock = cluster()
    api.create(builders.pod("orphan", labels={"app": "x"}))
    api.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "x", "namespace": "default"},
                "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}},
                         "template": {"metadata": {"labels": {"app": "x"}}, "spec": {
                             "containers": [{"name": "c", "image": "i"}]}}}})
    rs_ctl = ReplicaSetController(api, clock=clock)
    await settle(rs_ctl)
    assert len(pods(api)) == 2  # the orphan counted: one created
    orphan = api.get("Pod", "orphan", "default")
    assert orphan.metadata.owner_references[0]["controller"] is True
    made = next(p for p in pods(api) if p.name != "orphan")
    run(api, clock, only=[made.name])
    rs = api.get("ReplicaSet", "x", "default")
    rs.spec["replicas"] = 1
    api.update(rs)
    await settle(rs_ctl)
    finish_deletes(api)
    assert [p.name for p in pods(api)] == [made.name]  # the not-ready orphan went first
    stray = api.get("Pod", made.name, "default")
    stray.metadata.labels = {"app": "other"}
    api.update(stray)
    await settle(rs_ctl)
    assert not api.get("Pod", made.name, "default").metadata.owner_references
    status = api.get("ReplicaSet", "x", "default").status
    assert status["replicas"] == 1 and status["observedGeneration"] == 2


async def test_available_replicas_wait_for_min_ready_seconds() -> None:
    api, clock = cluster()
    manifest = deployment(replicas=1)
    manifest["spec"]["minReadySeconds"] = 10
    api.create(manifest)
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    run(api, clock)
    await settle(d_ctl, rs_ctl)
    [rs] = sets(api)
    assert rs.status["readyReplicas"] == 1 and "availableReplicas" not in rs.status
    clock.advance(10)
    await settle(d_ctl, rs_ctl)
    assert api.get("ReplicaSet", rs.name, "default").status["availableReplicas"] == 1


async def test_a_paused_deployment_does_not_roll_until_resumed() -> None:
    api, clock = cluster()
    api.create(deployment(replicas=1))
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    run(api, clock)
    d = api.get("Deployment", "web", "default")
    d.spec["paused"] = True
    d.spec["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    api.update(d)
    await settle(d_ctl, rs_ctl)
    assert len(sets(api)) == 1
    progressing = next(c for c in api.get("Deployment", "web", "default").status["conditions"]
                       if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")
    d = api.get("Deployment", "web", "default")
    d.spec["paused"] = False
    api.update(d)
    await settle(d_ctl, rs_ctl)
    assert len(sets(api)) == 2


async def test_work_queue_keys_follow_controller_references() -> None:
    api, clock = cluster()
    api.create(deployment(replicas=1))
    d_ctl, rs_ctl = controllers(api, clock)
    await settle(d_ctl, rs_ctl)
    [rs] = sets(api)
    [pod] = pods(api)
    assert d_ctl.keys_for(api.get("Deployment", "web", "default")) == ["deploy/default/web"]
    assert d_ctl.keys_for(rs) == ["deploy/default/web"]
    assert d_ctl.keys_for(pod) == ["deploy/default/web"]  # through its ReplicaSet
    assert rs_ctl.keys_for(pod) == [f"rs/default/{rs.name}"]
    orphan = builders.pod("bare")
    assert rs_ctl.keys_for(orphan) is None  # any ReplicaSet might adopt it: full pass
    assert d_ctl.keys_for(orphan) == []  # a Deployment adopts ReplicaSets only
    assert await rs_ctl.reconcile_keys({f"rs/default/{rs.name}", "rs/default/gone"}) is False


def scale(api: APIServer, replicas: int, name: str = "web") -> None:
    d = api.get("Deployment", name, "default")
    d.spec["replicas"] = replicas
    api.update(d)


async def stuck_rollout(api: APIServer, clock: Any) -> tuple[DeploymentController,
                                                               ReplicaSetController]:
    """10 replicas (maxSurge 3, maxUnavailable 2) rolled to an image that never gets Ready:
    the rollout stops at 8 old and 5 new pods, as in the Deployment documentation."""
    api.create(deployment(replicas=10, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 3, "maxUnavailable": 2}}))
    ctls = controllers(api, clock)
    await settle(*ctls)
    run(api, clock)
    await settle(*ctls)
    set_image(api, "nginx:bad")
    for _ in range(4):
        await settle(*ctls)
        run(api, clock, ready=False,
            only=[p.name for p in pods(api) if p.spec["containers"][0]["image"] == "nginx:bad"])
    assert [r.spec["replicas"] for r in sets(api)] == [8, 5]
    return ctls


async def test_scaling_up_during_a_rollout_spreads_the_new_replicas_by_proportion() -> None:
    api, clock = cluster()
    ctls = await stuck_rollout(api, clock)
    scale(api, 15)
    await settle(*ctls)
    old, new = sets(api)
    # 5 more: round(8 * 18/13) = 11 and round(5 * 18/13) = 7
    assert (old.spec["replicas"], new.spec["replicas"]) == (11, 7)
    for rs in (old, new):
        assert rs.metadata.annotations["deployment.kubernetes.io/desired-replicas"] == "15"
        assert rs.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "18"
    assert len(live_pods(api)) == 18


async def test_scaling_down_during_a_rollout_takes_replicas_from_each_by_proportion() -> None:
    api, clock = cluster()
    ctls = await stuck_rollout(api, clock)
    scale(api, 5)
    await ctls[0].sync_once()  # the scaling event alone
    old, new = sets(api)
    # 5 + maxSurge 3 = 8 of 13: round(8 * 8/13) = 5 and round(5 * 8/13) = 3
    assert (old.spec["replicas"], new.spec["replicas"]) == (5, 3)
    assert old.metadata.annotations["deployment.kubernetes.io/max-replicas"] == "8"
    await settle(*ctls)
    # then the rollout goes on within 5 + 3 pods, 5 - 2 of them available
    assert [r.spec["replicas"] for r in sets(api)] == [3, 5]


def test_leftovers_of_rounding_go_to_the_largest_and_newest_replica_set() -> None:
    def rs(name: str, replicas: int, created: str) -> Resource:
        return Resource.from_dict({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": created,
                         "annotations": {"deployment.kubernetes.io/max-replicas": "4"}},
            "spec": {"replicas": replicas}})
    older, newer = rs("a", 2, "2026-01-01T00:00:00Z"), rs("b", 2, "2026-01-02T00:00:00Z")
    # 4 → 5 of max: each share round(2 * 5/4) - 2 = 1 (2.5 rounds away from zero), but only
    # one may be given: the newer of the equal ones takes it
    up = {r.name: n for r, n in proportional_sizes([older, newer], 4, 1, 4)}
    assert up == {"b": 3, "a": 2}
    # down to 3 of max: round(2 * 3/4) = round(1.5) = 2, no share; the leftover -1 goes to
    # the first of equal ones when scaling down: the older
    down = {r.name: n for r, n in proportional_sizes([older, newer], 2, 1, 4)}
    assert down == {"a": 1, "b": 2}
    # to 0: every ReplicaSet its whole size
    assert {r.name: n for r, n in proportional_sizes([older, newer], 0, 0, 4)} == {
        "a": 0, "b": 0}


async def test_a_paused_rollout_scales_its_replica_sets_in_proportion_and_resumes() -> None:
    api, clock = cluster()
    ctls = await stuck_rollout(api, clock)
    d = api.get("Deployment", "web", "default")
    d.spec["paused"] = True
    d.spec["replicas"] = 15
    api.update(d)
    await settle(*ctls)
    assert [r.spec["replicas"] for r in sets(api)] == [11, 7]
    d = api.get("Deployment", "web", "default")
    d.spec["paused"] = False
    api.update(d)
    for _ in range(6):
        await settle(*ctls)
        run(api, clock)
    assert [r.spec["replicas"] for r in sets(api)] == [0, 15]
    status = api.get("Deployment", "web", "default").status
    assert (status["updatedReplicas"], status["availableReplicas"]) == (15, 15)


async def test_history_cleanup_counts_every_old_replica_set_but_deletes_only_empty_ones(
) -> None:
    api, clock = cluster()
    manifest = deployment(replicas=2, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 1, "maxUnavailable": 0}})
    manifest["spec"]["revisionHistoryLimit"] = 1
    api.create(manifest)
    ctls = controllers(api, clock)
    for image in ("v2", "v3"):
        for _ in range(4):
            await settle(*ctls)
            run(api, clock)
        set_image(api, image)
    await settle(*ctls)
    # v1 empty, v2 still running (v3 waits for its pods): one old beyond the limit of 1
    revisions = {int(r.metadata.annotations[REVISION]): r.spec["replicas"] for r in sets(api)}
    assert revisions[2] > 0
    for _ in range(4):
        run(api, clock)
        await settle(*ctls)
    assert sorted(int(r.metadata.annotations[REVISION]) for r in sets(api)) == [2, 3]


async def test_a_recreate_deployment_is_available_only_with_all_its_replicas() -> None:
    api, clock = cluster()
    api.create(deployment(strategy={"type": "Recreate"}))
    ctls = controllers(api, clock)
    await settle(*ctls)
    run(api, clock, only=[p.name for p in pods(api)][:2])
    await settle(*ctls)
    available = next(c for c in api.get("Deployment", "web", "default").status["conditions"]
                     if c["type"] == "Available")
    assert available["status"] == "False"  # MaxUnavailable is 0 for Recreate
