"""The READY, STATUS and RESTARTS cells of `kubectl get pods` by kube-apiserver's printPod
rules, for pods with init containers and sidecars."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.apiserver.http.pod_table import (
    pod_readiness_gates,
    pod_ready,
    pod_restarts,
    pod_status,
)

SIDECAR = {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}


def status(name: str, state: JSON, **extra: object) -> JSON:
    return {"name": name, "state": state, "ready": False, "restartCount": 0, **extra}


def pod_with(inits: list[JSON], init_statuses: list[JSON], app_state: JSON,
             phase: str = "Pending", **app: object) -> Resource:
    pod = builders.pod("p")
    pod.spec["initContainers"] = inits
    pod.status = {"phase": phase, "initContainerStatuses": init_statuses,
                  "containerStatuses": [status("main", app_state, **app)]}
    return pod


WAITING = {"waiting": {"reason": "PodInitializing"}}
COMPLETED = {"terminated": {"exitCode": 0, "reason": "Completed"}}
RUNNING = {"running": {"startedAt": "2025-01-01T00:00:00Z"}}


def test_init_progress_is_the_count_of_init_containers_done() -> None:
    inits = [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]
    pod = pod_with(inits, [status("a", WAITING), status("b", WAITING)], WAITING)
    assert (pod_status(pod), pod_ready(pod)) == ("Init:0/2", "0/1")
    pod.status["initContainerStatuses"][0]["state"] = COMPLETED
    assert pod_status(pod) == "Init:1/2"
    pod.status["initContainerStatuses"][1]["state"] = COMPLETED
    assert pod_status(pod) == "PodInitializing"


def test_a_failed_or_backing_off_init_container_names_its_reason() -> None:
    inits = [{"name": "a", "image": "x"}]
    failed = pod_with(inits, [status("a", {"terminated": {"exitCode": 1, "reason": "Error"}})],
                      WAITING, phase="Failed")
    assert pod_status(failed) == "Init:Error"
    failed.status["initContainerStatuses"][0]["state"]["terminated"] = {"exitCode": 3}
    assert pod_status(failed) == "Init:ExitCode:3"
    looping = pod_with(inits, [status("a", {"waiting": {"reason": "CrashLoopBackOff"}},
                                      restartCount=2)], WAITING)
    assert (pod_status(looping), pod_restarts(looping)) == ("Init:CrashLoopBackOff", 2)


def test_a_started_sidecar_counts_in_ready_and_does_not_hold_the_status() -> None:
    pod = pod_with([SIDECAR], [status("proxy", RUNNING, started=True, ready=True)], RUNNING,
                   phase="Running", ready=True)
    pod.status["conditions"] = [{"type": "Initialized", "status": "True"}]
    assert (pod_status(pod), pod_ready(pod)) == ("Running", "2/2")
    pod.status["initContainerStatuses"][0]["ready"] = False
    assert pod_ready(pod) == "1/2"


def test_a_finished_job_pod_with_its_sidecar_stopped_is_completed() -> None:
    pod = pod_with([SIDECAR], [status("proxy", COMPLETED)], COMPLETED, phase="Succeeded")
    assert (pod_status(pod), pod_ready(pod)) == ("Completed", "0/2")


def test_restarts_show_how_long_ago_the_last_one_was() -> None:
    now = datetime(2025, 1, 1, 0, 10, tzinfo=UTC)
    pod = pod_with([], [], RUNNING, phase="Running", ready=True, restartCount=3,
                   lastState={"terminated": {
                       "finishedAt": format_time(now - timedelta(seconds=75))}})
    assert pod_restarts(pod, now) == "3 (75s ago)"


def test_a_deleted_pod_is_terminating_unless_it_already_ended() -> None:
    pod = pod_with([], [], RUNNING, phase="Running", ready=True)
    pod.metadata.deletion_timestamp = "2025-01-01T00:00:00Z"
    assert pod_status(pod) == "Terminating"
    pod.status["phase"] = "Succeeded"
    pod.status["containerStatuses"][0]["state"] = COMPLETED
    assert pod_status(pod) == "Completed"


def test_readiness_gates_count_the_gates_whose_condition_is_true() -> None:
    pod = builders.pod("p")
    assert pod_readiness_gates(pod) == "<none>"
    pod.spec["readinessGates"] = [{"conditionType": "example.com/lb"},
                                  {"conditionType": "example.com/dns"}]
    assert pod_readiness_gates(pod) == "0/2"
    pod.status["conditions"] = [{"type": "example.com/lb", "status": "True"},
                                {"type": "example.com/dns", "status": "False"}]
    assert pod_readiness_gates(pod) == "1/2"
