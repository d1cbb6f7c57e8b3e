"""The admission plugins and namespace behaviour of a default kube-apiserver, on
`python -m kubelet_sim up` driven by the real kubectl (v1.35) and the official Python
client: ServiceAccount admission (``serviceAccountName: default``, the
``kube-api-access-*`` volume whose token, ca.crt and namespace files the kubelet writes,
a missing account refused), the root-ca-cert-publisher's ``kube-root-ca.crt``,
PriorityClasses and Priority admission, the system namespaces, namespace deletion by
the namespace controller and the ``finalize`` subresource."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up() as running:
        yield running


@pytest.fixture(scope="module")
def core(up: Up) -> Any:
    return client.CoreV1Api(config.new_client_from_config(up.kubeconfig))


def refused(up: Up, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip()


def get_json(up: Up, *args: str) -> Any:
    return json.loads(up.kubectl("get", *args, "-o", "json"))


def rows(up: Up, *args: str) -> list[list[str]]:
    return [line.split() for line in up.kubectl("get", *args).splitlines()]


def pod_manifest(name: str, **spec: Any) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}})


# ------------------------------------------------------------------ ServiceAccount admission
def test_kubectl_run_gets_the_default_account_and_its_api_access_files(up: Up) -> None:
    up.kubectl("run", "web", "--image=nginx")
    up.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s", timeout=90)
    pod = get_json(up, "pod", "web")
    spec = pod["spec"]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"
    [volume] = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == 21
    assert [s for source in volume["projected"]["sources"] for s in source] == [
        "serviceAccountToken", "configMap", "downwardAPI"]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": volume["name"], "mountPath": MOUNT_PATH, "readOnly": True}]
    files = (up.state / "cluster" / "node-1" / "kubelet" / "pods" / pod["metadata"]["uid"]
             / "volumes" / "kubernetes.io~projected" / volume["name"])
    assert (files / "namespace").read_text() == "default"
    assert (files / "ca.crt").read_bytes() == (up.state / "pki" / "ca.crt").read_bytes()
    claims = jwt.decode((files / "token").read_text(), options={"verify_signature": False})
    assert claims["sub"] == "system:serviceaccount:default:default"
    assert claims["kubernetes.io"]["pod"]["name"] == "web"
    assert claims["exp"] - claims["iat"] == 3607


def test_a_server_side_dry_run_shows_what_admission_would_add(up: Up) -> None:
    shown = json.loads(up.kubectl("run", "preview", "--image=nginx", "--dry-run=server",
                                  "-o", "json"))
    assert shown["spec"]["serviceAccountName"] == "default"
    assert shown["spec"]["volumes"][0]["name"].startswith("kube-api-access-")
    assert shown["spec"]["priority"] == 0
    assert "preview" not in up.kubectl("get", "pods", "-o", "name")


def test_a_pod_naming_a_missing_service_account_is_forbidden(up: Up) -> None:
    assert refused(up, "run", "lost", "--image=nginx",
                   '--overrides={"spec":{"serviceAccountName":"robot"}}') == (
        'Error from server (Forbidden): pods "lost" is forbidden: error looking up service '
        'account default/robot: serviceaccount "robot" not found')


def test_automount_off_adds_no_volume_through_the_python_client(up: Up, core: Any) -> None:
    core.create_namespaced_service_account("default", client.V1ServiceAccount(
        metadata=client.V1ObjectMeta(name="quiet"), automount_service_account_token=False))
    made = core.create_namespaced_pod("default", client.V1Pod(
        metadata=client.V1ObjectMeta(name="quiet"),
        spec=client.V1PodSpec(service_account_name="quiet", containers=[
            client.V1Container(name="c", image="busybox")])))
    assert made.spec.volumes is None and made.spec.containers[0].volume_mounts is None
    assert made.spec.service_account_name == "quiet"


def test_a_new_namespace_gets_the_root_ca_and_a_pod_there_its_account(up: Up) -> None:
    up.kubectl("create", "namespace", "team")
    # the service account controller may not have made "default" yet: admission waits
    up.kubectl("apply", "-n", "team", "-f", "-", stdin=pod_manifest("early"))
    assert get_json(up, "pod", "early", "-n", "team")["spec"]["serviceAccountName"] == "default"
    published = wait_for(lambda: _config_map(up, "team"), what="kube-root-ca.crt in team")
    assert published["data"] == {"ca.crt": (up.state / "pki" / "ca.crt").read_text()}
    assert published["metadata"]["annotations"]["kubernetes.io/description"].startswith(
        "Contains a CA bundle that can be used to verify the kube-apiserver")


def test_a_deleted_or_edited_root_ca_config_map_is_put_back(up: Up) -> None:
    up.kubectl("delete", "configmap", "kube-root-ca.crt")
    wait_for(lambda: _config_map(up, "default"), what="kube-root-ca.crt made again")
    up.kubectl("patch", "configmap", "kube-root-ca.crt", "-p", '{"data":{"ca.crt":"forged"}}')
    ca = (up.state / "pki" / "ca.crt").read_text()
    wait_for(lambda: (_config_map(up, "default") or {}).get("data") == {"ca.crt": ca},
             what="kube-root-ca.crt restored")


def _config_map(up: Up, namespace: str) -> dict[str, Any] | None:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "configmap",
                           "kube-root-ca.crt", "-n", namespace, "-o", "json"],
                          capture_output=True, text=True, timeout=30, check=False)
    return json.loads(done.stdout) if done.returncode == 0 else None


# ------------------------------------------------------------------ Priority
def test_kubectl_get_priorityclasses_shows_the_built_in_ones(up: Up) -> None:
    table = rows(up, "priorityclasses")
    assert table[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert [(r[0], r[1], r[2], r[4]) for r in table[1:]] == [
        ("system-cluster-critical", "2000000000", "false", "PreemptLowerPriority"),
        ("system-node-critical", "2000001000", "false", "PreemptLowerPriority")]


def test_a_pod_takes_its_priority_from_its_class(up: Up) -> None:
    up.kubectl("create", "priorityclass", "batch", "--value=1000",
               "--preemption-policy=Never", "--description=batch jobs")
    up.kubectl("apply", "-f", "-", stdin=pod_manifest("batch-job", priorityClassName="batch"))
    spec = get_json(up, "pod", "batch-job")["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (1000, "Never")
    plain = get_json(up, "pod", "web")["spec"]
    assert (plain["priority"], plain["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert refused(up, "apply", "-f", "-", stdin=pod_manifest("gold", priorityClassName="gold")
                   ).endswith('pods "gold" is forbidden: no PriorityClass with name gold was '
                              "found")


def test_priority_class_rules_through_kubectl(up: Up) -> None:
    assert refused(up, "patch", "priorityclass", "batch", "-p", '{"value":5}') == (
        'The PriorityClass "batch" is invalid: value: Forbidden: may not be changed in an '
        "update.")
    assert "maximum allowed value of a user defined priority is 1000000000" in refused(
        up, "create", "priorityclass", "huge", "--value=2000000000")
    up.kubectl("create", "priorityclass", "everyone", "--value=1", "--global-default")
    assert refused(up, "create", "priorityclass", "second", "--value=2",
                   "--global-default").endswith(
        'priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass everyone is '
        "already marked as default. Only one default can exist")
    up.kubectl("delete", "priorityclass", "everyone")


# ------------------------------------------------------------------ namespaces
def test_the_system_namespaces_exist_from_the_start(up: Up) -> None:
    table = rows(up, "namespaces")
    assert table[0] == ["NAME", "STATUS", "AGE"]
    names = {r[0]: r[1] for r in table[1:]}
    assert {n: names.get(n) for n in ("default", "kube-system", "kube-public",
                                      "kube-node-lease")} == dict.fromkeys(
        ("default", "kube-system", "kube-public", "kube-node-lease"), "Active")


def test_kubectl_delete_namespace_waits_for_its_contents(up: Up) -> None:
    up.kubectl("create", "namespace", "doomed")
    up.kubectl("apply", "-n", "doomed", "-f", "-", stdin=pod_manifest("worker"))
    up.kubectl("create", "configmap", "settings", "-n", "doomed", "--from-literal=a=b")
    up.kubectl("delete", "namespace", "doomed", "--timeout=60s", timeout=90)
    assert "doomed" not in up.kubectl("get", "namespaces", "-o", "name")
    assert up.kubectl("get", "pods,configmaps", "-n", "doomed", "-o", "name").strip() == ""


def test_a_namespace_held_by_content_finalizers_reports_why(up: Up) -> None:
    up.kubectl("create", "namespace", "held")
    up.kubectl("create", "configmap", "x", "-n", "held")
    up.kubectl("patch", "configmap", "x", "-n", "held", "-p",
               '{"metadata":{"finalizers":["example.com/hold"]}}')
    up.kubectl("delete", "namespace", "held", "--wait=false")

    def reported() -> dict[str, Any] | None:
        ns = get_json(up, "namespace", "held")
        found = {c["type"]: c for c in ns["status"].get("conditions") or []}
        return found or None

    conditions = wait_for(reported, what="the namespace controller's conditions")
    assert get_json(up, "namespace", "held")["status"]["phase"] == "Terminating"
    assert conditions["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: example.com/hold in 1 "
        "resource instances")
    assert conditions["NamespaceContentRemaining"]["reason"] == "SomeResourcesRemain"
    up.kubectl("patch", "configmap", "x", "-n", "held", "--type=json", "-p",
               '[{"op":"remove","path":"/metadata/finalizers"}]')
    up.kubectl("wait", "--for=delete", "namespace/held", "--timeout=30s", timeout=60)


def test_the_finalize_subresource_replaces_spec_finalizers(up: Up, core: Any,
                                                           tmp_path: Path) -> None:
    up.kubectl("create", "namespace", "manual")
    ns = get_json(up, "namespace", "manual")
    assert ns["spec"]["finalizers"] == ["kubernetes"]
    ns["spec"]["finalizers"] = ["example.com/mine"]
    body = tmp_path / "ns.json"
    body.write_text(json.dumps(ns))
    answer = json.loads(up.kubectl("replace", "--raw", "/api/v1/namespaces/manual/finalize",
                                   "-f", str(body)))
    assert answer["spec"]["finalizers"] == ["example.com/mine"]
    assert get_json(up, "namespace", "manual")["spec"]["finalizers"] == ["example.com/mine"]
    assert "MethodNotAllowed" in refused(up, "get", "--raw",
                                         "/api/v1/namespaces/manual/finalize")
    ns["spec"]["finalizers"] = ["mine"]
    body.write_text(json.dumps(ns))
    assert refused(up, "replace", "--raw", "/api/v1/namespaces/manual/finalize", "-f",
                   str(body)) == (
        'The Namespace "manual" is invalid: spec.finalizers[0]: Invalid value: "mine": name is '
        "neither a standard finalizer name nor is it fully qualified")
    # the Python client's replace_namespace_finalize: emptied, a deleted namespace goes
    core.delete_namespace("manual")
    assert core.read_namespace("manual").status.phase == "Terminating"
    current = core.read_namespace("manual")
    current.spec.finalizers = []
    assert core.replace_namespace_finalize("manual", current).spec.finalizers is None
    with pytest.raises(ApiException) as gone:
        core.read_namespace("manual")
    assert gone.value.status == 404


def test_discovery_lists_the_new_resources(up: Up, core: Any) -> None:
    names = {r.name for r in core.get_api_resources().resources}
    assert {"namespaces/finalize", "namespaces/status"} <= names
    scheduling: Any = client.SchedulingV1Api(core.api_client)
    assert {pc.metadata.name for pc in scheduling.list_priority_class().items} >= {
        "system-node-critical", "system-cluster-critical"}
    with pytest.raises(ApiException) as missing:
        scheduling.read_priority_class("nope")
    assert missing.value.status == 404
