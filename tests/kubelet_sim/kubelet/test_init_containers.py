"""Init containers and sidecars as the kubelet runs them, step by step on a fake clock:
one at a time in order before the app containers, a failure under restartPolicy Never
failing the pod and otherwise backing off, sidecars done once started and kept running
beside the app containers, stopped when a Job-like pod's app containers finish."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.kubelet.container_config import container_config_error
from kubelet_sim.kubelet.container_events import containers_killed
from kubelet_sim.kubelet.container_exit import exited
from kubelet_sim.kubelet.crash_loop_backoff import CrashLoopBackOff
from kubelet_sim.kubelet.exit_plans import (
    EXIT_AFTER,
    EXIT_CODE,
    container_plan,
    init_container_plan,
)
from kubelet_sim.kubelet.image_change import restart_changed
from kubelet_sim.kubelet.init_containers import InitStep, advance_init, write_initializing
from kubelet_sim.kubelet.init_status import initialized_condition
from kubelet_sim.kubelet.pod_status import write_running
from kubelet_sim.testing.fake_clock import FakeClock

SIDECAR = {"name": "proxy", "image": "envoy:1", "restartPolicy": "Always"}


def with_inits(*inits: JSON, policy: str = "Always") -> Resource:
    pod = builders.pod("p")
    pod.metadata.uid = "uid-1"
    pod.spec["initContainers"] = [dict(c) for c in inits]
    pod.spec["restartPolicy"] = policy
    return pod


def step(pod: Resource, clock: FakeClock, backoff: CrashLoopBackOff) -> InitStep:
    out = advance_init(pod, sandbox_id="sb", now=clock.now(), backoff=backoff)
    out.commit(backoff)
    if out.changed:
        write_initializing(pod, out, host_ip="10.0.0.1", ips=["10.244.1.5"],
                           now=format_time(clock.now()))
    return out


def init(pod: Resource, name: str) -> JSON:
    status: JSON = next(s for s in pod.status["initContainerStatuses"] if s["name"] == name)
    return status


def state(pod: Resource, name: str) -> str:
    return next(iter(init(pod, name)["state"]))


def cond(pod: Resource, kind: str) -> JSON:
    return next(c for c in pod.status["conditions"] if c["type"] == kind)


def test_init_containers_run_one_at_a_time_in_order_before_the_app_containers() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits({"name": "a", "image": "busybox:1"}, {"name": "b", "image": "busybox:1"})
    first = step(pod, clock, backoff)
    assert [(e.container, e.reason) for e in first.events] == [
        ("a", "Pulled"), ("a", "Created"), ("a", "Started")]
    assert (state(pod, "a"), state(pod, "b")) == ("running", "waiting")
    assert init(pod, "b")["state"]["waiting"]["reason"] == "PodInitializing"
    assert (init(pod, "a")["started"], init(pod, "a")["ready"]) == (True, False)
    assert pod.status["phase"] == "Pending" and pod.status["podIP"] == "10.244.1.5"
    assert pod.status["containerStatuses"][0]["state"] == {
        "waiting": {"reason": "PodInitializing"}}
    initialized = cond(pod, "Initialized")
    assert (initialized["status"], initialized["reason"], initialized["message"]) == (
        "False", "ContainersNotInitialized", "containers with incomplete status: [a b]")
    assert cond(pod, "Ready")["message"] == "containers with unready status: [main]"

    second = step(pod, clock, backoff)  # a exits at once with 0 by default; b waits a step
    terminated = init(pod, "a")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
    assert (init(pod, "a")["ready"], init(pod, "a")["started"]) == (True, False)
    assert state(pod, "b") == "waiting" and not second.done
    assert cond(pod, "Initialized")["message"] == "containers with incomplete status: [b]"

    step(pod, clock, backoff)
    assert state(pod, "b") == "running"
    last = step(pod, clock, backoff)
    assert last.done and state(pod, "b") == "terminated"
    assert cond(pod, "Initialized")["status"] == "True"
    assert not step(pod, clock, backoff).changed  # nothing more to do before the app


def test_an_init_container_runs_as_long_as_its_own_exit_after_says() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits({"name": "a", "image": "busybox:1"})
    pod.metadata.annotations[f"{EXIT_AFTER}.a"] = "3s"
    step(pod, clock, backoff)
    clock.advance(2)
    assert not step(pod, clock, backoff).changed and state(pod, "a") == "running"
    clock.advance(1)
    assert step(pod, clock, backoff).done


def test_a_failed_init_container_fails_a_restart_policy_never_pod() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits(SIDECAR, {"name": "a", "image": "busybox:1"},
                     {"name": "b", "image": "busybox:1"}, policy="Never")
    pod.metadata.annotations[f"{EXIT_CODE}.a"] = "2"
    step(pod, clock, backoff)  # the sidecar
    step(pod, clock, backoff)  # a starts
    failed = step(pod, clock, backoff)
    assert failed.failed and pod.status["phase"] == "Failed"
    terminated = init(pod, "a")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (2, "Error")
    assert state(pod, "b") == "waiting" and state(pod, "proxy") == "terminated"
    assert ("proxy", "Killing") in [(e.container, e.reason) for e in failed.events]
    ready = cond(pod, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "PodFailed")
    assert pod.status["containerStatuses"][0]["state"]["waiting"]["reason"] == \
        "PodInitializing"


def test_a_failed_init_container_restarts_with_the_crash_loop_back_off() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits({"name": "a", "image": "busybox:1"}, policy="OnFailure")
    pod.metadata.annotations.update({f"{EXIT_AFTER}.a": "1s", f"{EXIT_CODE}.a": "1"})
    step(pod, clock, backoff)
    clock.advance(1)
    restarted = step(pod, clock, backoff)  # the first exit restarts at once
    status = init(pod, "a")
    assert (status["restartCount"], state(pod, "a")) == (1, "running")
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert [e.reason for e in restarted.events] == ["Pulled", "Created", "Started"]
    clock.advance(1)
    waiting = step(pod, clock, backoff)
    assert init(pod, "a")["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert [(e.reason, e.warning) for e in waiting.events] == [("BackOff", True)]
    assert pod.status["phase"] == "Pending"
    assert cond(pod, "Initialized")["message"] == "containers with incomplete status: [a]"
    clock.advance(10)
    step(pod, clock, backoff)
    assert (init(pod, "a")["restartCount"], state(pod, "a")) == (2, "running")


def test_a_sidecar_is_done_once_started_and_the_next_init_container_follows() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits(SIDECAR, {"name": "setup", "image": "busybox:1"})
    step(pod, clock, backoff)
    proxy = init(pod, "proxy")
    assert (proxy["started"], proxy["ready"], state(pod, "setup")) == (True, True, "waiting")
    assert cond(pod, "Initialized")["message"] == "containers with incomplete status: [setup]"
    step(pod, clock, backoff)
    assert state(pod, "setup") == "running"
    assert step(pod, clock, backoff).done
    assert state(pod, "proxy") == "running"  # it keeps running beside the app containers



def test_a_sidecar_with_a_startup_probe_holds_the_next_init_container_until_it_passes() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    sidecar = {**SIDECAR, "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 2,
                                           "failureThreshold": 30}}
    pod = with_inits(sidecar, {"name": "setup", "image": "busybox:1"})
    pod.metadata.annotations["sim.cni-csi-mini.io/startup-passes-after.proxy"] = "5s"
    step(pod, clock, backoff)
    assert (state(pod, "proxy"), init(pod, "proxy")["started"]) == ("running", False)
    clock.advance(4)
    step(pod, clock, backoff)  # the probes at 2 s and 4 s failed: not started yet
    assert (init(pod, "proxy")["started"], state(pod, "setup")) == (False, "waiting")
    clock.advance(2)
    step(pod, clock, backoff)  # the probe at 6 s passed: started, setup may follow
    assert init(pod, "proxy")["started"] is True
    step(pod, clock, backoff)
    assert state(pod, "setup") == "running"

def running_job_with_sidecar(clock: FakeClock) -> Resource:
    pod = with_inits(SIDECAR, policy="Never")
    pod.metadata.annotations[EXIT_AFTER] = "5s"
    backoff = CrashLoopBackOff()
    step(pod, clock, backoff)
    write_running(pod, sandbox_id="sb", host_ip="10.0.0.1", ips=["10.244.1.5"],
                  now=format_time(clock.now()))
    return pod


def test_a_job_pod_with_a_sidecar_succeeds_when_its_app_containers_finish() -> None:
    clock = FakeClock()
    pod = running_job_with_sidecar(clock)
    assert initialized_condition(pod)["status"] == "True"
    clock.advance(5)
    out = exited(pod, clock.now())
    assert pod.status["phase"] == "Succeeded"
    assert init(pod, "proxy")["state"]["terminated"]["exitCode"] == 0
    assert [(e.container, e.reason) for e in out.events] == [("proxy", "Killing")]


def test_a_sidecar_that_exits_is_restarted_whatever_the_pods_restart_policy() -> None:
    clock = FakeClock()
    pod = running_job_with_sidecar(clock)
    pod.metadata.annotations[f"{EXIT_AFTER}.proxy"] = "2s"
    clock.advance(2)
    assert exited(pod, clock.now())
    proxy = init(pod, "proxy")
    assert (proxy["restartCount"], state(pod, "proxy")) == (1, "running")
    assert pod.status["phase"] == "Running"


def test_per_container_annotations_override_the_pod_wide_pair_for_app_containers() -> None:
    pod = with_inits({"name": "a", "image": "busybox:1"}, SIDECAR)
    pod.metadata.annotations.update({EXIT_AFTER: "5s", EXIT_CODE: "3"})
    assert container_plan(pod, "main") == (5.0, 3)
    pod.metadata.annotations.update({f"{EXIT_AFTER}.main": "1s", f"{EXIT_CODE}.main": "0"})
    assert container_plan(pod, "main") == (1.0, 0)
    # the pod-wide pair is for app containers: an init container exits at once with 0,
    # a sidecar runs on
    assert init_container_plan(pod, "a") == (0.0, 0)
    assert init_container_plan(pod, "proxy") is None
    pod.metadata.annotations[f"{EXIT_AFTER}.proxy"] = "1m"
    assert init_container_plan(pod, "proxy") == (60.0, 0)


def test_without_annotations_an_app_container_runs_on() -> None:
    pod = builders.pod("p")
    pod.metadata.annotations[f"{EXIT_CODE}.main"] = "1"
    assert container_plan(pod, "main") is None
    clock = FakeClock()
    write_running(pod, sandbox_id="sb", host_ip="", ips=[], now=format_time(clock.now()))
    assert not exited(pod, clock.now() + timedelta(days=1))


def test_a_sidecars_changed_image_restarts_it() -> None:
    clock = FakeClock()
    pod = running_job_with_sidecar(clock)
    pod.spec["initContainers"][0]["image"] = "envoy:2"
    events = restart_changed(pod, clock.now())
    assert [(e.container, e.reason) for e in events][:2] == [
        ("proxy", "Killing"), ("proxy", "Pulled")]
    proxy = init(pod, "proxy")
    assert (proxy["image"], proxy["restartCount"], state(pod, "proxy")) == (
        "docker.io/library/envoy:2", 1, "running")


def test_at_deletion_sidecars_are_stopped_after_the_app_containers_last_first() -> None:
    clock = FakeClock()
    pod = with_inits({**SIDECAR, "name": "logs"}, SIDECAR)
    backoff = CrashLoopBackOff()
    step(pod, clock, backoff)
    step(pod, clock, backoff)
    write_running(pod, sandbox_id="sb", host_ip="", ips=[], now=format_time(clock.now()))
    recorder = EventRecorder(APIServer(clock=clock))
    containers_killed(recorder, pod, "node-1")
    assert [(e.reason, e.field_path) for e in recorder.for_object("Pod", "p", "default")] == [
        ("Killing", "spec.containers{main}"), ("Killing", "spec.initContainers{proxy}"),
        ("Killing", "spec.initContainers{logs}")]


def test_an_init_container_naming_a_missing_config_map_waits_until_it_exists() -> None:
    clock, backoff = FakeClock(), CrashLoopBackOff()
    pod = with_inits({"name": "a", "image": "busybox:1",
                      "envFrom": [{"configMapRef": {"name": "settings"}}]})
    store: dict[tuple[str, str, str], Resource] = {}

    def config_error(container: JSON) -> str | None:
        return container_config_error(pod, container, lambda *key: store.get(key))

    waiting = advance_init(pod, sandbox_id="sb", now=clock.now(), backoff=backoff,
                           config_error=config_error)
    assert waiting.config_wait and init(pod, "a")["state"] == {"waiting": {
        "reason": "CreateContainerConfigError", "message": 'configmap "settings" not found'}}
    assert [(e.reason, e.message, e.warning) for e in waiting.events] == [
        ("Pulled", 'Container image "busybox:1" already present on machine '
         "and can be accessed by the pod", False),
        ("Failed", 'Error: configmap "settings" not found', True)]
    again = advance_init(pod, sandbox_id="sb", now=clock.now(), backoff=backoff,
                         config_error=config_error)
    assert not again.changed  # the same wait: no new event
    store[("ConfigMap", "default", "settings")] = Resource(kind="ConfigMap", body={"data": {}})
    advance_init(pod, sandbox_id="sb", now=clock.now(), backoff=backoff,
                 config_error=config_error)
    assert state(pod, "a") == "running"


def test_a_pod_deleted_while_initializing_kills_only_its_running_init_container() -> None:
    clock = FakeClock()
    pod = with_inits({"name": "a", "image": "busybox:1"})
    step(pod, clock, CrashLoopBackOff())
    recorder = EventRecorder(APIServer(clock=clock))
    containers_killed(recorder, pod, "node-1")
    assert [(e.reason, e.field_path) for e in recorder.for_object("Pod", "p", "default")] == [
        ("Killing", "spec.initContainers{a}")]
