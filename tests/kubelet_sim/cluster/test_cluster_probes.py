"""The kubelet's prober in a cluster (real CNI plugin execs, the kubelet on a fake clock):
a failing readiness probe takes the pod out of its Service's EndpointSlice and a passing
one puts it back; a failing liveness probe restarts the container with the kubelet's
events, then backs off."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.testing.fake_clock import FakeClock

NODE = "node-1"
SIM = "sim.cni-csi-mini.io/"


@pytest.fixture
async def cluster() -> AsyncIterator[tuple[Cluster, FakeClock]]:
    c = Cluster(ClusterConfig(nodes=default_nodes(1)))
    try:
        await c.start()
        # whole seconds: the container starts (its startedAt) at the probes' tick
        clock = FakeClock(datetime.now(UTC).replace(microsecond=0))
        c.kubelets[NODE].clock = clock
        yield c, clock
    finally:
        await c.stop()


def probed(name: str, annotations: dict[str, str], **probes: JSON) -> Resource:
    pod = builders.pod(name, node_name=NODE, labels={"app": name})
    pod.spec["containers"][0].update(probes)
    pod.metadata.annotations.update(annotations)
    return pod


def container(c: Cluster, name: str) -> JSON:
    status: JSON = c.api.get("Pod", name, "default").status["containerStatuses"][0]
    return status


def endpoint_ready(c: Cluster, service: str) -> list[bool]:
    slices = [s for s in c.api.list("EndpointSlice", "default").items
              if s.metadata.labels.get("kubernetes.io/service-name") == service]
    return [e["conditions"]["ready"] for s in slices for e in s.body.get("endpoints") or []]


async def test_a_failing_readiness_probe_takes_the_pod_out_of_its_endpoints(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    probe = {"httpGet": {"path": "/ready", "port": 80}, "periodSeconds": 1,
             "failureThreshold": 2}
    c.api.create(probed("web", {SIM + "readiness-passes-after": "2s",
                                SIM + "readiness-fails-after": "5s"}, readinessProbe=probe))
    service = Resource(kind="Service", spec={"selector": {"app": "web"},
                                             "ports": [{"port": 80}]})
    service.metadata.name, service.metadata.namespace = "web", "default"
    c.api.create(service)
    await c.settle()
    assert container(c, "web")["ready"] is False and endpoint_ready(c, "web") == [False]
    clock.advance(2)
    await c.settle()
    assert container(c, "web")["ready"] is True and endpoint_ready(c, "web") == [True]
    clock.advance(4)  # failures at 5 and 6 s
    await c.settle()
    pod = c.api.get("Pod", "web", "default")
    ready = next(x for x in pod.status["conditions"] if x["type"] == "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ContainersNotReady")
    assert endpoint_ready(c, "web") == [False]
    unhealthy = [e.message for e in c.events.for_object("Pod", "web", "default")
                 if e.reason == "Unhealthy"]
    assert "Readiness probe failed: HTTP probe failed with statuscode: 500" in unhealthy


async def test_a_failing_liveness_probe_restarts_the_container_then_backs_off(
        cluster: tuple[Cluster, FakeClock]) -> None:
    c, clock = cluster
    probe = {"tcpSocket": {"port": 8080}, "periodSeconds": 1, "failureThreshold": 1}
    c.api.create(probed("live", {SIM + "liveness-fails-after": "1s"}, livenessProbe=probe))
    await c.settle()
    first_id = container(c, "live")["containerID"]
    clock.advance(1)
    await c.settle()
    status = container(c, "live")
    assert status["restartCount"] == 1 and status["containerID"] != first_id
    assert status["lastState"]["terminated"]["reason"] == "Completed"
    reasons = [(e.reason, e.message) for e in c.events.for_object("Pod", "live", "default")]
    pod_ip = c.api.get("Pod", "live", "default").status["podIP"]
    assert ("Unhealthy", f"Liveness probe failed: dial tcp {pod_ip}:8080: connect: "
            "connection refused") in reasons
    assert ("Killing", "Container main failed liveness probe, will be restarted") in reasons
    clock.advance(1)  # killed again within the back-off
    await c.settle()
    status = container(c, "live")
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    clock.advance(10)
    await c.settle()
    status = container(c, "live")
    assert status["restartCount"] == 2 and "running" in status["state"]
