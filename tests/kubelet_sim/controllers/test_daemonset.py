"""The DaemonSet controller on a fake clock: one pod per eligible node (node selector,
taints and the daemon tolerations), pinned by node affinity, a new node gets its pod, and
a rolling update within maxUnavailable (a count or a percentage of the nodes) or surging
within maxSurge, OnDelete, and the status numbers with minReadySeconds."""

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


def with_strategy(strategy: dict[str, Any], min_ready: int = 0) -> dict[str, Any]:
    manifest = daemon_set()
    manifest["spec"]["updateStrategy"] = strategy
    if min_ready:
        manifest["spec"]["minReadySeconds"] = min_ready
    return manifest


def set_image(api: Any, image: str) -> None:
    ds = api.get("DaemonSet", "agent", "default")
    ds.spec["template"]["spec"]["containers"][0]["image"] = image
    api.update(ds)


def images_by_node(api: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for pod in live_pods(api):
        out.setdefault(pinned(pod), []).append(pod.spec["containers"][0]["image"])
    return {node: sorted(images) for node, images in sorted(out.items())}


async def test_max_surge_starts_the_new_pod_beside_the_old_one_until_it_is_available(
) -> None:
    api, clock = cluster(nodes=3)
    api.create(with_strategy({"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": 1, "maxUnavailable": 0}}, min_ready=5))
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    clock.advance(5)
    set_image(api, "v2")
    await settle(ctl)
    assert images_by_node(api) == {"node-1": ["v1", "v2"], "node-2": ["v1"],
                                   "node-3": ["v1"]}
    run(api, clock, only=[p.name for p in live_pods(api)
                          if p.spec["containers"][0]["image"] == "v2"])
    await settle(ctl)
    # Ready, not yet available for minReadySeconds: the old pod stays
    assert images_by_node(api)["node-1"] == ["v1", "v2"]
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["numberAvailable"], status.get("updatedNumberScheduled")) == (3, None)
    for _ in range(8):
        clock.advance(5)
        await settle(ctl)
        assert len(live_pods(api)) <= 4
        # maxUnavailable 0: every node keeps an available pod throughout
        assert api.get("DaemonSet", "agent", "default").status["numberAvailable"] == 3
        run(api, clock)
    clock.advance(5)
    await settle(ctl)
    assert images_by_node(api) == {f"node-{i}": ["v2"] for i in (1, 2, 3)}
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["updatedNumberScheduled"], status["numberAvailable"]) == (3, 3)
    assert "numberUnavailable" not in status


async def test_max_unavailable_as_a_percentage_rounds_up_over_the_nodes() -> None:
    api, clock = cluster(nodes=3)
    api.create(with_strategy({"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "50%"}}))
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    set_image(api, "v2")
    await settle(ctl)
    # 50% of 3 nodes is 1.5: two pods go at once
    assert sum(1 for p in pods(api) if p.metadata.deletion_timestamp) == 2


async def test_on_delete_replaces_a_pod_at_the_new_template_only_once_it_is_deleted(
) -> None:
    api, clock = cluster(nodes=2)
    api.create(with_strategy({"type": "OnDelete"}))
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    set_image(api, "v2")
    await settle(ctl)
    assert images_by_node(api) == {"node-1": ["v1"], "node-2": ["v1"]}
    victim = next(p for p in live_pods(api) if pinned(p) == "node-2")
    api.delete("Pod", victim.name, "default", grace_period_seconds=0)
    await settle(ctl)
    run(api, clock)
    await settle(ctl)
    assert images_by_node(api) == {"node-1": ["v1"], "node-2": ["v2"]}
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["updatedNumberScheduled"], status["numberAvailable"],
            status["desiredNumberScheduled"]) == (1, 2, 2)


async def test_status_counts_available_only_after_min_ready_seconds() -> None:
    api, clock = cluster(nodes=2)
    api.create(with_strategy({"type": "RollingUpdate"}, min_ready=10))
    ctl = DaemonSetController(api, clock=clock)
    await settle(ctl)
    run(api, clock)
    await settle(ctl)
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["numberReady"], status.get("numberAvailable"),
            status["numberUnavailable"]) == (2, None, 2)
    clock.advance(10)
    await settle(ctl)
    status = api.get("DaemonSet", "agent", "default").status
    assert (status["numberAvailable"], status.get("numberUnavailable")) == (2, None)


async def test_failed_pods_are_replaced_with_a_back_off_per_node() -> None:
    api, clock = cluster(nodes=1)
    api.create(daemon_set())
    ctl = DaemonSetController(api, clock=clock)

    async def fail_the_pod() -> str:
        await settle(ctl)
        [pod] = live_pods(api)
        run(api, clock, phase="Failed")
        await settle(ctl)
        return pod.name

    first = await fail_the_pod()
    assert first not in {p.name for p in pods(api)}  # the first failure: deleted at once
    second = await fail_the_pod()
    assert api.get("Pod", second, "default").status["phase"] == "Failed"  # within 1 s
    clock.advance(1)
    await settle(ctl)
    assert second not in {p.name for p in pods(api)}
    third = await fail_the_pod()
    clock.advance(1)
    await settle(ctl)
    assert third in {p.name for p in pods(api)}  # the back-off doubled to 2 s
    clock.advance(1)
    await settle(ctl)
    assert third not in {p.name for p in pods(api)}
