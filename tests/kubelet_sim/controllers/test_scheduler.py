"""The scheduler: node filters, volume topology, WaitForFirstConsumer with selected-node."""

from __future__ import annotations

from kubelet_sim import builders
from kubelet_sim.controllers.common import ANN_SELECTED_NODE
from kubelet_sim.model import Resource, condition
from tests.kubelet_sim.controllers.conftest import DRIVER, TOPOLOGY_KEY, Cluster


def scheduled(pod: Resource) -> dict[str, object]:
    cond = condition(pod, "PodScheduled") or {}
    return {k: cond.get(k) for k in ("status", "reason", "message")}


def set_node(cluster: Cluster, name: str, *, ready: bool = True,
             unschedulable: bool = False) -> None:
    node = cluster.api.get("Node", name)
    node.spec["unschedulable"] = unschedulable
    cluster.api.update(node)
    node = cluster.api.get("Node", name)
    node.status["conditions"][0]["status"] = "True" if ready else "False"
    cluster.api.update_status(node)


async def test_pending_pod_is_bound_to_a_ready_node_with_pod_scheduled_true(
    cluster: Cluster,
) -> None:
    cluster.pod(claim=None)

    await cluster.settle()

    pod = cluster.get("Pod", "app")
    assert pod.spec["nodeName"] == "node-1"
    assert scheduled(pod) == {"status": "True", "reason": None, "message": None}


async def test_pods_spread_to_the_node_running_fewest_pods(cluster: Cluster) -> None:
    cluster.pod("a", claim=None)
    await cluster.settle()
    cluster.pod("b", claim=None)

    await cluster.settle()

    assert cluster.get("Pod", "b").spec["nodeName"] == "node-2"


async def test_not_ready_and_unschedulable_nodes_leave_the_pod_unschedulable(
    cluster: Cluster,
) -> None:
    set_node(cluster, "node-1", ready=False)
    set_node(cluster, "node-2", unschedulable=True)
    cluster.pod(claim=None)

    await cluster.settle()

    pod = cluster.get("Pod", "app")
    assert "nodeName" not in pod.spec
    assert scheduled(pod) == {
        "status": "False", "reason": "Unschedulable",
        "message": "0/2 nodes are available: 1 node(s) had untolerated taint "
                   "{node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable."}

    set_node(cluster, "node-1", ready=True)
    await cluster.settle()

    assert cluster.get("Pod", "app").spec["nodeName"] == "node-1"


async def test_pod_with_a_missing_claim_is_unschedulable(cluster: Cluster) -> None:
    cluster.pod(claim="nope")

    await cluster.settle()

    assert scheduled(cluster.get("Pod", "app"))["message"] == \
        'persistentvolumeclaim "nope" not found'


async def test_pod_with_an_unbound_immediate_claim_waits_for_binding(cluster: Cluster) -> None:
    cluster.storage_class(provisioner="other.example.com")
    cluster.claim()
    cluster.pod()

    await cluster.settle()

    pod = cluster.get("Pod", "app")
    assert "nodeName" not in pod.spec
    assert scheduled(pod)["message"] == "pod has unbound immediate PersistentVolumeClaims"


async def test_bound_volume_node_affinity_picks_the_node_in_its_topology(
    cluster: Cluster,
) -> None:
    cluster.storage_class(allowed_topologies=[{"matchLabelExpressions": [
        {"key": TOPOLOGY_KEY, "values": ["zone-b"]}]}])
    cluster.claim()
    await cluster.settle()
    cluster.pod()

    await cluster.settle()

    assert cluster.get("Pod", "app").spec["nodeName"] == "node-2"


async def test_volume_node_affinity_conflict_on_every_node_is_reported(
    cluster: Cluster,
) -> None:
    affinity = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": TOPOLOGY_KEY, "operator": "In", "values": ["zone-z"]}]}]}}
    cluster.api.create(builders.csi_persistent_volume(
        "pinned", driver=DRIVER, volume_handle="h", storage="1Gi", storage_class="csi",
        node_affinity=affinity))
    cluster.storage_class(provisioner="other.example.com")
    cluster.claim()
    cluster.pod()

    await cluster.settle()

    assert scheduled(cluster.get("Pod", "app"))["message"] == (
        "0/2 nodes are available: 2 node(s) had volume node affinity conflict.")


async def test_wait_for_first_consumer_claim_is_provisioned_in_the_selected_node_topology(
    cluster: Cluster,
) -> None:
    set_node(cluster, "node-1", unschedulable=True)
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer")
    cluster.claim()
    await cluster.settle()
    assert cluster.driver.calls == []  # nothing before a consumer exists

    cluster.pod()
    await cluster.settle()

    claim = cluster.get("PersistentVolumeClaim", "data")
    assert claim.metadata.annotations[ANN_SELECTED_NODE] == "node-2"
    (create,) = cluster.requests("CreateVolume")
    assert dict(create.accessibility_requirements.preferred[0].segments) == {
        TOPOLOGY_KEY: "zone-b"}
    assert claim.status["phase"] == "Bound"
    assert cluster.get("Pod", "app").spec["nodeName"] == "node-2"


async def test_wait_for_first_consumer_respects_allowed_topologies(cluster: Cluster) -> None:
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer", allowed_topologies=[
        {"matchLabelExpressions": [{"key": TOPOLOGY_KEY, "values": ["zone-b"]}]}])
    cluster.claim()
    cluster.pod()

    await cluster.settle()

    assert cluster.get("PersistentVolumeClaim", "data").metadata.annotations[
        ANN_SELECTED_NODE] == "node-2"
    assert cluster.get("Pod", "app").spec["nodeName"] == "node-2"


async def test_pod_is_not_bound_while_its_selected_node_claim_is_unbound(
    cluster: Cluster,
) -> None:
    import grpc
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.RESOURCE_EXHAUSTED, "full")
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer")
    cluster.claim()
    cluster.pod()

    await cluster.settle()
    assert "nodeName" not in cluster.get("Pod", "app").spec

    await cluster.retry_after_backoff()
    assert cluster.get("Pod", "app").spec["nodeName"] == "node-1"


async def test_no_room_in_the_selected_topology_drops_selected_node_for_rescheduling(
    cluster: Cluster,
) -> None:
    import grpc
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.RESOURCE_EXHAUSTED, "no room")
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer")
    cluster.claim()
    start = cluster.api.resource_version
    cluster.pod()

    await cluster.settle()

    values = [e.object.metadata.annotations.get(ANN_SELECTED_NODE)
              for e in cluster.api.events_since(start, kind="PersistentVolumeClaim")]
    changes = [v for i, v in enumerate(values) if i == 0 or v != values[i - 1]]
    # selected, dropped by the provisioner, selected again by the scheduler
    assert changes == ["node-1", None, "node-1"]


async def test_node_at_its_csi_volume_limit_is_skipped(cluster: Cluster) -> None:
    csinode = cluster.api.get("CSINode", "node-1")
    csinode.spec["drivers"][0]["allocatable"] = {"count": 1}
    cluster.api.update(csinode)
    set_node(cluster, "node-2", unschedulable=True)
    cluster.storage_class(volume_binding_mode="WaitForFirstConsumer")
    cluster.claim("one")
    cluster.claim("two")
    cluster.pod("first", claim="one")
    await cluster.settle()
    assert cluster.get("Pod", "first").spec["nodeName"] == "node-1"

    cluster.pod("second", claim="two")
    await cluster.settle()

    assert scheduled(cluster.get("Pod", "second"))["message"] == (
        "0/2 nodes are available: 1 node(s) exceed max volume count, "
        "1 node(s) were unschedulable.")
