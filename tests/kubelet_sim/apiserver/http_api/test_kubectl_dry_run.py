"""A server dry run (``dryRun=All``) on `python -m kubelet_sim up`, driven by the real
kubectl (v1.35) and the official Python client: it goes through the whole write a real
one does — admission (ResourceQuota refuses, without charging; LimitRanger fills in
defaults), defaulting, validation, the update rules (an immutable field is the same 422),
generation and managedFields — and stops before storage: nothing stored or removed,
no quota charged, no cluster IP or node port taken."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--service-cluster-ip-range", "10.110.0.0/16",
                    "--service-node-port-range", "31000-31999") as running:
        yield running


def refused(up: Up, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip()


def used(up: Up, namespace: str) -> dict[str, str]:
    found = json.loads(up.kubectl("get", "quota", "q", "-n", namespace, "-o", "json"))
    return dict(found.get("status", {}).get("used") or {})


def names(up: Up, kind: str, namespace: str) -> list[str]:
    return up.kubectl("get", kind, "-n", namespace, "-o", "name").split()


def test_a_dry_run_pod_is_checked_against_the_quota_without_charging_it(up: Up) -> None:
    up.kubectl("create", "namespace", "quota")
    up.kubectl("create", "quota", "q", "-n", "quota", "--hard=pods=1")
    wait_for(lambda: used(up, "quota") == {"pods": "0"}, "the quota controller's status")
    assert up.kubectl("run", "dry", "-n", "quota", "--image=nginx",
                      "--dry-run=server").strip() == "pod/dry created (server dry run)"
    assert used(up, "quota") == {"pods": "0"} and names(up, "pods", "quota") == []
    up.kubectl("run", "one", "-n", "quota", "--image=nginx")
    assert refused(up, "run", "x", "-n", "quota", "--image=nginx", "--dry-run=server") == (
        'Error from server (Forbidden): pods "x" is forbidden: exceeded quota: q, requested: '
        "pods=1, used: pods=1, limited: pods=1")
    assert used(up, "quota") == {"pods": "1"}


def test_a_dry_run_pod_shows_the_limit_ranges_defaults(up: Up) -> None:
    up.kubectl("create", "namespace", "limits")
    up.kubectl("apply", "-n", "limits", "-f", "-", stdin="""apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 128Mi}
    defaultRequest: {cpu: 200m}
""")
    shown = json.loads(up.kubectl("run", "web", "-n", "limits", "--image=nginx",
                                  "--dry-run=server", "-o", "json"))
    assert shown["spec"]["containers"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "200m", "memory": "128Mi"}}
    assert "kubernetes.io/limit-ranger" in shown["metadata"]["annotations"]
    assert shown["metadata"]["uid"] and "resourceVersion" not in shown["metadata"]
    assert names(up, "pods", "limits") == []


def test_a_dry_run_update_of_an_immutable_field_gets_the_same_422_as_a_real_one(
        up: Up) -> None:
    up.kubectl("create", "namespace", "immutable")
    up.kubectl("apply", "-n", "immutable", "-f", "-", stdin="""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  storageClassName: slow
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Gi}}
""")
    change = ["patch", "pvc", "data", "-n", "immutable", "--type=merge",
              "-p", '{"spec":{"storageClassName":"fast"}}']
    dry = refused(up, *change, "--dry-run=server")
    assert dry.startswith('The PersistentVolumeClaim "data" is invalid: spec: Forbidden: '
                          "spec is immutable after creation")
    assert dry == refused(up, *change)
    up.kubectl("create", "job", "once", "-n", "immutable", "--image=busybox")
    set_image = ["set", "image", "job/once", "once=nginx", "-n", "immutable"]
    dry = refused(up, *set_image, "--dry-run=server")
    assert 'Job.batch "once" is invalid: spec.template: Invalid value:' in dry
    assert "field is immutable" in dry and dry == refused(up, *set_image)


def test_a_dry_run_update_shows_the_generation_and_managed_fields_it_would_store(
        up: Up) -> None:
    up.kubectl("create", "namespace", "workloads")
    up.kubectl("create", "deployment", "web", "-n", "workloads", "--image=nginx")
    shown = json.loads(up.kubectl("patch", "deployment", "web", "-n", "workloads",
                                  "--type=merge", "-p", '{"spec":{"replicas":3}}',
                                  "--dry-run=server", "-o", "json"))
    up.kubectl("scale", "deployment", "web", "-n", "workloads", "--replicas=4",
               "--dry-run=server")  # the scale subresource
    stored = json.loads(up.kubectl("get", "deployment", "web", "-n", "workloads", "-o", "json"))
    assert shown["spec"]["replicas"] == 3 and stored["spec"]["replicas"] == 1
    assert shown["metadata"]["generation"] == stored["metadata"]["generation"] + 1
    applied = json.loads(up.kubectl(
        "apply", "--server-side", "--field-manager=planner", "--dry-run=server", "-o", "json",
        "--show-managed-fields",
        "-n", "workloads", "-f", "-", stdin="""apiVersion: v1
kind: ConfigMap
metadata: {name: planned}
data: {k: v}
"""))
    assert [m["manager"] for m in applied["metadata"]["managedFields"]] == ["planner"]
    assert "configmap/planned" not in names(up, "configmaps", "workloads")


def test_a_dry_run_service_takes_no_cluster_ip_nor_node_port(up: Up) -> None:
    service = """apiVersion: v1
kind: Service
metadata: {name: NAME}
spec:
  type: NodePort
  clusterIP: 10.110.7.7
  selector: {app: web}
  ports: [{port: 80, nodePort: 31777}]
"""
    shown = json.loads(up.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                                  stdin=service.replace("NAME", "planned")))
    assert shown["spec"]["clusterIPs"] == ["10.110.7.7"]
    assert shown["spec"]["ports"][0]["nodePort"] == 31777
    made = json.loads(up.kubectl("create", "-o", "json", "-f", "-",
                                 stdin=service.replace("NAME", "real")))
    assert made["spec"]["clusterIP"] == "10.110.7.7"
    assert made["spec"]["ports"][0]["nodePort"] == 31777
    # a node port taken is refused by a dry run too, as kube's dry-run port operation does
    assert "provided port is already allocated" in refused(
        up, "create", "--dry-run=server", "-f", "-",
        stdin=service.replace("NAME", "again").replace("10.110.7.7", "10.110.7.8"))


def test_a_dry_run_delete_answers_the_deleted_object_and_removes_nothing(up: Up) -> None:
    core: Any = client.CoreV1Api(config.new_client_from_config(up.kubeconfig))
    up.kubectl("create", "namespace", "deleting")
    core.create_namespaced_config_map("deleting", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    answered = json.loads(core.delete_namespaced_config_map(
        "held", "deleting", dry_run="All", propagation_policy="Foreground",
        _preload_content=False).data)["metadata"]  # the ConfigMap, not a Status
    assert answered["deletionTimestamp"]
    assert sorted(answered["finalizers"]) == ["example.com/hold", "foregroundDeletion"]
    kept = core.read_namespaced_config_map("held", "deleting")
    assert kept.metadata.deletion_timestamp is None
    assert kept.metadata.finalizers == ["example.com/hold"]
    up.kubectl("run", "web", "-n", "deleting", "--image=nginx")
    assert up.kubectl("delete", "pod", "web", "-n", "deleting", "--dry-run=server").strip() == \
        'pod "web" deleted from deleting namespace (server dry run)'
    assert names(up, "pods", "deleting") == ["pod/web"]
    assert "deletionTimestamp" not in json.loads(up.kubectl(
        "get", "pod", "web", "-n", "deleting", "-o", "json"))["metadata"]
    core.patch_namespaced_config_map("held", "deleting", {"metadata": {"finalizers": None}})
