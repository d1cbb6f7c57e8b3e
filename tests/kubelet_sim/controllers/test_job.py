"""The Job controller on a fake clock: parallelism and completions, the backoff limit,
Indexed completions and the active deadline (the policies: test_job_policies.py)."""

from __future__ import annotations

from typing import Any

from kubelet_sim.controllers.job import JobController, format_indexes, parse_indexes

from .workload_kubelet import cluster, live_pods, pods, run, settle


def job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "batch", "namespace": "default"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "i"}]}},
                     **spec}}


def conditions(api: Any) -> list[tuple[str, str]]:
    return [(c["type"], c["reason"])
            for c in api.get("Job", "batch", "default").status.get("conditions") or []]


def test_completed_indexes_are_written_as_ranges_and_a_pair_as_two_indexes() -> None:
    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6,7"
    assert parse_indexes("0-2,4,6-7") == {0, 1, 2, 4, 6, 7}
    assert parse_indexes("0-2,4,6-7", completions=5) == {0, 1, 2, 4}


async def test_five_completions_two_at_a_time() -> None:
    api, clock = cluster()
    api.create(job(completions=5, parallelism=2))
    ctl = JobController(api, clock=clock)
    for _ in range(5):
        await settle(ctl)
        assert len(live_pods(api)) <= 2
        run(api, clock, phase="Succeeded", only=[p.name for p in live_pods(api)])
    await settle(ctl)
    status = api.get("Job", "batch", "default").status
    assert status["succeeded"] == 5 and "active" not in status  # omitted at 0
    assert conditions(api) == [("SuccessCriteriaMet", "CompletionsReached"),
                               ("Complete", "CompletionsReached")]
    assert status["completionTime"] and status["startTime"]
    assert len(pods(api)) == 5


async def test_failures_beyond_the_backoff_limit_fail_the_job() -> None:
    api, clock = cluster()
    api.create(job(backoffLimit=1))
    ctl = JobController(api, clock=clock)
    for _ in range(2):
        await settle(ctl)
        run(api, clock, phase="Failed", only=[p.name for p in live_pods(api)])
        clock.advance(10)  # the pod-failure back-off before the failed pod is replaced
    await settle(ctl)
    assert conditions(api) == [("FailureTarget", "BackoffLimitExceeded"),
                               ("Failed", "BackoffLimitExceeded")]
    assert api.get("Job", "batch", "default").status["failed"] == 2


async def test_indexed_jobs_complete_each_index_once() -> None:
    api, clock = cluster()
    api.create(job(completions=3, parallelism=3, completionMode="Indexed"))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    made = {p.metadata.annotations["batch.kubernetes.io/job-completion-index"]: p
            for p in pods(api)}
    assert sorted(made) == ["0", "1", "2"]
    assert made["1"].spec["hostname"] == "batch-1" and made["1"].name.startswith("batch-1-")
    run(api, clock, phase="Succeeded", only=[made["0"].name, made["2"].name])
    await settle(ctl)
    assert api.get("Job", "batch", "default").status["completedIndexes"] == "0,2"
    run(api, clock, phase="Succeeded", only=[made["1"].name])
    await settle(ctl)
    assert api.get("Job", "batch", "default").status["completedIndexes"] == "0-2"
    assert conditions(api)[-1] == ("Complete", "CompletionsReached")


async def test_the_active_deadline_fails_the_job_and_deletes_its_pods() -> None:
    api, clock = cluster()
    api.create(job(activeDeadlineSeconds=30))
    ctl = JobController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    clock.advance(29)
    await settle(ctl)
    assert conditions(api) == []
    clock.advance(1)
    await settle(ctl)
    # its pods are being deleted: the Job is only about to fail until they are gone
    assert conditions(api) == [("FailureTarget", "DeadlineExceeded")]
    assert all(p.metadata.deletion_timestamp for p in pods(api))
    assert api.get("Job", "batch", "default").status["terminating"] == 1
    run(api, clock)
    await settle(ctl)
    assert conditions(api)[-1] == ("Failed", "DeadlineExceeded")
    assert api.get("Job", "batch", "default").status["failed"] == 1
