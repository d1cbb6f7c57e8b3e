"""`up --no-sidecars`: the cluster runs without the CSI sidecar roles, so a claim stays
Pending until something outside provisions it. Here that something is a stand-in for the
real external-provisioner and external-attacher, written the way they work: it reads
and writes objects only through the Kubernetes API (the official Python client, with the
kubeconfig `up` wrote) and calls the CSI controller plugin on the socket `up` printed.
The pod then runs: the roles can be replaced from outside the simulator."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import grpc
from kubernetes import client, config

from csi_protos import csi_pb2, csi_pb2_grpc
from tests.fixtures.up_process import PROJECT_ROOT, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl
DRIVER = "csi-mini.example.com"


def printed_controller_socket(up: Up) -> str:
    (line,) = [s for s in up.said if s.startswith("CSI controller plugin: ")]
    return line.split(": ", 1)[1]


def provision(core: Any, stub: csi_pb2_grpc.ControllerStub, claim: Any) -> str:
    """What external-provisioner does for an Immediate claim: CreateVolume named after the
    claim's uid, then a PV pre-bound to the claim (the binder completes the binding)."""
    size = 2 * 1024**3
    name = f"pvc-{claim.metadata.uid}"
    mount = csi_pb2.VolumeCapability(
        mount=csi_pb2.VolumeCapability.MountVolume(),
        access_mode=csi_pb2.VolumeCapability.AccessMode(
            mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))
    created = stub.CreateVolume(csi_pb2.CreateVolumeRequest(
        name=name, capacity_range=csi_pb2.CapacityRange(required_bytes=size),
        volume_capabilities=[mount]), timeout=10).volume
    core.create_persistent_volume({
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name,
                     "annotations": {"pv.kubernetes.io/provisioned-by": DRIVER}},
        "spec": {
            "capacity": {"storage": str(created.capacity_bytes)},
            "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": "mini", "volumeMode": "Filesystem",
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default",
                         "name": claim.metadata.name, "uid": claim.metadata.uid},
            "csi": {"driver": DRIVER, "volumeHandle": created.volume_id,
                    "volumeAttributes": dict(created.volume_context)}}})
    return str(created.volume_id)


def attach(storage: Any, stub: csi_pb2_grpc.ControllerStub, va: Any, volume_id: str) -> None:
    """What external-attacher does: ControllerPublishVolume with the node's CSI node ID
    from its CSINode, then status.attached with the publish context."""
    csinode = storage.read_csi_node(va.spec.node_name)
    node_id = next(d.node_id for d in csinode.spec.drivers if d.name == DRIVER)
    published = stub.ControllerPublishVolume(csi_pb2.ControllerPublishVolumeRequest(
        volume_id=volume_id, node_id=node_id, volume_capability=csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(),
            access_mode=csi_pb2.VolumeCapability.AccessMode(
                mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER))), timeout=10)
    storage.patch_volume_attachment_status(va.metadata.name, {"status": {
        "attached": True, "attachmentMetadata": dict(published.publish_context)}})


def test_without_sidecars_an_outside_provisioner_and_attacher_get_the_pod_running() -> None:
    with running_up("--no-sidecars") as up:
        assert any("no CSI sidecars" in s for s in up.said)
        socket = printed_controller_socket(up)
        assert socket.startswith("unix://") and Path(socket[len("unix://"):]).is_socket()
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
        api = config.new_client_from_config(config_file=up.kubeconfig)
        # the client's models mark every field optional: read them as plain objects
        core: Any = client.CoreV1Api(api)
        storage: Any = client.StorageV1Api(api)
        time.sleep(2)  # the loops had their chance: nobody provisions
        claim = core.read_namespaced_persistent_volume_claim("db-data", "default")
        assert claim.status.phase == "Pending"
        assert core.list_persistent_volume().items == []
        assert core.read_namespaced_pod("db", "default").status.phase == "Pending"

        with grpc.insecure_channel(socket) as channel:
            stub = csi_pb2_grpc.ControllerStub(channel)
            volume_id = provision(core, stub, claim)
            wait_for(lambda: core.read_namespaced_persistent_volume_claim(
                "db-data", "default").status.phase == "Bound", "the claim bound")
            # the attach/detach controller (kube-controller-manager's, still running)
            # asks for the attachment once the pod is scheduled with a bound claim
            va = wait_for(lambda: next(iter(storage.list_volume_attachment().items), None),
                          "a VolumeAttachment")
            assert va.spec.attacher == DRIVER
            assert not (va.status and va.status.attached)  # no attacher has answered it
            attach(storage, stub, va, volume_id)
            wait_for(lambda: core.read_namespaced_pod("db", "default").status.phase
                     == "Running", "the pod Running")
        pod = core.read_namespaced_pod("db", "default")
        assert pod.status.pod_ip.startswith("10.244.")
        reasons = [e.reason for e in core.list_namespaced_event(
            "default", field_selector="involvedObject.name=db").items]
        assert "SuccessfulAttachVolume" in reasons and "Started" in reasons


SNAPSHOT_OF_DB_DATA = """\
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: mini-snapclass
driver: csi-mini.example.com
deletionPolicy: Delete
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata:
  name: db-snap
  namespace: default
spec:
  volumeSnapshotClassName: mini-snapclass
  source:
    persistentVolumeClaimName: db-data
"""


def test_without_the_snapshot_controller_a_snapshot_gets_no_content_while_claims_bind() -> None:
    with running_up("--no-snapshot-controller") as up:
        assert any(s.startswith("no snapshot-controller") for s in up.said)
        assert not any("no CSI sidecars" in s for s in up.said)
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
        wait_for(lambda: up.kubectl("get", "pvc", "db-data", "-o",
                                    "jsonpath={.status.phase}") == "Bound",
                 "the claim bound by the simulator's provisioner")
        up.kubectl("apply", "-f", "-", stdin=SNAPSHOT_OF_DB_DATA)
        time.sleep(2)  # the loops had their chance: nobody makes a content
        assert up.kubectl("get", "volumesnapshotcontents", "-o", "name") == ""
        bound = up.kubectl("get", "volumesnapshot", "db-snap", "-o",
                           "jsonpath={.status.boundVolumeSnapshotContentName}")
        assert bound == ""
