"""A node started without a CNI network config: the runtime reports NetworkReady=false, the
node is not Ready and its pods wait without a sandbox; once a config is written, the next
runtime status check makes the node Ready and the pods run. Real plugin execs."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes

NODE = "node-1"


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    # Runtime status on every pass, so the test need not wait out the kubelet's period.
    c = Cluster(ClusterConfig(nodes=default_nodes(1), missing_cni_config=[NODE],
                              runtime_status_period=0.0))
    try:
        await c.start()
        yield c
    finally:
        await c.stop()


def condition(obj_status: JSON, kind: str) -> JSON:
    return next(c for c in obj_status.get("conditions", []) if c["type"] == kind)


def cni_calls(cluster: Cluster, verb: str) -> list[str]:
    return [e.call for e in cluster.trace if e.call.startswith(f"cni {verb}")]


async def test_node_without_network_config_is_not_ready_with_the_network_ready_message(
    cluster: Cluster,
) -> None:
    ready = condition(cluster.api.get("Node", NODE).status, "Ready")
    assert ready["status"] == "False"
    assert ready["reason"] == "KubeletNotReady"
    assert "NetworkReady=false" in ready["message"]
    assert "no network config found" in ready["message"]
    unavailable = condition(cluster.api.get("Node", NODE).status, "NetworkUnavailable")
    assert (unavailable["status"], unavailable["reason"]) == ("True", "NetworkPluginNotReady")
    assert "no network config found" in unavailable["message"]
    pressure = {c["type"]: (c["status"], c["reason"]) for c in
                cluster.api.get("Node", NODE).status["conditions"] if "Pressure" in c["type"]}
    assert pressure == {"MemoryPressure": ("False", "KubeletHasSufficientMemory"),
                        "DiskPressure": ("False", "KubeletHasNoDiskPressure"),
                        "PIDPressure": ("False", "KubeletHasSufficientPID")}


async def test_pods_wait_without_a_sandbox_while_the_network_is_not_ready(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.pod("bound", node_name=NODE))
    cluster.api.create(builders.pod("unbound"))
    await cluster.settle()
    bound = cluster.api.get("Pod", "bound", "default")
    assert bound.status["phase"] == "Pending"
    waiting = condition(bound.status, "Ready")
    assert waiting["status"] == "False"
    assert "network is not ready" in waiting["message"]
    assert "NetworkReady=false reason:NetworkPluginNotReady" in waiting["message"]
    unbound = cluster.api.get("Pod", "unbound", "default")
    assert "nodeName" not in unbound.spec
    scheduled = condition(unbound.status, "PodScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("False", "Unschedulable")
    assert "node.kubernetes.io/not-ready" in scheduled["message"]
    assert cluster.kubelets[NODE].runtime.list_pod_sandboxes() == []
    assert cni_calls(cluster, "ADD") == []


async def test_writing_the_network_config_makes_the_node_ready_and_the_pods_run(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.pod("bound", node_name=NODE))
    cluster.api.create(builders.pod("unbound"))
    await cluster.settle()
    cluster.write_cni_config(cluster.config.nodes[0])
    await cluster.settle()
    node = cluster.api.get("Node", NODE)
    assert condition(node.status, "Ready")["status"] == "True"
    assert (condition(node.status, "NetworkUnavailable")["status"],
            condition(node.status, "NetworkUnavailable")["reason"]) == ("False", "CNIStatusReady")
    assert not [t for t in node.spec.get("taints", [])
                if t["key"] == "node.kubernetes.io/not-ready"]
    pods = {p.name: p for p in cluster.api.list("Pod").items}
    assert {name: p.status["phase"] for name, p in pods.items()} == \
        {"bound": "Running", "unbound": "Running"}
    assert sorted(p.status["podIP"] for p in pods.values()) == ["10.244.1.2", "10.244.1.3"]
    assert len(cluster.kubelets[NODE].runtime.list_pod_sandboxes()) == 2
    assert cni_calls(cluster, "ADD") == ["cni ADD emu-loopback", "cni ADD emu-bridge"] * 2


async def test_a_new_network_config_is_seen_only_at_the_next_runtime_status_check() -> None:
    # The kubelet asks the runtime for its status every period, not on every pass.
    cluster = Cluster(ClusterConfig(nodes=default_nodes(1), missing_cni_config=[NODE],
                                    runtime_status_period=3600.0))
    try:
        await cluster.start()
        statuses_before = len(cni_calls(cluster, "STATUS"))
        cluster.write_cni_config(cluster.config.nodes[0])
        await cluster.settle()
        assert condition(cluster.api.get("Node", NODE).status, "Ready")["status"] == "False"
        assert len(cni_calls(cluster, "STATUS")) == statuses_before
        cluster.kubelets[NODE].runtime_status_period = 0.0
        await cluster.settle()
        assert condition(cluster.api.get("Node", NODE).status, "Ready")["status"] == "True"
        assert len(cni_calls(cluster, "STATUS")) > statuses_before
    finally:
        await cluster.stop()


async def test_a_pod_waiting_for_the_network_gets_a_network_not_ready_warning_event(
    cluster: Cluster,
) -> None:
    cluster.api.create(builders.pod("bound", node_name=NODE))
    await cluster.settle()
    (event,) = cluster.events.warnings("Pod", "bound", "default")
    assert (event.reason, event.component) == ("NetworkNotReady", "kubelet")
    assert event.message.startswith("network is not ready: container runtime network not "
                                    "ready: NetworkReady=false reason:NetworkPluginNotReady")
