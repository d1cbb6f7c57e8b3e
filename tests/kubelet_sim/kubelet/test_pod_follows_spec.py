"""A running pod following its spec, on a fake clock: an image change restarts its
container with the kubelet's events; activeDeadlineSeconds fails it; a missing ConfigMap
or Secret in its environment is a CreateContainerConfigError with the kubelet's
message; readiness comes from the containers and the readiness gates."""

from __future__ import annotations

from datetime import timedelta

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.kubelet.active_deadline import fail_past_deadline
from kubelet_sim.kubelet.container_config import config_errors
from kubelet_sim.kubelet.image_change import restart_changed
from kubelet_sim.kubelet.readiness import READY_AFTER, refresh_readiness
from kubelet_sim.testing.fake_clock import FakeClock


def running(clock: FakeClock) -> Resource:
    pod = builders.pod("p")
    started = format_time(clock.now())
    pod.status = {"phase": "Running", "startTime": started, "conditions": [
        {"type": "ContainersReady", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "main", "image": pod.spec["containers"][0]["image"],
                               "ready": True, "restartCount": 0, "containerID": "containerd://a",
                               "state": {"running": {"startedAt": started}}}]}
    return pod


def cond(pod: Resource, kind: str) -> JSON:
    return next(c for c in pod.status["conditions"] if c["type"] == kind)


def test_an_image_change_restarts_the_container_with_the_kubelets_events() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.spec["containers"][0]["image"] = "nginx:2"
    events = restart_changed(pod, clock.now() + timedelta(seconds=3))
    assert [(e.reason, e.message) for e in events] == [
        ("Killing", "Container main definition changed, will be restarted"),
        ("Pulled", 'Container image "nginx:2" already present on machine '
         "and can be accessed by the pod"),
        ("Created", "Created container: main"), ("Started", "Started container main")]
    status = pod.status["containerStatuses"][0]
    assert (status["image"], status["restartCount"]) == ("docker.io/library/nginx:2", 1)
    assert status["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert status["lastState"]["terminated"]["reason"] == "Completed"
    assert restart_changed(pod, clock.now() + timedelta(seconds=4)) == []


def test_the_spec_image_respelled_as_the_runtime_reports_it_restarts_nothing() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.status["containerStatuses"][0]["image"] = "docker.io/library/nginx:1"
    pod.spec["containers"][0]["image"] = "nginx:1"
    assert restart_changed(pod, clock.now()) == []
    pod.spec["containers"][0]["image"] = "docker.io/library/nginx:1"
    assert restart_changed(pod, clock.now()) == []


def test_past_its_active_deadline_the_pod_fails_with_deadline_exceeded() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.spec["activeDeadlineSeconds"] = 5
    assert not fail_past_deadline(pod, clock.now() + timedelta(seconds=4))
    assert fail_past_deadline(pod, clock.now() + timedelta(seconds=5))
    assert (pod.status["phase"], pod.status["reason"], pod.status["message"]) == (
        "Failed", "DeadlineExceeded",
        "Pod was active on the node longer than the specified deadline")
    assert pod.status["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 137
    assert cond(pod, "Ready")["status"] == "False"
    assert not fail_past_deadline(pod, clock.now() + timedelta(seconds=6))


def test_a_missing_config_map_or_key_is_a_create_container_config_error() -> None:
    pod = builders.pod("p")
    store: dict[tuple[str, str, str], Resource] = {}

    def lookup(kind: str, namespace: str, name: str) -> Resource | None:
        return store.get((kind, namespace, name))
    pod.spec["containers"][0]["envFrom"] = [{"configMapRef": {"name": "x"}},
                                            {"secretRef": {"name": "opt", "optional": True}}]
    assert config_errors(pod, lookup) == {"main": 'configmap "x" not found'}
    store[("ConfigMap", "default", "x")] = Resource(kind="ConfigMap", body={"data": {}})
    assert config_errors(pod, lookup) == {}
    pod.spec["containers"][0]["env"] = [
        {"name": "K", "valueFrom": {"configMapKeyRef": {"name": "x", "key": "k"}}}]
    assert config_errors(pod, lookup) == {"main": "couldn't find key k in ConfigMap default/x"}
    pod.spec["containers"][0]["env"] = [
        {"name": "S", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]
    assert config_errors(pod, lookup) == {"main": 'secret "s" not found'}


def test_a_container_is_ready_after_its_ready_after_delay() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.metadata.annotations[READY_AFTER] = "3s"
    assert refresh_readiness(pod, clock.now() + timedelta(seconds=1))
    assert cond(pod, "ContainersReady")["message"] == "containers with unready status: [main]"
    assert pod.status["containerStatuses"][0]["ready"] is False
    assert not refresh_readiness(pod, clock.now() + timedelta(seconds=2))
    assert refresh_readiness(pod, clock.now() + timedelta(seconds=3))
    assert cond(pod, "Ready")["status"] == "True" and "reason" not in cond(pod, "Ready")


def test_the_pod_is_ready_only_when_each_readiness_gate_is_true() -> None:
    clock = FakeClock()
    pod = running(clock)
    pod.spec["readinessGates"] = [{"conditionType": "example.com/lb"}]
    assert refresh_readiness(pod, clock.now())
    ready = cond(pod, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "ReadinessGatesNotReady",
        'corresponding condition of pod readiness gate "example.com/lb" does not exist.')
    assert cond(pod, "ContainersReady")["status"] == "True"
    pod.status["conditions"].append({"type": "example.com/lb", "status": "False"})
    refresh_readiness(pod, clock.now())
    assert cond(pod, "Ready")["message"] == (
        'the status of pod readiness gate "example.com/lb" is not "True", but False')
    pod.status["conditions"][-1]["status"] = "True"
    assert refresh_readiness(pod, clock.now())
    assert cond(pod, "Ready")["status"] == "True"
