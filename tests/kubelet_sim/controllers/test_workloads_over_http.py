"""The workload controllers as a controller-manager in another process runs them: built on
an HttpKubeClient to a `kubelet-sim apiserver` process (no API server object in this
process), their cache fed by watches. A Deployment gets its ReplicaSet and that its pods,
a Job and a StatefulSet their pods, a DaemonSet a pod pinned to each node, a scale-down
removes pods, a new image makes a second revision, and a disruption budget's status
counts the pods it covers — each read back through the client. No kubelet runs: the pods
stay Pending."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.api.node_affinity import pinned_node
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.writes import write_object
from kubelet_sim.controllers.base import ControllerManager
from kubelet_sim.controllers.deployment import REVISION
from kubelet_sim.controllers.disruption import DisruptionController
from kubelet_sim.controllers.workloads import workload_controllers
from tests.fixtures.apiserver_process import ApiServerProcess

NAMESPACE = "default"


@pytest.fixture
async def client(server: ApiServerProcess) -> AsyncIterator[HttpKubeClient]:
    """The client the test reads and writes through (not the controllers' own)."""
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    yield client
    await client.close()


@pytest.fixture
async def controllers(server: ApiServerProcess) -> AsyncIterator[ControllerManager]:
    """The Deployment, ReplicaSet, StatefulSet, DaemonSet, Job and disruption controllers
    on their own client (each workload controller waits for its cache's first lists)."""
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    manager = ControllerManager([*workload_controllers(client, {}),
                                 DisruptionController(client)])
    feed = feed_source(client)
    assert isinstance(feed, ClientFeed)  # over HTTPS, the cache is fed by watches
    manager.start()
    try:
        yield manager
    finally:
        await manager.stop()
        for controller in manager.controllers:
            await controller.recorder.flush()
        await feed.stop()
        await client.close()


async def eventually(check: Callable[[], Awaitable[bool]], what: str,
                     timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def set_field(doc: dict[str, Any], key: str, value: Any) -> bool:
    """``doc[key] = value``, as a mutation for write_object (which retries on Conflict:
    the controllers write the same objects meanwhile)."""
    doc[key] = value
    return True


def template(app: str) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def workload(api_version: str, kind: str, name: str, spec: dict[str, Any]) -> Resource:
    return Resource.from_dict({
        "apiVersion": api_version, "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": template(name),
                 **spec}})


async def owned(client: HttpKubeClient, kind: str, owner: Resource) -> list[Resource]:
    """The live (not terminating) objects of ``kind`` ``owner`` controls."""
    listed = await client.list(kind, NAMESPACE)
    return [o for o in listed.items if not o.metadata.deletion_timestamp and any(
        r.get("uid") == owner.metadata.uid and r.get("controller")
        for r in o.metadata.owner_references or [])]


async def test_a_deployment_gets_its_replica_set_and_pods_over_https(
        client: HttpKubeClient, controllers: ControllerManager) -> None:
    deployment = await client.create(workload("apps/v1", "Deployment", "web",
                                              {"replicas": 3}))

    async def three_pods() -> bool:
        sets = await owned(client, "ReplicaSet", deployment)
        return len(sets) == 1 and len(await owned(client, "Pod", sets[0])) == 3

    await eventually(three_pods, "the Deployment's ReplicaSet and its 3 pods")
    [rs] = await owned(client, "ReplicaSet", deployment)
    pod_hash = rs.metadata.labels["pod-template-hash"]
    assert rs.name == f"web-{pod_hash}"
    assert rs.spec["replicas"] == 3
    pods = await owned(client, "Pod", rs)
    assert all(p.metadata.labels == {"app": "web", "pod-template-hash": pod_hash}
               for p in pods)

    async def status_counted() -> bool:
        fresh = await client.get("Deployment", "web", NAMESPACE)
        return fresh.status.get("replicas") == 3 \
            and fresh.status.get("observedGeneration") == fresh.metadata.generation
    await eventually(status_counted, "the Deployment's status")

    await write_object(client, "Deployment", "web", NAMESPACE, lambda d: set_field(
        d.spec, "replicas", 1))

    async def one_pod() -> bool:
        fresh = await client.get("ReplicaSet", rs.name, NAMESPACE)
        return fresh.spec["replicas"] == 1 and len(await owned(client, "Pod", rs)) == 1
    await eventually(one_pod, "the scale-down to one pod")

    await write_object(client, "Deployment", "web", NAMESPACE, lambda d: set_field(
        d.spec["template"]["spec"]["containers"][0], "image", "nginx:2"))

    async def second_revision() -> bool:
        fresh = await client.get("Deployment", "web", NAMESPACE)
        revisions = sorted(r.metadata.annotations.get(REVISION, "")
                           for r in await owned(client, "ReplicaSet", deployment))
        return revisions == ["1", "2"] and fresh.metadata.annotations.get(REVISION) == "2"
    await eventually(second_revision, "a second ReplicaSet at revision 2 for the new image")


async def test_a_job_and_a_statefulset_get_their_pods_and_a_budget_counts_them_over_https(
        client: HttpKubeClient, controllers: ControllerManager) -> None:
    job = workload("batch/v1", "Job", "batch", {"completions": 2, "parallelism": 2})
    job.spec["template"]["spec"]["restartPolicy"] = "Never"
    job = await client.create(job)
    sts = await client.create(workload("apps/v1", "StatefulSet", "db", {
        "replicas": 2, "serviceName": "db", "podManagementPolicy": "Parallel"}))

    async def job_pods() -> bool:
        fresh = await client.get("Job", "batch", NAMESPACE)
        return len(await owned(client, "Pod", job)) == 2 and fresh.status.get("active") == 2
    await eventually(job_pods, "the Job's 2 active pods")

    async def set_pods() -> bool:
        return sorted(p.name for p in await owned(client, "Pod", sts)) == ["db-0", "db-1"]
    await eventually(set_pods, "the StatefulSet's pods db-0 and db-1")
    await client.create(Resource.from_dict({
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": NAMESPACE},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}}}))

    async def budget_counted() -> bool:
        status = (await client.get("PodDisruptionBudget", "db", NAMESPACE)).status
        return (status.get("expectedPods"), status.get("desiredHealthy"),
                status.get("currentHealthy"), status.get("disruptionsAllowed")) == (2, 1, 0, 0)
    await eventually(budget_counted, "the budget's status over the set's 2 pending pods")
    [revision] = await owned(client, "ControllerRevision", sts)
    assert {p.metadata.labels["controller-revision-hash"]
            for p in await owned(client, "Pod", sts)} == {revision.name}


async def test_a_daemon_set_gets_one_pod_pinned_to_each_node_over_https(
        client: HttpKubeClient, controllers: ControllerManager) -> None:
    for name in ("node-a", "node-b"):
        await client.create(builders.node(name, ready=True))
    ds = await client.create(workload("apps/v1", "DaemonSet", "agent", {}))

    async def pinned_pods() -> bool:
        pods = await owned(client, "Pod", ds)
        return sorted(pinned_node(p.spec) or "" for p in pods) == ["node-a", "node-b"]
    await eventually(pinned_pods, "one daemon pod pinned to each of the 2 nodes")

    async def status_counted() -> bool:
        status = (await client.get("DaemonSet", "agent", NAMESPACE)).status
        return (status.get("desiredNumberScheduled"), status.get("currentNumberScheduled")) \
            == (2, 2)
    await eventually(status_counted, "the DaemonSet's status")
