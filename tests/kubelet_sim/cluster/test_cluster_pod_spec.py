"""The kubelet making pods follow their spec in a cluster (real CNI plugin execs, the
kubelet on a fake clock): activeDeadlineSeconds fails the pod and stops its sandbox with
CNI DEL; a container waiting for a missing ConfigMap starts once it exists, the pod's
other containers running meanwhile; a crashing
container backs off on the kubelet's clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.kubelet.container_exit import EXIT_AFTER, EXIT_CODE
from kubelet_sim.testing.fake_clock import FakeClock

NODE = "node-1"


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


def container(pod: Resource) -> JSON:
    status: JSON = pod.status["containerStatuses"][0]
    return status


async def test_past_its_deadline_the_pod_fails_and_its_sandbox_is_deleted(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    pod = builders.pod("brief", node_name=NODE)
    pod.spec["activeDeadlineSeconds"] = 5
    c.api.create(pod)
    await c.settle()
    assert c.api.get("Pod", "brief", "default").status["phase"] == "Running"
    dels = len([e for e in c.trace if e.call.startswith("cni DEL")])
    clock.advance(5)
    await c.settle()
    status = c.api.get("Pod", "brief", "default").status
    assert (status["phase"], status["reason"]) == ("Failed", "DeadlineExceeded")
    assert len([e for e in c.trace if e.call.startswith("cni DEL")]) > dels


async def test_a_container_waiting_for_its_config_map_starts_once_it_exists(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, _ = cluster
    pod = builders.pod("configured", node_name=NODE)
    pod.spec["containers"][0]["env"] = [
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}}]
    c.api.create(pod)
    await c.settle()
    waiting = container(c.api.get("Pod", "configured", "default"))["state"]["waiting"]
    assert waiting == {"reason": "CreateContainerConfigError",
                       "message": 'configmap "settings" not found'}
    settings = Resource(kind="ConfigMap", body={"data": {"other": "x"}})
    settings.metadata.name, settings.metadata.namespace = "settings", "default"
    c.api.create(settings)
    await c.settle()
    waiting = container(c.api.get("Pod", "configured", "default"))["state"]["waiting"]
    assert waiting["message"] == "couldn't find key mode in ConfigMap default/settings"
    cm = c.api.get("ConfigMap", "settings", "default")
    cm.body["data"] = {"mode": "fast"}
    c.api.update(cm)
    await c.settle()
    started = c.api.get("Pod", "configured", "default")
    assert started.status["phase"] == "Running" and "running" in container(started)["state"]


def container_events(c: Cluster, pod: str) -> list[tuple[str, str]]:
    """(reason, container) of the kubelet's events about ``pod``'s containers."""
    found = []
    for event in c.api.list("Event", "default").items:
        involved = event.body.get("involvedObject", {})
        path = str(involved.get("fieldPath", ""))
        if involved.get("name") == pod and path.startswith("spec.containers{"):
            found.append((str(event.body.get("reason")), path[len("spec.containers{"):-1]))
    return found


async def test_the_other_containers_start_while_one_waits_for_its_config_map(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    pod = builders.pod("mixed", node_name=NODE)
    pod.spec["containers"] = [
        {"name": "app", "image": "nginx", "envFrom": [{"configMapRef": {"name": "conf"}}]},
        {"name": "sidecar", "image": "busybox"}]
    c.api.create(pod)
    await c.settle()
    waiting = c.api.get("Pod", "mixed", "default").status
    states = {s["name"]: s for s in waiting["containerStatuses"]}
    assert waiting["phase"] == "Pending"  # getPhase: a container waiting, never run
    assert states["app"]["state"] == {"waiting": {"reason": "CreateContainerConfigError",
                                                  "message": 'configmap "conf" not found'}}
    assert "running" in states["sidecar"]["state"] and states["sidecar"]["started"]
    assert waiting["podIP"]
    ready = next(cond for cond in waiting["conditions"] if cond["type"] == "ContainersReady")
    assert (ready["status"], ready["message"]) == (
        "False", "containers with unready status: [app]")
    assert ("Started", "sidecar") in container_events(c, "mixed")
    assert ("Failed", "app") in container_events(c, "mixed")
    assert ("Started", "app") not in container_events(c, "mixed")

    clock.advance(7)
    conf = Resource(kind="ConfigMap", body={"data": {"mode": "fast"}})
    conf.metadata.name, conf.metadata.namespace = "conf", "default"
    c.api.create(conf)
    await c.settle()
    running = c.api.get("Pod", "mixed", "default").status
    now = {s["name"]: s for s in running["containerStatuses"]}
    assert running["phase"] == "Running"
    assert "running" in now["app"]["state"]
    assert now["sidecar"]["state"] == states["sidecar"]["state"]  # started once, not again
    assert now["app"]["state"]["running"]["startedAt"] > \
        now["sidecar"]["state"]["running"]["startedAt"]
    assert container_events(c, "mixed").count(("Started", "sidecar")) == 1
    assert container_events(c, "mixed").count(("Started", "app")) == 1


async def test_a_crashing_container_backs_off_on_the_kubelets_clock(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    pod = builders.pod("crash", node_name=NODE)
    pod.metadata.annotations.update({EXIT_AFTER: "1s", EXIT_CODE: "1"})
    c.api.create(pod)
    await c.settle()
    for _ in range(2):  # the first exit restarts at once, the second backs off
        clock.advance(1)
        await c.settle()
    status = container(c.api.get("Pod", "crash", "default"))
    assert status["restartCount"] == 1
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    clock.advance(10)
    await c.settle()
    status = container(c.api.get("Pod", "crash", "default"))
    assert status["restartCount"] == 2 and "running" in status["state"]
