"""The scheduler: node filters, volume topology, WaitForFirstConsumer with selected-node."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, condition
from kubelet_sim.controllers.common import ANN_SELECTED_NODE, unique_volume_name
from tests.kubelet_sim.controller_cluster import DRIVER, TOPOLOGY_KEY, Cluster

# the DefaultPreemption plugin's part of the message (see controllers/fit_error.py)
NOT_HELPFUL = " preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
NO_VICTIMS = " preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
ONE_EACH = (" preemption: 0/2 nodes are available: 1 No preemption victims found for incoming "
            "pod, 1 Preemption is not helpful for scheduling.")


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


async def test_binding_goes_through_pods_binding_and_leaves_the_generation(
    cluster: Cluster,
) -> None:
    cluster.pod(claim=None)

    await cluster.settle()

    pod = cluster.get("Pod", "app")
    assert pod.spec["nodeName"] and pod.metadata.generation == 1


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
                   "{node.kubernetes.io/not-ready: }, 1 node(s) were unschedulable. preemption: "
                   "0/2 nodes are available: 2 Preemption is not helpful for scheduling."}

    set_node(cluster, "node-1", ready=True)
    await cluster.settle()

    assert cluster.get("Pod", "app").spec["nodeName"] == "node-1"


async def test_pod_with_a_missing_claim_is_unschedulable(cluster: Cluster) -> None:
    cluster.pod(claim="nope")

    await cluster.settle()

    assert scheduled(cluster.get("Pod", "app"))["message"] == (
        '0/2 nodes are available: persistentvolumeclaim "nope" not found.' + NOT_HELPFUL)


async def test_pod_with_an_unbound_immediate_claim_waits_for_binding(cluster: Cluster) -> None:
    cluster.storage_class(provisioner="other.example.com")
    cluster.claim()
    cluster.pod()

    await cluster.settle()

    pod = cluster.get("Pod", "app")
    assert "nodeName" not in pod.spec
    assert scheduled(pod)["message"] == (
        "0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        + NOT_HELPFUL)


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
        "0/2 nodes are available: 2 node(s) had volume node affinity conflict." + NOT_HELPFUL)


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
        "1 node(s) were unschedulable." + ONE_EACH)


# -- spreading and volume limits with pods assumed for WaitForFirstConsumer ----------------------


def set_volume_limit(cluster: Cluster, node: str, count: int) -> None:
    csinode = cluster.api.get("CSINode", node)
    csinode.spec["drivers"][0]["allocatable"] = {"count": count}
    cluster.api.update(csinode)


def late_claim_pods(cluster: Cluster, count: int) -> list[str]:
    """``count`` pods, each with its own WaitForFirstConsumer claim, created at once."""
    cluster.storage_class("late", volume_binding_mode="WaitForFirstConsumer")
    for i in range(count):
        cluster.claim(f"data-{i}", storage_class="late")
        cluster.pod(f"app-{i}", claim=f"data-{i}")
    return [f"app-{i}" for i in range(count)]


async def one_pod_on_a_node_with_room_for_one(cluster: Cluster) -> None:
    """node-1 takes one CSI volume, node-2 takes no pods; app-0 with claim data-0 runs on
    node-1."""
    set_volume_limit(cluster, "node-1", 1)
    set_node(cluster, "node-2", unschedulable=True)
    late_claim_pods(cluster, 1)
    await cluster.settle()
    assert cluster.get("Pod", "app-0").spec["nodeName"] == "node-1"


def nodes_of(cluster: Cluster, pods: list[str]) -> list[object]:
    return [cluster.get("Pod", name).spec.get("nodeName") for name in pods]


async def test_pods_are_scheduled_first_come_first_served_not_by_name(
    cluster: Cluster,
) -> None:
    """Eleven pods for a node with room for ten volumes, created at once: the last one
    created (app-10, which sorts before app-2 by name) is the one left waiting."""
    set_volume_limit(cluster, "node-1", 10)
    set_node(cluster, "node-2", unschedulable=True)
    pods = late_claim_pods(cluster, 11)

    await cluster.settle()

    assert nodes_of(cluster, pods) == ["node-1"] * 10 + [None]
    assert scheduled(cluster.get("Pod", "app-10"))["message"] == (
        "0/2 nodes are available: 1 node(s) exceed max volume count, "
        "1 node(s) were unschedulable." + ONE_EACH)


async def test_pods_assumed_while_their_claims_are_provisioned_count_for_spreading(
    cluster: Cluster,
) -> None:
    pods = late_claim_pods(cluster, 4)

    await cluster.settle()

    assert sorted(map(str, nodes_of(cluster, pods))) == ["node-1", "node-1", "node-2", "node-2"]


async def test_pods_assumed_on_a_node_count_toward_its_volume_limit(cluster: Cluster) -> None:
    set_volume_limit(cluster, "node-1", 1)
    set_volume_limit(cluster, "node-2", 1)
    pods = late_claim_pods(cluster, 3)

    await cluster.settle()

    assert nodes_of(cluster, pods) == ["node-1", "node-2", None]
    message = "0/2 nodes are available: 2 node(s) exceed max volume count." + NO_VICTIMS
    assert scheduled(cluster.get("Pod", "app-2")) == {
        "status": "False", "reason": "Unschedulable", "message": message}
    assert cluster.events("Pod", "app-2") == [f"FailedScheduling: {message}"]


async def test_a_volume_count_of_zero_admits_no_csi_volume(cluster: Cluster) -> None:
    set_volume_limit(cluster, "node-1", 0)
    pods = late_claim_pods(cluster, 1)

    await cluster.settle()

    assert nodes_of(cluster, pods) == ["node-2"]


async def test_a_volume_shared_with_a_pod_on_the_node_does_not_count_again(
    cluster: Cluster,
) -> None:
    await one_pod_on_a_node_with_room_for_one(cluster)
    cluster.pod("second", claim="data-0")

    await cluster.settle()

    assert nodes_of(cluster, ["app-0", "second"]) == ["node-1", "node-1"]


async def test_a_volume_still_attached_to_the_node_counts_toward_its_limit(
    cluster: Cluster,
) -> None:
    await one_pod_on_a_node_with_room_for_one(cluster)
    pv = cluster.get("PersistentVolume", cluster.get("PersistentVolumeClaim", "data-0")
                     .spec["volumeName"])
    # The pod finished, but the kubelet has not unmounted yet: the volume stays attached.
    cluster.set_volumes_in_use("node-1", [unique_volume_name(
        DRIVER, pv.spec["csi"]["volumeHandle"])])
    first = cluster.get("Pod", "app-0")
    first.status["phase"] = "Succeeded"
    cluster.api.update_status(first)
    await cluster.settle()
    assert cluster.names("VolumeAttachment")
    cluster.claim("two", storage_class="late")
    cluster.pod("second", claim="two")

    await cluster.settle()

    assert scheduled(cluster.get("Pod", "second"))["message"] == (
        "0/2 nodes are available: 1 node(s) exceed max volume count, "
        "1 node(s) were unschedulable." + ONE_EACH)


async def test_claims_of_another_driver_do_not_count_toward_this_drivers_limit(
    cluster: Cluster,
) -> None:
    await one_pod_on_a_node_with_room_for_one(cluster)
    cluster.storage_class("other", provisioner="other.example.com",
                          volume_binding_mode="WaitForFirstConsumer")
    cluster.claim("elsewhere", storage_class="other")
    cluster.pod("other-app", claim="elsewhere")

    await cluster.settle()

    assert cluster.get("PersistentVolumeClaim", "elsewhere").metadata.annotations[
        ANN_SELECTED_NODE] == "node-1"


async def test_a_pod_deleted_while_assumed_no_longer_counts_on_its_node(
    cluster: Cluster,
) -> None:
    import grpc
    cluster.driver.fail_next("CreateVolume", grpc.StatusCode.UNAVAILABLE, "busy", times=50)
    late_claim_pods(cluster, 1)
    await cluster.settle()
    assert cluster.get("PersistentVolumeClaim", "data-0").metadata.annotations[
        ANN_SELECTED_NODE] == "node-1"
    cluster.api.delete("Pod", "app-0", "default")
    cluster.pod("next", claim=None)

    await cluster.settle()

    assert cluster.get("Pod", "next").spec["nodeName"] == "node-1"


async def test_pods_sharing_an_unbound_claim_follow_the_node_selected_for_it(
    cluster: Cluster,
) -> None:
    late_claim_pods(cluster, 1)
    cluster.pod("app-0-twin", claim="data-0")

    await cluster.settle()

    assert nodes_of(cluster, ["app-0", "app-0-twin"]) == ["node-1", "node-1"]
    assert cluster.get("PersistentVolumeClaim", "data-0").status["phase"] == "Bound"
