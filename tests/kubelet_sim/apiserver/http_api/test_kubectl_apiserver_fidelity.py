"""What kubectl shows of the server where kube-apiserver v1.35 has its own ways: the
NamespaceLifecycle and PersistentVolumeClaimResize refusals (`<resource> "<name>" is
forbidden: <why>`), grouped resources named with their group in errors, the defaults a
new pod or namespace gets, and which kinds have a generation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound, ObjectForbidden
from kubelet_sim.api.model import new
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.http.status import error_body
from kubelet_sim.apiserver.server import APIServer

from .conftest import Served, needs_kubectl


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    api = APIServer(history_limit=50)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True))
    handle = start_api_server(api, Path(tmp_path_factory.mktemp("lifecycle")) / "state")
    try:
        yield Served(api, handle)
    finally:
        handle.stop()


@needs_kubectl
@pytest.mark.parametrize("name", ["default", "kube-system", "kube-public"])
def test_kubectl_cannot_delete_an_immortal_namespace(cluster: Served, name: str) -> None:
    done = cluster.kubectl("delete", "namespace", name, check=False)
    assert done.returncode == 1
    assert done.stderr.strip() == (f'Error from server (Forbidden): namespaces "{name}" is '
                                   "forbidden: this namespace may not be deleted")
    if name != "kube-public":  # refused before it is looked up: here it does not exist
        assert cluster.kubectl_json("get", "namespace", name)["status"]["phase"] == "Active"


@needs_kubectl
def test_kubectl_create_in_a_terminating_namespace_names_the_resource(cluster: Served) -> None:
    cluster.kubectl("create", "namespace", "doomed")
    cluster.api.create(new("ConfigMap", "held", "doomed", finalizers=["example.com/hold"]))
    cluster.kubectl("delete", "namespace", "doomed", "--wait=false")
    done = cluster.kubectl("create", "configmap", "late", "-n", "doomed", check=False)
    assert done.stderr.strip() == (  # kubectl create <kind>'s own prefix, then the Status
        'error: failed to create configmap: configmaps "late" is forbidden: unable to create new '
        "content in namespace doomed because it is being terminated")


@needs_kubectl
def test_kubectl_growing_a_claim_of_a_class_without_expansion_is_forbidden(
        cluster: Served) -> None:
    claim = cluster.api.create(new("PersistentVolumeClaim", "data", "default", spec={
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}))
    claim.status = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    cluster.api.update_status(claim)
    grow = json.dumps({"spec": {"resources": {"requests": {"storage": "2Gi"}}}})
    done = cluster.kubectl("patch", "pvc", "data", "-p", grow, check=False)
    assert done.stderr.strip() == (
        'Error from server (Forbidden): persistentvolumeclaims "data" is forbidden: only '
        "dynamically provisioned pvc can be resized and the storageclass that provisions "
        "the pvc must support resize")


def test_the_forbidden_status_names_the_object_in_its_details() -> None:
    err = ObjectForbidden("this namespace may not be deleted", "Namespace", "default",
                          "namespaces")
    assert error_body(err, "namespaces") == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'namespaces "default" is forbidden: this namespace may not be deleted',
        "reason": "Forbidden", "details": {"name": "default", "kind": "namespaces"},
        "code": 403}


def test_a_generated_name_is_not_in_the_forbidden_message() -> None:
    err = ObjectForbidden("unable to create new content in namespace x because it is being "
                          "terminated", "Pod", "")
    assert error_body(err, "pods")["message"].startswith("pods is forbidden: unable")


@needs_kubectl
def test_kubectl_create_namespace_shows_the_kubernetes_finalizer_kept_by_updates(
        cluster: Served) -> None:
    cluster.kubectl("create", "namespace", "team")
    assert cluster.kubectl_json("get", "namespace", "team")["spec"] == {
        "finalizers": ["kubernetes"]}
    cluster.kubectl("replace", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"},
        "spec": {"finalizers": []}}))
    assert cluster.kubectl_json("get", "namespace", "team")["spec"] == {
        "finalizers": ["kubernetes"]}


@needs_kubectl
def test_kubectl_run_shows_the_container_defaults_and_a_generation(cluster: Served) -> None:
    cluster.kubectl("run", "web", "--image=busybox")
    pod = cluster.kubectl_json("get", "pod", "web")
    container = pod["spec"]["containers"][0]
    assert (container["imagePullPolicy"], container["terminationMessagePath"],
            container["terminationMessagePolicy"]) == ("Always", "/dev/termination-log", "File")
    assert pod["spec"]["securityContext"] == {} and pod["metadata"]["generation"] == 1
    cluster.kubectl("create", "configmap", "settings", "--from-literal=a=b")
    assert "generation" not in cluster.kubectl_json("get", "configmap", "settings")["metadata"]


@needs_kubectl
def test_kubectl_names_a_grouped_resource_with_its_group(cluster: Served) -> None:
    missing = cluster.kubectl("get", "storageclass", "nope", check=False)
    assert missing.stderr.strip() == ('Error from server (NotFound): '
                                      'storageclasses.storage.k8s.io "nope" not found')
    cluster.kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}))
    again = cluster.kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}),
        check=False)
    assert again.stderr.strip() == ('Error from server (AlreadyExists): error when creating '
                                    '"STDIN": leases.coordination.k8s.io "l" already exists')


def test_the_not_found_status_of_a_grouped_resource_names_its_group() -> None:
    assert error_body(NotFound("StorageClass", "nope"), "storageclasses", "storage.k8s.io") == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'storageclasses.storage.k8s.io "nope" not found', "reason": "NotFound",
        "details": {"name": "nope", "group": "storage.k8s.io", "kind": "storageclasses"},
        "code": 404}
