"""The kubelet's prober on a fake clock: probe workers per container and probe type with
their initial delay, period and thresholds, the startup probe gating the others, the
simulated outcomes of the pod's annotations, and the kills and events that follow."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.in_process import as_client
from kubelet_sim.kubelet.container_exit import exited
from kubelet_sim.kubelet.crash_loop_backoff import CrashLoopBackOff
from kubelet_sim.kubelet.probe_events import ProbeEvents
from kubelet_sim.kubelet.probe_kills import kill_failed, kill_failed_containers
from kubelet_sim.kubelet.probe_outcomes import failure_output
from kubelet_sim.kubelet.prober import ContainerProbes, probe_container
from kubelet_sim.kubelet.readiness import READY_AFTER, refresh_readiness
from kubelet_sim.testing.fake_clock import FakeClock

SIM = "sim.cni-csi-mini.io/"


def running(clock: FakeClock, policy: str = "Always", **probes: JSON) -> Resource:
    """A Running pod whose container ``main`` started now, with ``probes`` (field name ->
    probe) on it."""
    pod = builders.pod("p")
    pod.spec["restartPolicy"] = pod.spec.get("restartPolicy", policy)
    pod.spec["containers"][0].update(probes)
    started = format_time(clock.now())
    pod.status = {"phase": "Running", "podIP": "10.244.0.7", "conditions": [
        {"type": "ContainersReady", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "image": pod.spec["containers"][0]["image"],
                               "ready": True, "started": True, "restartCount": 0,
                               "containerID": "containerd://a",
                               "state": {"running": {"startedAt": started}}}]}
    return pod


def at(pod: Resource, clock: FakeClock, seconds: float) -> ContainerProbes:
    probes = probe_container(pod, pod.status["containerStatuses"][0],
                             clock.now() + timedelta(seconds=seconds))
    assert probes is not None
    return probes


def cond(pod: Resource, kind: str) -> JSON:
    return next(c for c in pod.status["conditions"] if c["type"] == kind)


def http(**fields: int) -> JSON:
    return {"httpGet": {"path": "/healthz", "port": 8080}, **fields}


def test_a_readiness_probe_keeps_the_container_unready_until_its_first_success() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe=http(initialDelaySeconds=5, periodSeconds=10))
    assert not at(pod, clock, 9).ready  # the first probe past the delay is at 10 s
    assert at(pod, clock, 10).ready
    assert refresh_readiness(pod, clock.now() + timedelta(seconds=9))
    assert pod.status["containerStatuses"][0]["ready"] is False
    assert cond(pod, "Ready")["message"] == "containers with unready status: [main]"


def test_readiness_fails_only_after_failure_threshold_failed_probes_in_a_row() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe=http(periodSeconds=5, failureThreshold=3))
    pod.metadata.annotations[SIM + "readiness-fails-after.main"] = "20s"
    assert at(pod, clock, 29).ready  # failures at 20 and 25 s: two of three
    assert not at(pod, clock, 30).ready
    assert refresh_readiness(pod, clock.now() + timedelta(seconds=30))
    ready = cond(pod, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")


def test_readiness_returns_after_success_threshold_successes_in_a_row() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe=http(periodSeconds=5, successThreshold=2))
    pod.metadata.annotations[SIM + "readiness-passes-after"] = "10s"
    assert not at(pod, clock, 14).ready  # one success, at 10 s
    assert at(pod, clock, 15).ready


def test_a_container_key_wins_over_the_key_for_every_container() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe=http(periodSeconds=1, failureThreshold=1))
    pod.metadata.annotations[SIM + "readiness-fails-after"] = "0s"
    pod.metadata.annotations[SIM + "readiness-fails-after.main"] = "1h"
    assert at(pod, clock, 60).ready


def test_a_startup_probe_holds_back_started_liveness_and_readiness() -> None:
    clock = FakeClock()
    pod = running(clock, startupProbe=http(periodSeconds=5, failureThreshold=10),
                  livenessProbe=http(periodSeconds=1, failureThreshold=1),
                  readinessProbe=http(periodSeconds=1))
    pod.metadata.annotations[SIM + "startup-passes-after"] = "12s"
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "0s"
    early = at(pod, clock, 14)
    assert (early.started, early.ready, early.kill()) == (False, False, None)
    started = at(pod, clock, 15)  # the startup probe at 15 s succeeds
    assert (started.started, started.ready, started.kill()) == (True, False, None)
    assert at(pod, clock, 16).kill() == ("liveness", clock.now() + timedelta(seconds=16))
    assert refresh_readiness(pod, clock.now() + timedelta(seconds=14))
    assert pod.status["containerStatuses"][0]["started"] is False


def test_a_startup_probe_failing_failure_threshold_times_kills_the_container() -> None:
    clock = FakeClock()
    pod = running(clock, startupProbe={"exec": {"command": ["true"]}, "periodSeconds": 2})
    pod.metadata.annotations[SIM + "startup-passes-after"] = "never"
    assert at(pod, clock, 3).kill() is None
    assert at(pod, clock, 4).kill() == ("startup", clock.now() + timedelta(seconds=4))


def test_a_liveness_failure_kills_and_restarts_the_container_with_the_kubelets_events() -> None:
    clock = FakeClock()
    pod = running(clock, livenessProbe=http(periodSeconds=1, failureThreshold=2))
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "3s"
    backoff = CrashLoopBackOff()
    assert not kill_failed(pod, clock.now() + timedelta(seconds=3.5), backoff)
    out = kill_failed(pod, clock.now() + timedelta(seconds=4.5), backoff)
    out.commit(backoff)
    assert [(e.reason, e.message) for e in out.events] == [
        ("Killing", "Container main failed liveness probe, will be restarted"),
        ("Pulled", 'Container image "registry.k8s.io/pause:3.9" already present on machine '
         "and can be accessed by the pod"),
        ("Created", "Created container: main"), ("Started", "Started container main")]
    status = pod.status["containerStatuses"][0]
    assert status["restartCount"] == 1 and status["containerID"] != "containerd://a"
    terminated = status["lastState"]["terminated"]
    assert terminated["finishedAt"] == format_time(clock.now() + timedelta(seconds=4))
    assert status["state"]["running"]["startedAt"] == format_time(
        clock.now() + timedelta(seconds=4.5))
    # the new container (its start kept to the second, 4 s) fails its probes at 7 and
    # 8 s: killed again within the back-off's 10 s, it waits
    again = kill_failed(pod, clock.now() + timedelta(seconds=9), backoff)
    assert [e.reason for e in again.events] == ["Killing", "BackOff"]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["restartCount"] == 1 and status["ready"] is False
    assert not exited(pod, clock.now() + timedelta(seconds=17), backoff)
    assert exited(pod, clock.now() + timedelta(seconds=18), backoff)  # 10 s after the kill
    assert status["restartCount"] == 2 and "running" in status["state"]


def test_under_restart_policy_never_a_liveness_kill_ends_the_container() -> None:
    clock = FakeClock()
    pod = running(clock, "Never", livenessProbe={"tcpSocket": {"port": 80},
                                                 "failureThreshold": 1})
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "0s"
    out = kill_failed(pod, clock.now(), CrashLoopBackOff())
    assert [(e.reason, e.message) for e in out.events] == [
        ("Killing", "Container main failed liveness probe")]
    assert pod.status["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert pod.status["phase"] == "Succeeded"


def test_each_failed_probe_is_one_unhealthy_event() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe={"tcpSocket": {"port": "web"}, "periodSeconds": 1},
                  livenessProbe=http(periodSeconds=2, failureThreshold=5))
    pod.spec["containers"][0]["ports"] = [{"name": "web", "containerPort": 8080}]
    pod.metadata.annotations[SIM + "readiness-fails-after"] = "2s"
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "3s"
    events = ProbeEvents(EventRecorder(), "node-1")
    assert events.failures(pod, clock.now() + timedelta(seconds=1)) == []
    first = events.failures(pod, clock.now() + timedelta(seconds=4))
    assert sorted(e.message for e in first) == [
        "Liveness probe failed: HTTP probe failed with statuscode: 500",
        "Readiness probe failed: dial tcp 10.244.0.7:8080: connect: connection refused",
        "Readiness probe failed: dial tcp 10.244.0.7:8080: connect: connection refused",
        "Readiness probe failed: dial tcp 10.244.0.7:8080: connect: connection refused"]
    assert all(e.reason == "Unhealthy" and e.warning for e in first)
    assert events.failures(pod, clock.now() + timedelta(seconds=4.5)) == []
    assert len(events.failures(pod, clock.now() + timedelta(seconds=5))) == 1


def test_failure_outputs_are_the_handlers_words() -> None:
    container: JSON = {"name": "main"}
    assert failure_output({"grpc": {"port": 9000}}, container, "10.0.0.1") == (
        'service unhealthy (responded with "NOT_SERVING")')
    assert failure_output({"tcpSocket": {"port": 53}}, container, "fd00::5") == (
        "dial tcp [fd00::5]:53: connect: connection refused")
    assert failure_output({"exec": {"command": ["false"]}}, container, "10.0.0.1") == ""


def test_ready_after_still_delays_a_container_whose_readiness_probe_passes() -> None:
    clock = FakeClock()
    pod = running(clock, readinessProbe=http(periodSeconds=1))
    pod.metadata.annotations[READY_AFTER] = "5s"
    refresh_readiness(pod, clock.now() + timedelta(seconds=4))
    assert pod.status["containerStatuses"][0]["ready"] is False
    refresh_readiness(pod, clock.now() + timedelta(seconds=5))
    assert pod.status["containerStatuses"][0]["ready"] is True


def test_a_startup_kill_restarts_the_container_under_on_failure() -> None:
    clock = FakeClock()
    pod = running(clock, "OnFailure", startupProbe=http(periodSeconds=1, failureThreshold=2))
    pod.metadata.annotations[SIM + "startup-passes-after.main"] = "never"
    out = kill_failed(pod, clock.now() + timedelta(seconds=1), CrashLoopBackOff())
    assert out.events[0].message == "Container main failed startup probe, will be restarted"
    status = pod.status["containerStatuses"][0]
    assert status["restartCount"] == 1
    assert (status["started"], status["ready"]) == (False, False)  # the new one starts over


def test_a_container_without_probes_is_left_to_the_other_rules() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "0s"
    assert probe_container(pod, pod.status["containerStatuses"][0],
                           clock.now() + timedelta(hours=1)) is None
    assert not kill_failed(pod, clock.now() + timedelta(hours=1), CrashLoopBackOff())
    assert not refresh_readiness(pod, clock.now() + timedelta(hours=1))


async def test_a_written_probe_kill_says_which_generation_of_the_pod_the_kubelet_acted_on() -> None:
    clock = FakeClock()
    api = APIServer(clock=clock)
    pod = running(clock, livenessProbe=http(periodSeconds=1, failureThreshold=1))
    pod.metadata.annotations[SIM + "liveness-fails-after"] = "1s"
    status = pod.status
    created = api.create(pod)
    created.status = status
    stored = api.update_status(created)
    assert "observedGeneration" not in stored.status
    assert await kill_failed_containers(as_client(api), stored,
                                        clock.now() + timedelta(seconds=1.5),
                                        CrashLoopBackOff(), EventRecorder(api), "node-1")
    after = api.get("Pod", "p", stored.namespace)
    assert after.status["containerStatuses"][0]["restartCount"] == 1
    assert after.status["observedGeneration"] == after.metadata.generation == 1
