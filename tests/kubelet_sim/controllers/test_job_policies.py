"""The Job controller's policies on a fake clock, as kube-controller-manager's job
controller applies them: the pod-failure back-off, the pod failure policy, suspension,
the success policy, the per-index backoff and the pod replacement policy."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.job import JobController
from kubelet_sim.controllers.job_policies import backoff_remaining, match_failure_policy
from kubelet_sim.testing.fake_clock import FakeClock

from .test_job import conditions, job
from .workload_kubelet import cluster, live_pods, pods, run, settle

EXIT_42_FAILS_THE_JOB = {"rules": [
    {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}


def exit_with(api: APIServer, clock: FakeClock, pod: Resource, code: int,
              conditions: tuple[str, ...] = ()) -> None:
    """The kubelet's report of a pod whose container ``c`` exited with ``code``."""
    pod = api.get("Pod", pod.name, pod.namespace)
    if not pod.spec.get("nodeName"):
        pod.spec["nodeName"] = "node-1"
        pod = api.update(pod)
    now = format_time(clock.now())
    pod.status = {
        "phase": "Succeeded" if code == 0 else "Failed",
        "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": now},
                       *({"type": c, "status": "True", "lastTransitionTime": now}
                         for c in conditions)],
        "containerStatuses": [{"name": "c", "ready": False, "restartCount": 0, "state": {
            "terminated": {"exitCode": code, "reason": "Error" if code else "Completed",
                           "finishedAt": now}}}]}
    api.update_status(pod)


def the_job(api: APIServer) -> Resource:
    return api.get("Job", "batch", "default")


def events(api: APIServer) -> list[tuple[str, str]]:
    found = [e.to_dict() for e in api.list("Event", "default").items]
    return [(str(e.get("reason")), str(e.get("message"))) for e in found
            if (e.get("involvedObject") or {}).get("kind") == "Job"]


def by_index(api: APIServer) -> dict[str, list[Resource]]:
    out: dict[str, list[Resource]] = {}
    for pod in pods(api):
        out.setdefault(pod.metadata.annotations["batch.kubernetes.io/job-completion-index"],
                       []).append(pod)
    return out


# -- the pod-failure back-off ----------------------------------------------------------------


def test_the_back_off_is_ten_seconds_doubling_to_ten_minutes() -> None:
    clock = FakeClock()
    now = clock.now()
    assert [backoff_remaining(n, now, now) for n in range(0, 8)] == [
        0, 10, 20, 40, 80, 160, 320, 600]
    assert backoff_remaining(1, now, clock.now()) == 10


async def test_a_failed_pod_is_replaced_after_the_back_off_which_doubles() -> None:
    api, clock = cluster()
    api.create(job(backoffLimit=5))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    [first] = live_pods(api)
    exit_with(api, clock, first, 1)
    await settle(ctl)
    clock.advance(9)
    await settle(ctl)
    assert live_pods(api) == []
    clock.advance(1)
    await settle(ctl)
    [second] = live_pods(api)
    exit_with(api, clock, second, 1)
    clock.advance(19)
    await settle(ctl)
    assert live_pods(api) == []  # two failures in a row: 20 s
    clock.advance(1)
    await settle(ctl)
    assert len(live_pods(api)) == 1
    assert the_job(api).status["failed"] == 2


# -- the pod failure policy --------------------------------------------------------------------


async def test_fail_job_on_an_exit_code_fails_the_job_with_the_rules_message() -> None:
    api, clock = cluster()
    api.create(job(completions=2, parallelism=2, podFailurePolicy=EXIT_42_FAILS_THE_JOB))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    first, second = live_pods(api)
    run(api, clock, only=[second.name])
    exit_with(api, clock, first, 42)
    await settle(ctl)
    message = (f"Container c for pod default/{first.name} failed with exit code 42 matching "
               "FailJob rule at index 0")
    status = the_job(api).status
    # the other pod is deleted, counted failed; the Job fails once it is gone
    assert conditions(api) == [("FailureTarget", "PodFailurePolicy")]
    assert status["conditions"][0]["message"] == message
    assert (status["failed"], status["terminating"]) == (2, 1)
    assert api.get("Pod", second.name, "default").metadata.deletion_timestamp
    run(api, clock)
    await settle(ctl)
    assert conditions(api) == [("FailureTarget", "PodFailurePolicy"),
                               ("Failed", "PodFailurePolicy")]
    assert ("PodFailurePolicy", message) in events(api)
    assert "completionTime" not in the_job(api).status


async def test_ignore_on_a_disruption_target_condition_does_not_count_the_failure() -> None:
    api, clock = cluster()
    api.create(job(backoffLimit=0, podFailurePolicy={"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [0]}}]}))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    [evicted] = live_pods(api)
    exit_with(api, clock, evicted, 137, conditions=("DisruptionTarget",))
    clock.advance(10)
    await settle(ctl)
    assert conditions(api) == [] and "failed" not in the_job(api).status
    [replacement] = live_pods(api)
    exit_with(api, clock, replacement, 1)
    await settle(ctl)
    assert conditions(api)[-1] == ("Failed", "BackoffLimitExceeded")
    assert the_job(api).status["failed"] == 1


def test_on_exit_codes_match_the_named_container_and_not_in_skips_listed_codes() -> None:
    pod = Resource.from_dict({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "p", "namespace": "ns"},
                              "status": {"containerStatuses": [
                                  {"name": "side", "state": {"terminated": {"exitCode": 3}}},
                                  {"name": "main", "state": {"terminated": {"exitCode": 5}}}]}})

    def rule(**req: Any) -> dict[str, Any]:
        return {"rules": [{"action": "FailJob", "onExitCodes": req}]}

    assert match_failure_policy(rule(operator="In", values=[5], containerName="main"),
                                pod).message == ("Container main for pod ns/p failed with exit "
                                                 "code 5 matching FailJob rule at index 0")
    assert match_failure_policy(rule(operator="In", values=[5], containerName="side"),
                                pod).action is None
    assert match_failure_policy(rule(operator="NotIn", values=[3, 5]), pod).action is None
    assert match_failure_policy(rule(operator="NotIn", values=[3]), pod).action == "FailJob"


# -- suspension --------------------------------------------------------------------------------


async def test_suspending_deletes_the_pods_and_resuming_restarts_the_start_time() -> None:
    api, clock = cluster()
    api.create(job(completions=4, parallelism=2, activeDeadlineSeconds=100))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    started = the_job(api).status["startTime"]
    clock.advance(60)
    suspended = the_job(api)
    suspended.spec["suspend"] = True
    api.update(suspended)
    await settle(ctl)
    status = the_job(api).status
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Suspended", "True", "JobSuspended")]
    assert (status.get("active", 0), status["terminating"], status.get("failed", 0)) == (0, 2, 0)
    run(api, clock)  # the kubelet finishes the deletes
    await settle(ctl)
    clock.advance(30)
    await settle(ctl)
    assert live_pods(api) == [] and the_job(api).status["startTime"] == started
    resumed = the_job(api)
    resumed.spec["suspend"] = False
    api.update(resumed)
    await settle(ctl)
    status = the_job(api).status
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("Suspended", "False", "JobResumed")]
    assert status["startTime"] == format_time(clock.now()) != started
    assert len(live_pods(api)) == 2
    assert [r for r, _ in events(api) if r in ("Suspended", "Resumed")] == ["Suspended",
                                                                            "Resumed"]
    clock.advance(60)  # 150 s since the first start, 60 s since the resume
    await settle(ctl)
    assert [c["type"] for c in the_job(api).status["conditions"]] == ["Suspended"]


async def test_a_job_created_suspended_starts_nothing() -> None:
    api, clock = cluster()
    api.create(job(suspend=True))
    await settle(JobController(api, clock=clock))
    assert pods(api) == [] and "startTime" not in the_job(api).status
    assert conditions(api) == [("Suspended", "JobSuspended")]


# -- the success policy ------------------------------------------------------------------------


async def test_a_success_policy_rule_completes_an_indexed_job_early() -> None:
    api, clock = cluster()
    api.create(job(completions=4, parallelism=4, completionMode="Indexed", successPolicy={
        "rules": [{"succeededIndexes": "0-2", "succeededCount": 2}]}))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    made = by_index(api)
    exit_with(api, clock, made["0"][0], 0)
    exit_with(api, clock, made["3"][0], 0)
    await settle(ctl)
    assert conditions(api) == []  # one of 0-2
    exit_with(api, clock, made["2"][0], 0)
    await settle(ctl)
    assert conditions(api) == [("SuccessCriteriaMet", "SuccessPolicy")]
    assert the_job(api).status["conditions"][0]["message"] == "Matched rules at index 0"
    run(api, clock)  # the running index 1 is deleted, not counted failed
    await settle(ctl)
    status = the_job(api).status
    assert conditions(api)[-1] == ("Complete", "SuccessPolicy")
    assert (status["completedIndexes"], status["succeeded"], status.get("failed", 0)) == (
        "0,2,3", 3, 0)
    assert status["completionTime"]


# -- the per-index backoff ---------------------------------------------------------------------


async def test_an_index_fails_past_its_backoff_limit_and_the_job_with_failed_indexes() -> None:
    api, clock = cluster()
    created = api.create(job(completions=3, parallelism=3, completionMode="Indexed",
                             backoffLimitPerIndex=1))
    assert created.spec["backoffLimit"] == 2**31 - 1
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    made = by_index(api)
    assert made["1"][0].metadata.annotations["batch.kubernetes.io/job-index-failure-count"] \
        == "0"
    exit_with(api, clock, made["1"][0], 1)
    await settle(ctl)
    assert len(by_index(api)["1"]) == 1  # the index's own back-off
    clock.advance(10)
    await settle(ctl)
    retry = next(p for p in by_index(api)["1"] if p.status.get("phase") != "Failed")
    assert retry.metadata.annotations["batch.kubernetes.io/job-index-failure-count"] == "1"
    exit_with(api, clock, retry, 1)
    exit_with(api, clock, made["0"][0], 0)
    await settle(ctl)
    assert the_job(api).status["failedIndexes"] == "1"
    assert conditions(api) == []
    exit_with(api, clock, made["2"][0], 0)
    await settle(ctl)
    status = the_job(api).status
    assert conditions(api) == [("FailureTarget", "FailedIndexes"), ("Failed", "FailedIndexes")]
    assert (status["completedIndexes"], status["failedIndexes"], status["failed"]) == (
        "0,2", "1", 2)


async def test_fail_index_and_max_failed_indexes_fail_the_job() -> None:
    api, clock = cluster()
    api.create(job(completions=3, parallelism=3, completionMode="Indexed",
                   backoffLimitPerIndex=2, maxFailedIndexes=0, podFailurePolicy={"rules": [
                       {"action": "FailIndex", "onExitCodes": {"operator": "In",
                                                               "values": [7]}}]}))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    exit_with(api, clock, by_index(api)["2"][0], 7)
    await settle(ctl)
    assert conditions(api)[0] == ("FailureTarget", "MaxFailedIndexesExceeded")
    run(api, clock)
    await settle(ctl)
    assert conditions(api)[-1] == ("Failed", "MaxFailedIndexesExceeded")
    assert the_job(api).status["failedIndexes"] == "2"


# -- the pod replacement policy ----------------------------------------------------------------


async def test_failed_replacement_waits_for_a_terminating_pod_to_end() -> None:
    api, clock = cluster()
    api.create(job(podReplacementPolicy="Failed"))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    [pod] = live_pods(api)
    api.delete("Pod", pod.name, "default")
    clock.advance(60)
    await settle(ctl)
    status = the_job(api).status
    assert live_pods(api) == [] and (status["terminating"], status.get("failed", 0)) == (1, 0)
    run(api, clock)  # gone
    await settle(ctl)
    assert len(live_pods(api)) == 1


async def test_terminating_or_failed_replaces_a_deleted_pod_while_it_terminates() -> None:
    api, clock = cluster()
    api.create(job())
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    [pod] = live_pods(api)
    api.delete("Pod", pod.name, "default")
    await settle(ctl)
    assert the_job(api).status["failed"] == 1  # a deleted pod counts as failed
    clock.advance(10)
    await settle(ctl)
    assert len(live_pods(api)) == 1
    assert api.get("Pod", pod.name, "default").metadata.deletion_timestamp
    assert the_job(api).status["terminating"] == 1


# -- counts --------------------------------------------------------------------------------------


async def test_scaling_an_elastic_indexed_job_down_deletes_the_dropped_indexes() -> None:
    api, clock = cluster()
    api.create(job(completions=3, parallelism=3, completionMode="Indexed"))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    scaled = the_job(api)
    scaled.spec.update(completions=2, parallelism=2)
    api.update(scaled)
    await settle(ctl)
    dropped = by_index(api)["2"][0]
    assert api.get("Pod", dropped.name, "default").metadata.deletion_timestamp
    assert (f"Deleted pod: {dropped.name}") in [m for r, m in events(api)
                                                if r == "SuccessfulDelete"]
    run(api, clock)
    await settle(ctl)
    status = the_job(api).status
    assert (status["active"], status.get("failed", 0)) == (2, 0)


async def test_restarts_reaching_the_backoff_limit_fail_an_on_failure_job() -> None:
    api, clock = cluster()
    body = job(backoffLimit=2)
    body["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    api.create(body)
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    for restarts, expected in ((1, []), (2, [("FailureTarget", "BackoffLimitExceeded")])):
        [pod] = live_pods(api)
        pod.status["containerStatuses"] = [{"name": "c", "restartCount": restarts,
                                            "state": {"running": {}}}]
        api.update_status(pod)
        await settle(ctl)
        assert conditions(api) == expected


async def test_pods_a_suspension_deleted_are_no_failures_of_their_index() -> None:
    api, clock = cluster()
    api.create(job(completions=2, parallelism=2, completionMode="Indexed",
                   backoffLimitPerIndex=0))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    for suspend in (True, False):  # resumed while the deleted pods still terminate
        changed = the_job(api)
        changed.spec["suspend"] = suspend
        api.update(changed)
        await settle(ctl)
    assert the_job(api).status["terminating"] == 2
    fresh = live_pods(api)
    assert len(fresh) == 2
    assert {p.metadata.annotations["batch.kubernetes.io/job-index-failure-count"]
            for p in fresh} == {"0"}
    status = the_job(api).status
    assert (status["failedIndexes"], status.get("failed", 0)) == ("", 0)


async def test_a_job_managed_by_another_controller_is_left_alone() -> None:
    api, clock = cluster()
    api.create(job(managedBy="kueue.x-k8s.io/multikueue"))
    await settle(JobController(api, clock=clock))
    assert pods(api) == [] and the_job(api).status == {}


async def test_an_ignored_failure_is_carried_apart_and_does_not_fail_its_index() -> None:
    api, clock = cluster()
    api.create(job(completions=1, parallelism=1, completionMode="Indexed",
                   backoffLimitPerIndex=0, podFailurePolicy={"rules": [
                       {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}}]}))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    [first] = live_pods(api)
    exit_with(api, clock, first, 3)
    clock.advance(10)
    await settle(ctl)
    [retry] = live_pods(api)
    annotations = retry.metadata.annotations
    assert (annotations["batch.kubernetes.io/job-index-failure-count"],
            annotations["batch.kubernetes.io/job-index-ignored-failure-count"]) == ("0", "1")
    status = the_job(api).status
    assert (status["failedIndexes"], status.get("failed", 0), conditions(api)) == ("", 0, [])


async def test_pods_a_suspension_deleted_that_end_succeeded_complete_no_index() -> None:
    api, clock = cluster()
    api.create(job(completions=2, parallelism=2, completionMode="Indexed"))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    suspended = the_job(api)
    suspended.spec["suspend"] = True
    api.update(suspended)
    await settle(ctl)
    for pod in pods(api):  # the kubelet writes the terminal status before its delete
        exit_with(api, clock, pod, 0)
    await settle(ctl)
    status = the_job(api).status
    assert (status.get("succeeded", 0), status.get("completedIndexes", "")) == (0, "")
    run(api, clock)  # the final deletes
    await settle(ctl)
    assert the_job(api).status.get("succeeded", 0) == 0


async def test_a_pod_deleted_by_a_user_counts_failed_once_though_it_ends_succeeded() -> None:
    api, clock = cluster()
    api.create(job(completions=1, parallelism=1, completionMode="Indexed"))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    doomed = pods(api)[0]
    api.delete("Pod", doomed.name, "default", grace_period_seconds=30)
    await settle(ctl)  # terminating, not Succeeded: isPodFailed
    assert the_job(api).status.get("failed", 0) == 1
    exit_with(api, clock, doomed, 0)
    await settle(ctl)
    status = the_job(api).status
    assert (status.get("failed", 0), status.get("succeeded", 0)) == (1, 0)
    assert status.get("completedIndexes", "") == ""
