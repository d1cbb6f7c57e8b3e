"""The simulated cluster through real processes: a pod with a claim comes up and goes away in
the order Kubernetes uses, every CSI call over the driver's socket and every CNI exec of the
plugins read back from the cluster's trace (node, component and call, in order)."""

from __future__ import annotations

import hashlib
import ipaddress
import json
from collections.abc import AsyncIterator, Callable

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.cluster import DRIVER_NAME, Cluster, ClusterConfig, default_nodes
from kubelet_sim.utils.trace import TraceEvent

STORAGE_CLASS = "mini"
NODE = "node-1"
CSI_STEPS = {
    "CreateVolume", "DeleteVolume", "ControllerPublishVolume", "ControllerUnpublishVolume",
    "NodeGetCapabilities", "NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume",
    "NodeUnpublishVolume",
}
Step = tuple[str, str, str]  # (node, component, what)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    c = Cluster(ClusterConfig())
    try:
        await c.start()
        c.api.create(builders.storage_class(STORAGE_CLASS, DRIVER_NAME))
        yield c
    finally:
        await c.stop()


class PodRunningMarks:
    """Notes where in the trace each pod's status was first written as Running."""

    def __init__(self, cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
        self.at: dict[str, int] = {}
        original: Callable[[Resource | JSON], Resource] = cluster.api.update_status

        def update_status(obj: Resource | JSON) -> Resource:
            stored = original(obj)
            if stored.kind == "Pod" and stored.status.get("phase") == "Running":
                self.at.setdefault(stored.name, len(cluster.trace.events))
            return stored

        monkeypatch.setattr(cluster.api, "update_status", update_status)


def step_of(event: TraceEvent) -> Step | None:
    """The lifecycle step an event is, or None for the calls this order does not cover."""
    if event.call.startswith(("cni ADD", "cni DEL")):
        return (event.node, event.component, event.call)
    method = event.call.rpartition("/")[2]
    if event.call.startswith("csi.") and method in CSI_STEPS:
        return (event.node, event.component, method)
    return None


def timeline(cluster: Cluster, start: int, marks: PodRunningMarks | None = None) -> list[Step]:
    """The steps since trace index `start`, with "<pod> Running" where the kubelet wrote it."""
    running = {i: name for name, i in (marks.at.items() if marks else [])}
    out: list[Step] = []
    events = cluster.trace.events
    for index in range(start, len(events) + 1):
        if index in running:
            out.append((NODE, "kubelet", f"pod {running[index]} Running"))
        if index < len(events) and (step := step_of(events[index])) is not None:
            out.append(step)
    return out


def csi_requests(cluster: Cluster, method: str) -> list[dict[str, object]]:
    return [e.request for e in cluster.trace if e.call.endswith(f"/{method}")]


async def create_claim_and_pod(cluster: Cluster, claim: str, pods: list[str]) -> None:
    cluster.api.create(builders.persistent_volume_claim(claim, storage="1Gi",
                                                        storage_class=STORAGE_CLASS))
    for pod in pods:
        cluster.api.create(builders.pod(pod, node_name=NODE, volumes=[
            builders.pvc_volume("data", claim)], containers=[
            builders.container("app", volume_mounts=[{"name": "data", "mountPath": "/data"}])]))
    await cluster.settle()


def volume_of(cluster: Cluster, claim: str) -> tuple[str, str]:
    """(PV name, volume handle) the claim is bound to."""
    pvc = cluster.api.get("PersistentVolumeClaim", claim, "default")
    pv = cluster.api.get("PersistentVolume", pvc.spec["volumeName"])
    return pv.name, pv.spec["csi"]["volumeHandle"]


async def test_create_provisions_attaches_stages_publishes_then_cni_add_then_running(
    cluster: Cluster, monkeypatch: pytest.MonkeyPatch,
) -> None:
    start = len(cluster.trace.events)
    marks = PodRunningMarks(cluster, monkeypatch)
    await create_claim_and_pod(cluster, "data", ["web"])
    assert timeline(cluster, start, marks) == [
        ("control-plane", "external-provisioner", "CreateVolume"),
        ("control-plane", "external-attacher", "ControllerPublishVolume"),
        (NODE, "kubelet", "NodeGetCapabilities"),
        (NODE, "kubelet", "NodeStageVolume"),
        (NODE, "kubelet", "NodeGetCapabilities"),
        (NODE, "kubelet", "NodePublishVolume"),
        (NODE, "containerd", "cni ADD emu-loopback"),
        (NODE, "containerd", "cni ADD emu-bridge"),
        (NODE, "kubelet", "pod web Running"),
    ]
    pod = cluster.api.get("Pod", "web", "default")
    assert pod.status["phase"] == "Running"
    assert ipaddress.ip_address(pod.status["podIP"]) in ipaddress.ip_network("10.244.1.0/24")
    assert all(e.result == "OK" for e in cluster.trace.events[start:])


async def test_delete_runs_cni_del_in_reverse_then_unpublish_unstage_detach_and_claim_delete(
    cluster: Cluster,
) -> None:
    await create_claim_and_pod(cluster, "data", ["web"])
    pv_name, _ = volume_of(cluster, "data")
    start = len(cluster.trace.events)
    cluster.api.delete("Pod", "web", "default")
    await cluster.settle()
    with pytest.raises(NotFound):
        cluster.api.get("Pod", "web", "default")
    assert not cluster.api.list("VolumeAttachment").items
    cluster.api.delete("PersistentVolumeClaim", "data", "default")
    await cluster.settle()
    assert timeline(cluster, start) == [
        (NODE, "containerd", "cni DEL emu-bridge"),
        (NODE, "containerd", "cni DEL emu-loopback"),
        (NODE, "kubelet", "NodeUnpublishVolume"),
        (NODE, "kubelet", "NodeGetCapabilities"),
        (NODE, "kubelet", "NodeUnstageVolume"),
        ("control-plane", "external-attacher", "ControllerUnpublishVolume"),
        ("control-plane", "external-provisioner", "DeleteVolume"),
    ]
    assert all(e.result == "OK" for e in cluster.trace.events[start:])
    assert pv_name not in {pv.name for pv in cluster.api.list("PersistentVolume").items}


async def test_node_calls_use_the_kubelet_paths_and_the_attachments_publish_context(
    cluster: Cluster,
) -> None:
    await create_claim_and_pod(cluster, "data", ["web"])
    pv_name, handle = volume_of(cluster, "data")
    pod = cluster.api.get("Pod", "web", "default")
    root = cluster.kubelets[NODE].paths.root
    staging = (root / "plugins" / "kubernetes.io" / "csi" / DRIVER_NAME
               / hashlib.sha256(handle.encode()).hexdigest() / "globalmount")
    target = (root / "pods" / pod.metadata.uid / "volumes" / "kubernetes.io~csi" / pv_name
              / "mount")
    attachment = next(va for va in cluster.api.list("VolumeAttachment").items
                      if va.spec["source"]["persistentVolumeName"] == pv_name)
    [stage] = csi_requests(cluster, "NodeStageVolume")
    [publish] = csi_requests(cluster, "NodePublishVolume")
    assert stage["volume_id"] == publish["volume_id"] == handle
    assert stage["staging_target_path"] == publish["staging_target_path"] == str(staging)
    assert publish["target_path"] == str(target)
    assert stage["publish_context"] == publish["publish_context"] \
        == attachment.status["attachmentMetadata"]
    assert target.is_dir() and staging.is_dir()
    vol_data = json.loads((target.parent / "vol_data.json").read_text())
    assert (vol_data["driverName"], vol_data["volumeHandle"]) == (DRIVER_NAME, handle)
    context = publish["volume_context"]
    assert isinstance(context, dict)
    assert context["csi.storage.k8s.io/pod.uid"] == pod.metadata.uid
    assert context["csi.storage.k8s.io/ephemeral"] == "false"


async def test_two_pods_sharing_a_rwo_claim_on_one_node_unstage_only_after_the_second_goes(
    cluster: Cluster,
) -> None:
    await create_claim_and_pod(cluster, "shared", ["first", "second"])
    assert {p.name: p.status.get("phase") for p in cluster.api.list("Pod").items} == \
        {"first": "Running", "second": "Running"}
    assert [s[2] for s in timeline(cluster, 0) if s[2] in CSI_STEPS - {"NodeGetCapabilities"}] \
        == ["CreateVolume", "ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume",
            "NodePublishVolume"]
    pv_name, handle = volume_of(cluster, "shared")
    second = cluster.api.get("Pod", "second", "default")
    second_target = cluster.kubelets[NODE].paths.pod_mount_path(second.metadata.uid, pv_name)

    start = len(cluster.trace.events)
    cluster.api.delete("Pod", "first", "default")
    await cluster.settle()
    assert timeline(cluster, start) == [
        (NODE, "containerd", "cni DEL emu-bridge"),
        (NODE, "containerd", "cni DEL emu-loopback"),
        (NODE, "kubelet", "NodeUnpublishVolume"),
    ]
    assert second_target.is_dir()
    assert len(cluster.api.list("VolumeAttachment").items) == 1
    assert cluster.api.get("Pod", "second", "default").status["phase"] == "Running"

    start = len(cluster.trace.events)
    cluster.api.delete("Pod", "second", "default")
    await cluster.settle()
    assert [s[2] for s in timeline(cluster, start)] == [
        "cni DEL emu-bridge", "cni DEL emu-loopback", "NodeUnpublishVolume",
        "NodeGetCapabilities", "NodeUnstageVolume", "ControllerUnpublishVolume",
    ]
    [unstage] = csi_requests(cluster, "NodeUnstageVolume")
    assert unstage["volume_id"] == handle
    assert not second_target.exists()


async def test_on_two_nodes_each_pods_volume_is_attached_to_and_mounted_by_its_own_node() -> None:
    cluster = Cluster(ClusterConfig(nodes=default_nodes(2)))
    try:
        await cluster.start()
        # Volumes have node topology: provisioned where the scheduler puts the pod.
        cluster.api.create(builders.storage_class(STORAGE_CLASS, DRIVER_NAME,
                                                  volume_binding_mode="WaitForFirstConsumer"))
        for node, name in (("node-1", "a"), ("node-2", "b")):
            cluster.api.create(builders.persistent_volume_claim(
                f"data-{name}", storage="1Gi", storage_class=STORAGE_CLASS))
            pod = builders.pod(f"app-{name}", volumes=[builders.pvc_volume("data", f"data-{name}")])
            pod.spec["nodeSelector"] = {"kubernetes.io/hostname": node}
            cluster.api.create(pod)
        await cluster.settle()
        for node, name in (("node-1", "a"), ("node-2", "b")):
            pod = cluster.api.get("Pod", f"app-{name}", "default")
            assert (pod.spec["nodeName"], pod.status["phase"]) == (node, "Running")
            pv_name, handle = volume_of(cluster, f"data-{name}")
            [publish] = [e.request for e in cluster.trace
                         if e.call.endswith("/ControllerPublishVolume")
                         and e.request["volume_id"] == handle]
            assert publish["node_id"] == node
            node_calls = {e.node for e in cluster.trace if e.call.startswith("csi.Node/Node")
                          and e.call.endswith(("StageVolume", "PublishVolume"))
                          and e.request.get("volume_id") == handle}
            assert node_calls == {node}
            assert cluster.kubelets[node].paths.pod_mount_path(pod.metadata.uid, pv_name).is_dir()
    finally:
        await cluster.stop()
