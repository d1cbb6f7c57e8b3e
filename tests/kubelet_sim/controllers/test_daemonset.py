"""The DaemonSet controller on a fake clock: one pod per eligible node (node selector,
taints and the daemon tolerations), pinned by node affinity, a new node gets its pod, and
a rolling update within maxUnavailable."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.controllers.daemonset import DaemonSetController

from .workload_kubelet import cluster, live_pods, pods, run, settle


def daemon_set(**template_spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                         "containers": [{"name": "c", "image": "v1"}], **template_spec}}}}


def pinned(pod: Any) -> str:
    terms = pod.spec["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return str(terms[0]["matchFields"][0]["values"][0])


async def test_one_pod_per_node_and_a_new_node_gets_one() -> None:
    api, clock = cluster(nodes=3)
    api.create(daemon_set())
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    assert sorted(pinned(p) for p in pods(api)) == ["node-1", "node-2", "node-3"]
    assert {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
            "effect": "NoExecute"} in pods(api)[0].spec["tolerations"]
    run(api, clock)
    await settle(ctl)
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["desiredNumberScheduled"], status["currentNumberScheduled"],
            status["numberReady"], status["numberAvailable"]) == (3, 3, 3, 3)
    api.create(builders.node("node-4", "10.244.4.0/24", "192.168.0.4", ready=True))
    await settle(ctl)
    assert sorted(pinned(p) for p in pods(api)) == ["node-1", "node-2", "node-3", "node-4"]


async def test_node_selector_and_untolerated_taints_leave_nodes_out() -> None:
    api, clock = cluster(nodes=3)
    node = api.get("Node", "node-2")
    node.metadata.labels["role"] = "edge"
    api.update(node)
    node = api.get("Node", "node-3")
    node.spec["taints"] = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    api.update(node)
    api.create(daemon_set(nodeSelector={"role": "edge"}))
    await settle(DaemonSetController(api, clock=clock))
    assert [pinned(p) for p in pods(api)] == ["node-2"]


async def test_rolling_update_replaces_one_pod_at_a_time() -> None:
    api, clock = cluster(nodes=3)
    api.create(daemon_set())
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    ds = api.get("DaemonSet", "agent", "default")
    ds.spec["template"]["spec"]["containers"][0]["image"] = "v2"
    api.update(ds)
    for _ in range(8):
        await settle(ctl)
        assert sum(1 for p in pods(api) if p.metadata.deletion_timestamp) <= 1
        run(api, clock)
    assert sorted(p.spec["containers"][0]["image"] for p in live_pods(api)) == ["v2"] * 3
    status = api.get("DaemonSet", "agent", "default").status
    assert status["updatedNumberScheduled"] == 3
