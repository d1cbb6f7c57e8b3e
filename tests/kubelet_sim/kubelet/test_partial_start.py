"""A pod with a container waiting on its ConfigMap or Secret while the others run: the
status the kubelet writes for that mix and the phase getPhase gives."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.kubelet.partial_start import pod_phase, write_started

NOW, LATER = "2026-01-01T00:00:00Z", "2026-01-01T00:00:09Z"


def two_containers(restart_policy: str = "Always") -> Resource:
    pod = builders.pod("p")
    pod.spec["containers"] = [{"name": "app", "image": "nginx"},
                              {"name": "side", "image": "busybox"}]
    pod.spec["restartPolicy"] = restart_policy
    return pod


def states(pod: Resource, **by_name: Any) -> Resource:
    pod.status["containerStatuses"] = [{"name": n, **s} for n, s in by_name.items()]
    return pod


def cond(pod: Resource, kind: str) -> JSON:
    return next(c for c in pod.status["conditions"] if c["type"] == kind)


def test_one_container_waiting_never_run_keeps_the_pod_pending() -> None:
    pod = states(two_containers(), app={"state": {"waiting": {"reason": "X"}}},
                 side={"state": {"running": {}}})
    assert pod_phase(pod) == "Pending"


def test_a_container_waiting_to_restart_counts_as_stopped_so_the_pod_runs() -> None:
    pod = states(two_containers(), side={"state": {"running": {}}},
                 app={"state": {"waiting": {"reason": "CrashLoopBackOff"}},
                      "lastState": {"terminated": {"exitCode": 1}}})
    assert pod_phase(pod) == "Running"


def test_all_terminated_gives_the_phase_by_restart_policy() -> None:
    ok, bad = {"state": {"terminated": {"exitCode": 0}}}, {"state": {"terminated": {
        "exitCode": 2}}}
    assert pod_phase(states(two_containers("Never"), app=ok, side=ok)) == "Succeeded"
    assert pod_phase(states(two_containers("Never"), app=ok, side=bad)) == "Failed"
    assert pod_phase(states(two_containers("OnFailure"), app=ok, side=bad)) == "Running"
    assert pod_phase(states(two_containers("Always"), app=ok, side=ok)) == "Running"


def test_a_container_without_a_status_is_unknown_and_the_pod_pending() -> None:
    assert pod_phase(states(two_containers(), side={"state": {"running": {}}})) == "Pending"


def test_the_started_containers_run_while_the_failing_one_waits_not_ready() -> None:
    pod = two_containers()
    write_started(pod, errors={"app": 'configmap "c" not found'}, sandbox_id="sb",
                  host_ip="192.168.0.1", ips=["10.244.1.5"], now=NOW)
    by_name = {s["name"]: s for s in pod.status["containerStatuses"]}
    assert pod.status["phase"] == "Pending" and pod.status["podIP"] == "10.244.1.5"
    assert by_name["app"]["state"] == {"waiting": {"reason": "CreateContainerConfigError",
                                                   "message": 'configmap "c" not found'}}
    assert "containerID" not in by_name["app"] and not by_name["app"]["ready"]
    assert by_name["side"]["state"] == {"running": {"startedAt": NOW}}
    assert (cond(pod, "Ready")["status"], cond(pod, "Ready")["reason"]) == (
        "False", "ContainersNotReady")
    assert cond(pod, "ContainersReady")["message"] == "containers with unready status: [app]"
    assert cond(pod, "PodReadyToStartContainers")["status"] == "True"

    write_started(pod, errors={}, sandbox_id="sb", host_ip="192.168.0.1",
                  ips=["10.244.1.5"], now=LATER)
    by_name = {s["name"]: s for s in pod.status["containerStatuses"]}
    assert pod.status["phase"] == "Running"
    assert by_name["side"]["state"] == {"running": {"startedAt": NOW}}
    assert by_name["app"]["state"] == {"running": {"startedAt": LATER}}


def test_a_container_never_created_shows_the_specs_image_a_started_one_the_runtimes() -> None:
    pod = two_containers()
    write_started(pod, errors={"app": 'configmap "c" not found'}, sandbox_id="sb",
                  host_ip="192.168.0.1", ips=["10.244.1.5"], now=NOW)
    by_name = {s["name"]: s for s in pod.status["containerStatuses"]}
    assert (by_name["app"]["image"], by_name["app"]["imageID"]) == ("nginx", "")
    assert by_name["side"]["image"] == "docker.io/library/busybox:latest"
    assert by_name["app"]["lastState"] == by_name["side"]["lastState"] == {}
