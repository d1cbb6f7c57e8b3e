"""Volume kinds through real processes: CSI inline ephemeral volumes (no controller calls, no
stage, the handle Kubernetes derives from the pod) and WaitForFirstConsumer provisioning
(the volume made in the topology of the node the scheduler picked)."""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import AsyncIterator

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import DRIVER_NAME, Cluster
from tests.fixtures.cluster import running_cluster

POD_INFO = "csi.storage.k8s.io/"


@pytest.fixture
async def one_node() -> AsyncIterator[Cluster]:
    async with running_cluster(1) as c:
        yield c


@pytest.fixture
async def two_nodes() -> AsyncIterator[Cluster]:
    async with running_cluster(2) as c:
        yield c


def requests(cluster: Cluster, start: int, method: str) -> list[JSON]:
    return [e.request for e in cluster.trace.events[start:] if e.call.endswith(f"/{method}")]


# -- inline ephemeral --------------------------------------------------------------------------


async def test_inline_ephemeral_volume_is_published_without_controller_calls_or_stage(
    one_node: Cluster,
) -> None:
    cluster = one_node
    start = len(cluster.trace.events)
    cluster.api.create(builders.pod("scratchy", service_account="builder", volumes=[
        builders.csi_inline_volume("scratch", DRIVER_NAME, {"purpose": "cache"})]))
    await cluster.settle()
    pod = cluster.api.get("Pod", "scratchy", "default")
    assert pod.status["phase"] == "Running"
    calls = [e.call for e in cluster.trace.events[start:] if e.call.startswith("csi.")]
    assert not [c for c in calls if c.startswith("csi.Controller/")]
    assert "csi.Node/NodeStageVolume" not in calls
    assert not cluster.api.list("VolumeAttachment").items
    [publish] = requests(cluster, start, "NodePublishVolume")
    uid = pod.metadata.uid
    assert publish["volume_id"] == "csi-" + hashlib.sha256(f"{uid}scratch".encode()).hexdigest()
    assert "staging_target_path" not in publish
    target = (cluster.kubelets["node-1"].paths.root / "pods" / uid / "volumes"
              / "kubernetes.io~csi" / "scratch" / "mount")
    assert publish["target_path"] == str(target)
    assert target.is_dir()
    assert publish["volume_context"] == {
        "purpose": "cache",
        POD_INFO + "pod.name": "scratchy",
        POD_INFO + "pod.namespace": "default",
        POD_INFO + "pod.uid": uid,
        POD_INFO + "serviceAccount.name": "builder",
        POD_INFO + "ephemeral": "true",
    }


async def test_inline_ephemeral_volume_is_unpublished_with_its_pod_and_never_unstaged(
    one_node: Cluster,
) -> None:
    cluster = one_node
    cluster.api.create(builders.pod("scratchy", volumes=[
        builders.csi_inline_volume("scratch", DRIVER_NAME)]))
    await cluster.settle()
    pod = cluster.api.get("Pod", "scratchy", "default")
    [publish] = requests(cluster, 0, "NodePublishVolume")
    start = len(cluster.trace.events)
    cluster.api.delete("Pod", "scratchy", "default")
    await cluster.settle()
    [unpublish] = requests(cluster, start, "NodeUnpublishVolume")
    assert unpublish["volume_id"] == publish["volume_id"]
    assert unpublish["target_path"] == publish["target_path"]
    assert not requests(cluster, start, "NodeUnstageVolume")
    assert not [e for e in cluster.trace.events[start:] if e.result != "OK"]
    assert not (cluster.kubelets["node-1"].paths.pods_dir / pod.metadata.uid / "volumes"
                / "kubernetes.io~csi" / "scratch").exists()


# -- WaitForFirstConsumer ----------------------------------------------------------------------


def node_affinity_admits(pv: Resource, node: Resource) -> bool:
    """The PV's required node affinity (In expressions) matches the node's labels."""
    terms = pv.spec["nodeAffinity"]["required"]["nodeSelectorTerms"]
    labels = node.metadata.labels
    return any(all(e["operator"] == "In" and labels.get(e["key"]) in e["values"]
                   for e in term["matchExpressions"]) for term in terms)


async def test_wait_for_first_consumer_provisions_in_the_selected_nodes_topology(
    two_nodes: Cluster,
) -> None:
    cluster = two_nodes
    api = cluster.api
    api.create(builders.storage_class("late", DRIVER_NAME,
                                      volume_binding_mode="WaitForFirstConsumer"))
    api.create(builders.persistent_volume_claim("data", storage="1Gi", storage_class="late"))
    await cluster.settle()
    assert api.get("PersistentVolumeClaim", "data", "default").status.get("phase") == "Pending"
    assert not requests(cluster, 0, "CreateVolume")

    pod = builders.pod("consumer", volumes=[builders.pvc_volume("data", "data")])
    pod.spec["nodeSelector"] = {"kubernetes.io/hostname": "node-2"}
    api.create(pod)
    await cluster.settle()

    pvc = api.get("PersistentVolumeClaim", "data", "default")
    assert pvc.metadata.annotations["volume.kubernetes.io/selected-node"] == "node-2"
    assert pvc.status["phase"] == "Bound"
    node2 = api.get("Node", "node-2")
    [topology_key] = next(d["topologyKeys"] for d in api.get("CSINode", "node-2").spec["drivers"]
                          if d["name"] == DRIVER_NAME)
    node2_segment = {topology_key: node2.metadata.labels[topology_key]}
    [create] = requests(cluster, 0, "CreateVolume")
    accessibility = create["accessibility_requirements"]
    assert isinstance(accessibility, dict)
    assert accessibility["preferred"][0]["segments"] == node2_segment
    pv = api.get("PersistentVolume", pvc.spec["volumeName"])
    assert node_affinity_admits(pv, node2)
    assert not node_affinity_admits(pv, api.get("Node", "node-1"))
    consumer = api.get("Pod", "consumer", "default")
    assert (consumer.spec["nodeName"], consumer.status["phase"]) == ("node-2", "Running")
    assert {e.node for e in cluster.trace if e.call.endswith("/NodeStageVolume")} == {"node-2"}


# -- read-only claims --------------------------------------------------------------------------


async def run_read_only_claim_pod(cluster: Cluster) -> Resource:
    cluster.api.create(builders.storage_class("mini", DRIVER_NAME))
    cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                        storage_class="mini"))
    cluster.api.create(builders.pod("reader", volumes=[
        builders.pvc_volume("data", "data", read_only=True)]))
    await cluster.settle()
    pod = cluster.api.get("Pod", "reader", "default")
    assert pod.status["phase"] == "Running"
    return pod


async def test_read_only_claim_in_the_pod_is_passed_to_node_publish_as_readonly(
    one_node: Cluster,
) -> None:
    await run_read_only_claim_pod(one_node)
    [publish] = requests(one_node, 0, "NodePublishVolume")
    assert publish["readonly"] is True


async def test_a_read_only_container_mount_leaves_node_publish_writable(
    one_node: Cluster,
) -> None:
    cluster = one_node
    cluster.api.create(builders.storage_class("mini", DRIVER_NAME))
    cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                        storage_class="mini"))
    container = builders.container("main")
    container["volumeMounts"] = [{"name": "data", "mountPath": "/data", "readOnly": True}]
    cluster.api.create(builders.pod("reader", containers=[container], volumes=[
        builders.pvc_volume("data", "data")]))

    await cluster.settle()

    assert cluster.api.get("Pod", "reader", "default").status["phase"] == "Running"
    [publish] = requests(cluster, 0, "NodePublishVolume")
    assert "readonly" not in publish  # false: the container runtime makes its mount read-only


@pytest.mark.skipif(os.geteuid() != 0, reason="a read-only bind mount needs root")
async def test_read_only_claim_cannot_be_written_through_the_pods_mount(
    one_node: Cluster,
) -> None:
    pod = await run_read_only_claim_pod(one_node)
    pv_name = one_node.api.get("PersistentVolumeClaim", "data", "default").spec["volumeName"]
    target = one_node.kubelets["node-1"].paths.pod_mount_path(pod.metadata.uid, pv_name)
    with pytest.raises(OSError) as failed:
        (target / "file").write_text("no")
    assert failed.value.errno == errno.EROFS


# -- node secrets (the driver started with --secret demands them) --------------------------------

TOKEN = "token"
SECRET = "s3cret-never-in-a-trace"  # distinctive, so no id or number can contain it by chance
SECRET_PARAMETERS = {
    "csi.storage.k8s.io/provisioner-secret-name": "provisioner",
    "csi.storage.k8s.io/provisioner-secret-namespace": "storage",
    "csi.storage.k8s.io/controller-publish-secret-name": "attacher",
    "csi.storage.k8s.io/controller-publish-secret-namespace": "storage",
    "csi.storage.k8s.io/node-stage-secret-name": "${pvc.name}-stage",
    "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}",
    "csi.storage.k8s.io/node-publish-secret-name": "${pvc.name}-publish",
    "csi.storage.k8s.io/node-publish-secret-namespace": "${pvc.namespace}",
}


@pytest.fixture
async def secured() -> AsyncIterator[Cluster]:
    """One node whose driver processes refuse the guarded requests without ``token``; the
    controller secrets exist, the node secrets are left to each test."""
    async with running_cluster(1, ["--secret", f"{TOKEN}={SECRET}"]) as c:
        c.api.create(builders.namespace("storage"))
        for name in ("provisioner", "attacher"):
            c.api.create(builders.secret(name, "storage", {TOKEN: SECRET}))
        c.api.create(builders.storage_class("secured", DRIVER_NAME,
                                            parameters=SECRET_PARAMETERS))
        yield c


def results(cluster: Cluster, method: str) -> list[str]:
    return [e.result for e in cluster.trace if e.call.endswith(f"/{method}")]


async def run_claim_pod(cluster: Cluster) -> Resource:
    cluster.api.create(builders.persistent_volume_claim("data", storage="1Mi",
                                                        storage_class="secured"))
    cluster.api.create(builders.pod("app", volumes=[builders.pvc_volume("data", "data")]))
    await cluster.settle()
    return cluster.api.get("Pod", "app", "default")


async def test_node_stage_and_publish_carry_the_secrets_the_storage_class_templates_name(
    secured: Cluster,
) -> None:
    secured.api.create(builders.secret("data-stage", "default", {TOKEN: SECRET}))
    secured.api.create(builders.secret("data-publish", "default", {TOKEN: SECRET}))

    pod = await run_claim_pod(secured)

    assert pod.status["phase"] == "Running"
    pv = secured.api.get("PersistentVolume",
                         secured.api.get("PersistentVolumeClaim", "data", "default")
                         .spec["volumeName"])
    assert pv.spec["csi"]["nodeStageSecretRef"] == {"name": "data-stage", "namespace": "default"}
    assert pv.spec["csi"]["nodePublishSecretRef"] == {"name": "data-publish",
                                                      "namespace": "default"}
    assert results(secured, "NodeStageVolume") == ["OK"]
    assert results(secured, "NodePublishVolume") == ["OK"]
    assert not [e for e in secured.trace if SECRET in e.to_json()]


@pytest.mark.parametrize(("missing", "reference", "staged_before"), [
    ("data-stage", "NodeStageSecretRef", []),
    ("data-publish", "NodePublishSecretRef", ["OK"]),  # stage needs only its own secret
])
async def test_a_missing_node_secret_holds_the_pod_until_the_secret_exists(
    secured: Cluster, missing: str, reference: str, staged_before: list[str],
) -> None:
    present = next(n for n in ("data-stage", "data-publish") if n != missing)
    secured.api.create(builders.secret(present, "default", {TOKEN: SECRET}))

    pod = await run_claim_pod(secured)

    assert pod.status["phase"] == "Pending"
    assert results(secured, "NodeStageVolume") == staged_before
    assert results(secured, "NodePublishVolume") == []
    ready = next(c for c in pod.status["conditions"] if c["type"] == "Ready")
    assert f"fetching {reference} default/{missing} failed" in ready["message"]

    secured.api.create(builders.secret(missing, "default", {TOKEN: SECRET}))
    await secured.settle()

    assert secured.api.get("Pod", "app", "default").status["phase"] == "Running"
    assert (results(secured, "NodeStageVolume"), results(secured, "NodePublishVolume")) == (
        ["OK"], ["OK"])


async def test_an_inline_volume_publishes_with_the_secret_from_the_pods_namespace(
    secured: Cluster,
) -> None:
    secured.api.create(builders.secret("inline-creds", "default", {TOKEN: SECRET}))
    volume = builders.csi_inline_volume("scratch", DRIVER_NAME)
    volume["csi"]["nodePublishSecretRef"] = {"name": "inline-creds"}
    secured.api.create(builders.pod("scratchy", volumes=[volume]))

    await secured.settle()

    assert secured.api.get("Pod", "scratchy", "default").status["phase"] == "Running"
    assert results(secured, "NodePublishVolume") == ["OK"]


async def test_a_deleted_pod_with_a_claim_leaves_no_directory_on_the_node(
    one_node: Cluster,
) -> None:
    pod = await run_read_only_claim_pod(one_node)
    pod_dir = one_node.kubelets["node-1"].paths.pods_dir / pod.metadata.uid
    assert (pod_dir / "volumes" / "kubernetes.io~csi").is_dir()
    one_node.api.delete("Pod", "reader", "default")
    await one_node.settle()
    assert requests(one_node, 0, "NodeUnpublishVolume")
    assert not pod_dir.exists()
