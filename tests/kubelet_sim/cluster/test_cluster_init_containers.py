"""Init containers and sidecars in a cluster (real CNI plugin execs, the kubelet on a fake
clock): the init containers run in order after the sandbox and before the app
containers, with their events; a Job-like pod's sidecar keeps running until its app
container finishes and is then stopped with the sandbox; the kubelet writes the pod's
generation it acted on as observedGeneration."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.kubelet.exit_plans import EXIT_AFTER
from kubelet_sim.testing.fake_clock import FakeClock

NODE = "node-1"
SIDECAR = {"name": "proxy", "image": "envoy:1", "restartPolicy": "Always"}


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Cluster, FakeClock]]:
    c = Cluster(ClusterConfig(nodes=default_nodes(1)))
    try:
        await c.start()
        clock = FakeClock(datetime.now(UTC))
        c.kubelets[NODE].clock = clock
        yield c, clock
    finally:
        await c.stop()


def get(c: Cluster, name: str) -> Resource:
    return c.api.get("Pod", name, "default")


def init_state(pod: Resource, name: str) -> JSON:
    state: JSON = next(s for s in pod.status["initContainerStatuses"]
                       if s["name"] == name)["state"]
    return state


def started_events(c: Cluster, name: str) -> list[str]:
    events = sorted(c.api.list("Event", "default").items,
                    key=lambda e: int(e.metadata.resource_version))
    return [e.body["involvedObject"].get("fieldPath", "") for e in events
            if e.body["involvedObject"]["name"] == name and e.body.get("reason") == "Started"]


async def test_init_containers_run_in_order_before_the_app_container(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    pod = builders.pod("web", node_name=NODE)
    pod.spec["initContainers"] = [{"name": "migrate", "image": "busybox:1"}, SIDECAR]
    pod.metadata.annotations[f"{EXIT_AFTER}.migrate"] = "2s"
    c.api.create(pod)
    await c.settle()
    pending = get(c, "web")
    assert pending.status["phase"] == "Pending" and "running" in init_state(pending, "migrate")
    assert pending.status["containerStatuses"][0]["state"]["waiting"]["reason"] == \
        "PodInitializing"
    clock.advance(2)
    await c.settle()
    running = get(c, "web")
    assert running.status["phase"] == "Running"
    assert init_state(running, "migrate")["terminated"]["reason"] == "Completed"
    assert "running" in init_state(running, "proxy")
    assert [c["status"] for c in running.status["conditions"]] == ["True"] * 5
    assert started_events(c, "web") == [
        "spec.initContainers{migrate}", "spec.initContainers{proxy}", "spec.containers{main}"]
    assert running.status["observedGeneration"] == running.metadata.generation == 1
    assert {c.get("observedGeneration") for c in running.status["conditions"]} == {1}


async def test_a_job_pod_with_a_sidecar_succeeds_and_its_sandbox_is_deleted(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    pod = builders.pod("job", node_name=NODE)
    pod.spec.update(restartPolicy="Never", initContainers=[SIDECAR])
    pod.metadata.annotations[EXIT_AFTER] = "3s"
    c.api.create(pod)
    await c.settle()
    assert get(c, "job").status["phase"] == "Running"
    dels = len([e for e in c.trace if e.call.startswith("cni DEL")])
    clock.advance(3)
    await c.settle()
    done = get(c, "job")
    assert done.status["phase"] == "Succeeded"
    assert init_state(done, "proxy")["terminated"]["exitCode"] == 0
    assert len([e for e in c.trace if e.call.startswith("cni DEL")]) > dels


async def test_the_kubelet_writes_the_generation_it_acted_on(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, _ = cluster
    c.api.create(builders.pod("gen", node_name=NODE))
    await c.settle()
    pod = get(c, "gen")
    pod.spec["containers"][0]["image"] = "nginx:2"
    c.api.update(pod)
    await c.settle()
    moved = get(c, "gen")
    assert moved.metadata.generation == 2
    assert moved.status["observedGeneration"] == 2
    ready = next(c for c in moved.status["conditions"] if c["type"] == "Ready")
    assert ready["observedGeneration"] == 2


async def test_an_init_container_waiting_for_its_config_map_runs_once_it_exists(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, _ = cluster
    pod = builders.pod("configured", node_name=NODE)
    pod.spec["initContainers"] = [{"name": "setup", "image": "busybox:1",
                                   "envFrom": [{"configMapRef": {"name": "settings"}}]}]
    c.api.create(pod)
    await c.settle()
    waiting = init_state(get(c, "configured"), "setup")["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError",
                       "message": 'configmap "settings" not found'}
    settings = Resource(kind="ConfigMap", body={"data": {"mode": "fast"}})
    settings.metadata.name, settings.metadata.namespace = "settings", "default"
    c.api.create(settings)
    await c.settle()
    started = get(c, "configured")
    assert started.status["phase"] == "Running"
    assert init_state(started, "setup")["terminated"]["reason"] == "Completed"
