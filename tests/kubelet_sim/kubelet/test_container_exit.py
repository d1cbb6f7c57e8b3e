"""The simulated container exit (sim.cni-csi-mini.io/exit-after, exit-code) and the
restartPolicy that follows, on a fake clock."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.kubelet.container_exit import EXIT_AFTER, EXIT_CODE, exited, parse_duration
from kubelet_sim.testing.fake_clock import FakeClock


def running(policy: str, after: str, code: str | None = None) -> tuple[Resource, FakeClock]:
    clock = FakeClock()
    pod = builders.pod("p")
    pod.spec["restartPolicy"] = policy
    pod.metadata.annotations[EXIT_AFTER] = after
    if code is not None:
        pod.metadata.annotations[EXIT_CODE] = code
    pod.status = {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}, {"type": "ContainersReady", "status": "True"}],
        "containerStatuses": [{"name": "main", "ready": True, "restartCount": 0,
                               "state": {"running": {"startedAt": format_time(clock.now())}}}]}
    return pod, clock


def test_go_durations_parse_as_time_parse_duration_does() -> None:
    assert parse_duration("5s") == 5.0
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("500ms") == 0.5
    assert parse_duration("5") is None and parse_duration("soon") is None


def test_restart_policy_never_with_code_zero_succeeds_after_the_duration() -> None:
    pod, clock = running("Never", "5s")
    assert not exited(pod, clock.now() + timedelta(seconds=4))
    assert exited(pod, clock.now() + timedelta(seconds=5))
    assert pod.status["phase"] == "Succeeded"
    terminated = pod.status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    ready = next(c for c in pod.status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodCompleted")


def test_restart_policy_never_with_an_error_code_fails() -> None:
    pod, clock = running("Never", "1s", "3")
    assert exited(pod, clock.now() + timedelta(seconds=1))
    assert pod.status["phase"] == "Failed"
    assert pod.status["containerStatuses"][0]["state"]["terminated"]["reason"] == "Error"


def test_on_failure_with_an_error_restarts_the_container() -> None:
    pod, clock = running("OnFailure", "2s", "1")
    later = clock.now() + timedelta(seconds=2)
    assert exited(pod, later)
    status = pod.status["containerStatuses"][0]
    assert pod.status["phase"] == "Running" and status["restartCount"] == 1
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert status["state"]["running"]["startedAt"] == format_time(later)
    assert not exited(pod, later + timedelta(seconds=1))


def test_without_the_annotation_containers_run_on() -> None:
    pod, clock = running("Never", "")
    del pod.metadata.annotations[EXIT_AFTER]
    assert not exited(pod, clock.now() + timedelta(days=1))
