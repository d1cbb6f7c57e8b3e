"""The terminal status the kubelet writes for a running pod being deleted, before its
final delete (pod_termination.py), on a fake clock."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.kubelet.pod_termination import STATUS_UNKNOWN, terminate_deleted_pod
from kubelet_sim.testing.fake_clock import FakeClock


def running_pod(policy: str = "Always") -> tuple[Resource, FakeClock]:
    clock = FakeClock()
    pod = builders.pod("p")
    pod.spec["restartPolicy"] = policy
    started = format_time(clock.now())
    pod.status = {"phase": "Running", "conditions": [
        {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": started},
        {"type": "Ready", "status": "True", "lastTransitionTime": started},
        {"type": "ContainersReady", "status": "True", "lastTransitionTime": started}],
        "containerStatuses": [{"name": "main", "ready": True, "started": True,
                               "restartCount": 0, "containerID": "containerd://abc",
                               "state": {"running": {"startedAt": started}}}]}
    return pod, clock


def condition(pod: Resource, kind: str) -> JSON:
    found: JSON = next(c for c in pod.status["conditions"] if c["type"] == kind)
    return found


def test_a_killed_running_container_is_terminated_completed_and_the_pod_succeeds() -> None:
    pod, clock = running_pod("Always")
    clock.advance(7)
    assert terminate_deleted_pod(pod, clock.now())
    status = pod.status["containerStatuses"][0]
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert terminated["finishedAt"] == format_time(clock.now())
    assert terminated["containerID"] == "containerd://abc"
    assert (status["ready"], status["started"]) == (False, False)
    assert pod.status["phase"] == "Succeeded"  # terminal whatever the restartPolicy
    for kind in ("Ready", "ContainersReady"):
        assert (condition(pod, kind)["status"], condition(pod, kind)["reason"]) == \
            ("False", "PodCompleted")
    sandbox = condition(pod, "PodReadyToStartContainers")
    assert (sandbox["status"], sandbox["lastTransitionTime"]) == \
        ("False", format_time(clock.now()))


def test_a_container_backing_off_after_an_error_makes_the_deleted_pod_failed() -> None:
    pod, clock = running_pod("Always")
    status = pod.status["containerStatuses"][0]
    last = {"exitCode": 2, "reason": "Error", "startedAt": "x", "finishedAt": "y"}
    status.update(state={"waiting": {"reason": "CrashLoopBackOff"}},
                  lastState={"terminated": last}, ready=False, started=False)
    assert terminate_deleted_pod(pod, clock.now() + timedelta(seconds=1))
    assert status["state"] == {"terminated": last}
    assert pod.status["phase"] == "Failed"
    assert condition(pod, "Ready")["reason"] == "PodFailed"


def test_a_container_that_never_ran_is_reported_status_unknown() -> None:
    pod, clock = running_pod("Never")
    status = pod.status["containerStatuses"][0]
    status["state"] = {"waiting": {"reason": "CreateContainerConfigError"}}
    assert terminate_deleted_pod(pod, clock.now())
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (137, STATUS_UNKNOWN)
    assert pod.status["phase"] == "Failed"


def test_a_running_sidecar_is_stopped_with_the_app_containers() -> None:
    pod, clock = running_pod("Never")
    pod.spec["initContainers"] = [{"name": "side", "image": "busybox",
                                   "restartPolicy": "Always"}]
    pod.status["initContainerStatuses"] = [
        {"name": "side", "ready": True, "started": True, "restartCount": 0,
         "state": {"running": {"startedAt": format_time(clock.now())}}}]
    assert terminate_deleted_pod(pod, clock.now())
    side = pod.status["initContainerStatuses"][0]
    assert side["state"]["terminated"]["exitCode"] == 0 and side["ready"] is False
    assert pod.status["phase"] == "Succeeded"


def test_a_pod_already_finished_or_still_pending_keeps_its_status() -> None:
    for phase in ("Succeeded", "Failed", "Pending"):
        pod, clock = running_pod()
        pod.status["phase"] = phase
        before = dict(pod.status)
        assert not terminate_deleted_pod(pod, clock.now())
        assert pod.status == before
