"""The workload kinds against a running `up` of three nodes, driven by the real kubectl:
a Deployment created, scaled, updated and rolled back (`rollout status/history/undo`); a
StatefulSet of three with a volumeClaimTemplate (three claims provisioned through our
driver, each pod's volume staged and published on its node, the claims kept on scale
down and found again on scale up); a DaemonSet on every node; a Job of five completions;
`kubectl get all`; and the API's validation of these kinds."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

STORAGE_CLASS = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: mini}
provisioner: csi-mini.example.com
volumeBindingMode: WaitForFirstConsumer
"""

STATEFUL_SET = """apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
      - name: db
        image: postgres
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      storageClassName: mini
      resources: {requests: {storage: 1Gi}}
"""

DAEMON_SET = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: agent:1}]
"""

JOB = """apiVersion: batch/v1
kind: Job
metadata: {name: batch}
spec:
  completions: 5
  parallelism: 2
  template:
    metadata:
      annotations: {sim.cni-csi-mini.io/exit-after: 500ms}
    spec:
      restartPolicy: Never
      containers: [{name: work, image: busybox}]
"""


# a volume's node calls, in the order the kubelet makes them for one pod
STAGING = ("NodeStageVolume", "NodePublishVolume", "NodeUnpublishVolume", "NodeUnstageVolume")


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "3") as cluster:
        yield cluster


def kubectl_fails(up: Up, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr


def get_json(up: Up, *args: str) -> Any:
    return json.loads(up.kubectl("get", *args, "-o", "json"))


def csi_calls(up: Up, log: str) -> list[dict[str, Any]]:
    """The RPCs the driver process logged (one JSON line per call)."""
    path = up.state / "cluster" / "logs" / log
    return [json.loads(line) for line in path.read_text().splitlines()
            if line.startswith("{")]


def test_deployment_create_scale_set_image_rollout_status_and_undo(up: Up) -> None:
    up.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    said = up.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    assert 'deployment "web" successfully rolled out' in said
    deployment = get_json(up, "deployment", "web")
    assert deployment["spec"]["strategy"] == {
        "type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert deployment["spec"]["revisionHistoryLimit"] == 10
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    conditions = {c["type"]: c["reason"] for c in deployment["status"]["conditions"]}
    assert conditions == {"Available": "MinimumReplicasAvailable",
                          "Progressing": "NewReplicaSetAvailable"}
    [rs] = get_json(up, "replicasets", "-l", "app=web")["items"]
    pod_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["metadata"]["ownerReferences"][0]["kind"] == "Deployment"
    pods = get_json(up, "pods", "-l", "app=web")["items"]
    assert len(pods) == 2
    assert all(p["metadata"]["name"].startswith(f"web-{pod_hash}-") for p in pods)

    up.kubectl("scale", "deployment", "web", "--replicas=3")
    up.kubectl("rollout", "status", "deployment/web", "--timeout=60s", timeout=90)
    header, row = up.kubectl("get", "deployment", "web").splitlines()
    assert header.split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row.split()[:4] == ["web", "3/3", "3", "3"]

    up.kubectl("set", "image", "deployment/web", "nginx=nginx:1.27")
    said = up.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    assert 'deployment "web" successfully rolled out' in said
    sets = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]:
            r for r in get_json(up, "replicasets", "-l", "app=web")["items"]}
    assert sets["1"]["spec"]["replicas"] == 0
    assert sets["2"]["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    history = up.kubectl("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line] == ["1", "2"]

    up.kubectl("rollout", "undo", "deployment/web")
    up.kubectl("rollout", "status", "deployment/web", "--timeout=90s", timeout=120)
    wait_for(lambda: {p["spec"]["containers"][0]["image"]
                      for p in get_json(up, "pods", "-l", "app=web")["items"]} == {"nginx"},
             what="the pods back at the first template")
    first = get_json(up, "replicaset", sets["1"]["metadata"]["name"])
    assert first["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "3"
    assert first["spec"]["replicas"] == 3
    history = up.kubectl("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line] == ["2", "3"]

    # kubectl expose reads the Deployment's selector; the endpointslice controller follows
    up.kubectl("expose", "deployment", "web", "--port=80", "--target-port=8080")
    service = get_json(up, "service", "web")
    assert service["spec"]["selector"] == {"app": "web"}
    assert service["spec"]["clusterIP"].startswith("10.")

    def endpoints_are_the_pods() -> bool:
        ips = {p["status"].get("podIP") for p in get_json(up, "pods", "-l", "app=web")["items"]}
        slices = get_json(up, "endpointslices", "-l", "kubernetes.io/service-name=web")
        ready = {a for s in slices["items"] for e in s.get("endpoints") or []
                 if e["conditions"].get("ready") for a in e["addresses"]}
        return len(ips) == 3 and ready == ips
    wait_for(endpoints_are_the_pods, what="the Service's EndpointSlice to hold the pods' IPs")
    up.kubectl("delete", "service", "web")
    up.kubectl("delete", "deployment", "web")
    wait_for(lambda: not get_json(up, "pods", "-l", "app=web")["items"],
             what="the garbage collector removing the ReplicaSets' pods")


def test_stateful_set_claims_are_provisioned_staged_published_and_kept_across_scaling(
        up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "sts.yaml"
    manifest.write_text(STORAGE_CLASS + "---\n" + STATEFUL_SET)
    up.kubectl("apply", "-f", str(manifest))
    said = up.kubectl("rollout", "status", "statefulset/db", "--timeout=90s", timeout=120)
    assert "partitioned roll out complete: 3 new pods have been updated" in said
    claims = {c["metadata"]["name"]: c for c in get_json(up, "pvc")["items"]}
    assert sorted(claims) == ["data-db-0", "data-db-1", "data-db-2"]
    assert all(c["status"]["phase"] == "Bound" for c in claims.values())
    volumes = {name: c["spec"]["volumeName"] for name, c in claims.items()}
    pods = {p["metadata"]["name"]: p for p in get_json(up, "pods", "-l", "app=db")["items"]}
    assert sorted(pods) == ["db-0", "db-1", "db-2"]
    created = [c for c in csi_calls(up, "csi-controller.log")
               if c["method"] == "/csi.v1.Controller/CreateVolume"]
    assert len(created) == 3
    for name, pod in pods.items():
        node = pod["spec"]["nodeName"]
        assert pod["spec"]["hostname"] == name and pod["spec"]["subdomain"] == "db"
        [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == "data"]
        assert volume["persistentVolumeClaim"]["claimName"] == f"data-{name}"
        calls = [c["method"].rsplit("/", 1)[1] for c in csi_calls(up, f"csi-{node}.log")
                 if c["method"] in ("/csi.v1.Node/NodeStageVolume",
                                    "/csi.v1.Node/NodePublishVolume")]
        assert calls[:2] == ["NodeStageVolume", "NodePublishVolume"], (node, calls)

    def controller_calls(method: str) -> int:
        return sum(1 for c in csi_calls(up, "csi-controller.log")
                   if c["method"] == f"/csi.v1.Controller/{method}")

    assert controller_calls("ControllerPublishVolume") == 3
    up.kubectl("scale", "statefulset", "db", "--replicas=1")
    wait_for(lambda: [p["metadata"]["name"] for p in get_json(
        up, "pods", "-l", "app=db")["items"]] == ["db-0"], what="db-2 and db-1 gone")
    kept = {c["metadata"]["name"]: c["spec"]["volumeName"] for c in get_json(up, "pvc")["items"]}
    assert kept == volumes  # whenScaled: Retain (the default)
    # the removed pods' volumes: unpublished, unstaged on their nodes, then detached (the
    # driver writes its log line just after answering: wait for it)
    for name in ("db-1", "db-2"):
        node = pods[name]["spec"]["nodeName"]
        handle = get_json(up, "pv", volumes[f"data-{name}"])["spec"]["csi"]["volumeHandle"]

        def node_calls(node: str = node, handle: str = handle) -> list[str]:
            return [c["method"].rsplit("/", 1)[1] for c in csi_calls(up, f"csi-{node}.log")
                    if c["request"].get("volume_id") == handle
                    and c["method"].rsplit("/", 1)[1] in STAGING]

        wait_for(lambda: node_calls() == list(STAGING), timeout=20,
                 what=f"{name}'s volume unpublished and unstaged")
    wait_for(lambda: controller_calls("ControllerUnpublishVolume") == 2,
             what="the two volumes detached")

    up.kubectl("scale", "statefulset", "db", "--replicas=3")
    up.kubectl("rollout", "status", "statefulset/db", "--timeout=90s", timeout=120)
    again = {c["metadata"]["name"]: c["spec"]["volumeName"] for c in get_json(up, "pvc")["items"]}
    assert again == volumes  # the same claims, the same volumes
    assert controller_calls("CreateVolume") == 3  # no new volume: the claims were kept
    assert controller_calls("ControllerPublishVolume") == 5
    revisions = get_json(up, "controllerrevisions")["items"]
    assert [r["revision"] for r in revisions] == [1]
    status = get_json(up, "statefulset", "db")["status"]
    assert status["currentRevision"] == status["updateRevision"] == \
        revisions[0]["metadata"]["name"]


def test_daemon_set_runs_one_pod_per_node(up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "ds.yaml"
    manifest.write_text(DAEMON_SET)
    up.kubectl("apply", "-f", str(manifest))
    said = up.kubectl("rollout", "status", "daemonset/agent", "--timeout=60s", timeout=90)
    assert 'daemon set "agent" successfully rolled out' in said
    pods = get_json(up, "pods", "-l", "app=agent")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-1", "node-2", "node-3"]
    tolerations = pods[0]["spec"]["tolerations"]
    assert {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
            "effect": "NoExecute"} in tolerations
    header, row = up.kubectl("get", "daemonset", "agent").splitlines()
    assert header.split()[:6] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE",
                                  "AVAILABLE"]
    assert row.split()[:6] == ["agent", "3", "3", "3", "3", "3"]
    up.kubectl("delete", "daemonset", "agent")


def test_job_of_five_completions_completes(up: Up, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(JOB)
    up.kubectl("apply", "-f", str(manifest))
    up.kubectl("wait", "--for=condition=complete", "job/batch", "--timeout=60s", timeout=90)
    job = get_json(up, "job", "batch")
    assert job["status"]["succeeded"] == 5
    assert [c["type"] for c in job["status"]["conditions"]] == ["SuccessCriteriaMet",
                                                                "Complete"]
    pods = get_json(up, "pods", "-l", "batch.kubernetes.io/job-name=batch")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Succeeded"] * 5
    row = up.kubectl("get", "job", "batch", "--no-headers").split()
    assert row[:3] == ["batch", "Complete", "5/5"]

    def sandboxes() -> str:
        return "".join(f.read_text() for f in up.state.glob(
            "cluster/node-*/containerd/sandboxes/*"))
    # a finished pod's sandbox is stopped (CNI DEL) though the pod stays in the API
    wait_for(lambda: not any(p["metadata"]["uid"] in sandboxes() for p in pods),
             what="the finished pods' sandboxes removed")


def test_get_all_lists_the_workloads(up: Up) -> None:
    up.kubectl("create", "deployment", "shown", "--image=nginx")
    up.kubectl("rollout", "status", "deployment/shown", "--timeout=60s", timeout=90)
    out = up.kubectl("get", "all")
    for name in ("deployment.apps/shown", "statefulset.apps/db", "job.batch/batch"):
        assert name in out
    assert "replicaset.apps/shown-" in out


def test_validation_of_workloads_as_kube_apiserver(up: Up) -> None:
    mismatch = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bad"},
                "spec": {"selector": {"matchLabels": {"app": "a"}},
                         "template": {"metadata": {"labels": {"app": "b"}},
                                      "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    said = kubectl_fails(up, "create", "-f", "-", stdin=json.dumps(mismatch))
    assert ('spec.template.metadata.labels: Invalid value: map[string]string{"app":"b"}: '
            "`selector` does not match template `labels`") in said
    never = json.loads(json.dumps(mismatch))
    never["spec"]["template"]["metadata"]["labels"] = {"app": "a"}
    never["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    said = kubectl_fails(up, "create", "-f", "-", stdin=json.dumps(never))
    assert 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: ' \
        '"Always"' in said
    up.kubectl("create", "deployment", "fixed", "--image=nginx", "--replicas=0")
    said = kubectl_fails(up, "patch", "deployment", "fixed", "--type=json", "-p", json.dumps(
        [{"op": "replace", "path": "/spec/selector/matchLabels/app", "value": "other"},
         {"op": "replace", "path": "/spec/template/metadata/labels/app", "value": "other"}]))
    assert "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string" \
        '{"app":"other"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is ' \
        "immutable" in said


def test_a_selector_changed_away_from_the_template_is_refused_with_both_causes(
        up: Up) -> None:
    up.kubectl("create", "deployment", "moved", "--image=nginx", "--replicas=0")
    said = kubectl_fails(up, "patch", "deployment", "moved", "-p",
                         '{"spec":{"selector":{"matchLabels":{"app":"other"}}}}')
    assert said.splitlines() == [
        'The Deployment "moved" is invalid: ',
        '* spec.template.metadata.labels: Invalid value: map[string]string{"app":"moved"}: '
        "`selector` does not match template `labels`",
        '* spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string'
        '{"app":"other"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is '
        "immutable"]
