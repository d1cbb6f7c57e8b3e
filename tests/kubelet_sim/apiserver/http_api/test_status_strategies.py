"""What a PUT of a ``/status`` subresource may change besides ``status``, kind by kind, as
kube-apiserver v1.35's status strategies decide, written with the official client over
HTTPS: spec never; labels and annotations unless the kind's strategy puts them back."""

from __future__ import annotations

from typing import Any

from kubernetes import client, config

from .conftest import Served


def clients(served: Served) -> Any:
    return config.new_client_from_config(str(served.handle.kubeconfig))


def test_a_claim_status_put_keeps_new_labels_and_annotations_but_not_a_spec_change(
        served: Served) -> None:
    core: Any = client.CoreV1Api(clients(served))
    core.create_namespaced_persistent_volume_claim("default", {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    claim = core.read_namespaced_persistent_volume_claim("data", "default")
    claim.metadata.labels = {"tier": "db"}
    claim.metadata.annotations = {"note": "by status"}
    claim.spec.access_modes = ["ReadWriteMany"]
    claim.status = client.V1PersistentVolumeClaimStatus(phase="Bound",
                                                        capacity={"storage": "1Gi"})
    written = core.replace_namespaced_persistent_volume_claim_status("data", "default", claim)

    stored = core.read_namespaced_persistent_volume_claim("data", "default")
    assert (written.status.phase, stored.status.phase) == ("Bound", "Bound")
    assert stored.spec.access_modes == ["ReadWriteOnce"]
    assert stored.metadata.labels == {"tier": "db"}
    assert stored.metadata.annotations == {"note": "by status"}


def test_a_deployment_status_put_keeps_annotations_but_drops_a_label_change(
        served: Served) -> None:
    apps: Any = client.AppsV1Api(clients(served))
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    deployment = apps.read_namespaced_deployment("web", "default")
    deployment.metadata.labels = {"app": "web", "extra": "yes"}
    deployment.metadata.annotations = {"deployment.kubernetes.io/revision": "1"}
    deployment.spec.replicas = 4
    deployment.status = client.V1DeploymentStatus(observed_generation=1, replicas=1)
    apps.replace_namespaced_deployment_status("web", "default", deployment)

    stored = apps.read_namespaced_deployment("web", "default")
    assert (stored.status.observed_generation, stored.status.replicas) == (1, 1)
    assert stored.spec.replicas == 1 and stored.metadata.generation == 1
    assert stored.metadata.labels == {"app": "web"}
    assert stored.metadata.annotations == {"deployment.kubernetes.io/revision": "1"}


def test_a_volume_attachment_status_put_changes_no_metadata(served: Served) -> None:
    storage: Any = client.StorageV1Api(clients(served))
    storage.create_volume_attachment({
        "apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
        "metadata": {"name": "csi-123"},
        "spec": {"attacher": "hostpath.csi.k8s.io", "nodeName": "node-1",
                 "source": {"persistentVolumeName": "pv-1"}}})
    attachment = storage.read_volume_attachment("csi-123")
    attachment.metadata.labels = {"x": "y"}
    attachment.metadata.annotations = {"a": "b"}
    attachment.metadata.finalizers = ["example.com/hold"]
    attachment.status = client.V1VolumeAttachmentStatus(attached=True)
    storage.replace_volume_attachment_status("csi-123", attachment)

    stored = storage.read_volume_attachment("csi-123")
    assert stored.status.attached is True
    assert (stored.metadata.labels, stored.metadata.annotations,
            stored.metadata.finalizers) == (None, None, None)
