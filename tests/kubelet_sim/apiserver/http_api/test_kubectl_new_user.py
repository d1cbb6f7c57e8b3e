"""What a new user meets first with the real kubectl against `up`, as a real cluster
answers it: nodes labelled and described as a kubelet registers them (so the usual
DaemonSet's `nodeSelector: kubernetes.io/os: linux` runs everywhere), the default
StorageClass marked and given to claims that name none (DefaultStorageClass admission,
and the PV controller's retroactive default), and `kubectl debug` told that ephemeral
containers are off rather than crashing on the 404."""

from __future__ import annotations

import base64
import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

DEFAULT_CLASS = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: csi-mini.example.com
volumeBindingMode: WaitForFirstConsumer
"""

OTHER_CLASS = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: other}
provisioner: csi-mini.example.com
"""

LINUX_DAEMON_SET = """apiVersion: apps/v1
kind: DaemonSet
metadata: {name: logs, namespace: kube-system}
spec:
  selector: {matchLabels: {name: logs}}
  template:
    metadata: {labels: {name: logs}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      tolerations: [{key: node-role.kubernetes.io/control-plane, operator: Exists,
                     effect: NoSchedule}]
      containers: [{name: agent, image: fluentd}]
"""


def claim(name: str, storage_class: str | None = None) -> str:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "1Gi"}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return json.dumps({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": name}, "spec": spec})


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "2") as cluster:
        yield cluster


def claim_class(up: Up, name: str) -> Any:
    return json.loads(up.kubectl("get", "pvc", name, "-o", "json"))["spec"].get(
        "storageClassName")


def test_nodes_carry_the_kubelets_os_and_arch_labels_and_node_info(up: Up) -> None:
    node = json.loads(up.kubectl("get", "node", "node-1", "-o", "json"))
    labels = node["metadata"]["labels"]
    assert labels["kubernetes.io/os"] == labels["beta.kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/arch"] == labels["beta.kubernetes.io/arch"] != ""
    info = node["status"]["nodeInfo"]
    assert info["operatingSystem"] == "linux"
    assert info["architecture"] == labels["kubernetes.io/arch"]
    assert info["kubeletVersion"].startswith("v1.35.")
    assert info["containerRuntimeVersion"].startswith("containerd://")
    # every field NodeSystemInfo has without omitempty is there, kubeProxyVersion empty
    assert set(info) == {"machineID", "systemUUID", "bootID", "kernelVersion", "osImage",
                         "containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion",
                         "operatingSystem", "architecture"}
    assert info["kubeProxyVersion"] == ""


def test_get_nodes_wide_prints_os_image_kernel_and_runtime(up: Up) -> None:
    header, *rows = up.kubectl("get", "nodes", "-o", "wide").splitlines()
    assert header.split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                              "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                              "CONTAINER-RUNTIME"]
    assert len(rows) == 2
    assert rows[0].split()[4].startswith("v1.35.")
    assert rows[0].split()[-1].startswith("containerd://")


def test_a_daemon_set_selecting_linux_nodes_runs_on_every_node(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=LINUX_DAEMON_SET)

    def scheduled() -> bool:
        ds = json.loads(up.kubectl("get", "ds", "logs", "-n", "kube-system", "-o", "json"))
        return ds.get("status", {}).get("currentNumberScheduled") == 2

    wait_for(scheduled, "a daemon pod on both nodes")


def test_get_storageclass_marks_the_default_one(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=DEFAULT_CLASS)
    up.kubectl("apply", "-f", "-", stdin=OTHER_CLASS)
    names = [line.split()[0:2] for line in up.kubectl("get", "sc").splitlines()[1:]]
    assert ["other", "csi-mini.example.com"] in names
    assert ["standard", "(default)"] in names


def test_a_claim_naming_no_class_gets_the_default_one_and_an_empty_class_stays(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=DEFAULT_CLASS)
    up.kubectl("create", "-f", "-", stdin=claim("plain"))
    up.kubectl("create", "-f", "-", stdin=claim("chosen", "other"))
    up.kubectl("create", "-f", "-", stdin=claim("static", ""))
    assert claim_class(up, "plain") == "standard"
    assert claim_class(up, "chosen") == "other"
    assert claim_class(up, "static") == ""


def test_a_claim_made_before_any_default_class_gets_it_once_one_exists(up: Up) -> None:
    up.kubectl("annotate", "sc", "standard",
               "storageclass.kubernetes.io/is-default-class=false", "--overwrite")
    up.kubectl("create", "-f", "-", stdin=claim("early"))
    assert claim_class(up, "early") is None
    up.kubectl("annotate", "sc", "other",
               "storageclass.kubernetes.io/is-default-class=true", "--overwrite")
    wait_for(lambda: claim_class(up, "early") == "other", "the retroactive default class")


def test_kubectl_debug_hears_that_ephemeral_containers_are_not_served(up: Up) -> None:
    up.kubectl("run", "target", "--image=nginx")
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "debug", "target",
                           "--image=busybox", "--profile=general"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1, done.stdout
    assert "ephemeral containers are disabled for this cluster" in done.stderr
    assert "panic" not in done.stderr


def test_an_unknown_path_is_kube_apiservers_404_with_empty_details(up: Up) -> None:
    config = yaml.safe_load(Path(up.kubeconfig).read_text())
    cluster = config["clusters"][0]["cluster"]
    tls = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    sent = urllib.request.Request(
        cluster["server"] + "/api/v1/namespaces/default/pods/target/nosuchsubresource",
        headers={"Authorization": "Bearer " + config["users"][0]["user"]["token"]})
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(sent, context=tls)
    status = json.loads(answer.value.read())
    assert answer.value.code == 404
    assert (status["reason"], status["details"]) == ("NotFound", {})
    assert status["message"] == "the server could not find the requested resource"


def test_a_tagless_image_is_pulled_before_its_container_starts(up: Up) -> None:
    up.kubectl("run", "tagless", "--image=nginx")

    def reasons() -> list[str] | None:
        events = sorted(up.events("involvedObject.name=tagless"),
                        key=lambda e: e["metadata"]["creationTimestamp"])
        seen = [e["reason"] for e in events if e["reason"] != "Scheduled"]
        return seen if "Started" in seen else None

    assert wait_for(reasons, "the container's start events") == [
        "Pulling", "Pulled", "Created", "Started"]
    pulled = up.events("involvedObject.name=tagless,reason=Pulled")[0]
    assert pulled["message"].startswith('Successfully pulled image "nginx" in ')


def test_get_pods_wide_counts_the_readiness_gates_that_hold(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
        "spec": {"readinessGates": [{"conditionType": "example.com/lb"}],
                 "containers": [{"name": "app", "image": "nginx:1.27"}]}}))
    row = up.kubectl("get", "pod", "gated", "-o", "wide", "--no-headers").split()
    assert row[-1] == "0/1"


def test_get_namespaces_lists_the_system_ones_with_their_status(up: Up) -> None:
    header, *rows = up.kubectl("get", "namespaces").splitlines()
    assert header.split() == ["NAME", "STATUS", "AGE"]
    listed = {row.split()[0]: row.split()[1] for row in rows}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= set(listed)
    assert set(listed.values()) == {"Active"}


def test_get_csidriver_prints_the_drivers_settings(up: Up) -> None:
    header, row = up.kubectl("get", "csidriver").splitlines()
    assert header.split() == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY",
                              "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES", "AGE"]
    driver = json.loads(up.kubectl("get", "csidriver", "-o", "json"))["items"][0]["spec"]
    cells = row.split()
    assert cells[1:4] == [str(driver["attachRequired"]).lower(),
                          str(driver["podInfoOnMount"]).lower(),
                          str(driver["storageCapacity"]).lower()]
    assert cells[4] == "<unset>"
    assert cells[6] == ",".join(driver["volumeLifecycleModes"])


def test_get_all_prints_the_kinds_in_discovery_order_daemonsets_before_deployments(
        up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=LINUX_DAEMON_SET)
    up.kubectl("create", "deployment", "web", "--image=nginx:1.27")
    up.kubectl("create", "job", "once", "--image=busybox:1.36")
    kinds = [line.split()[1].split("/")[0] for line in up.kubectl(
        "get", "all", "-A", "--no-headers").splitlines() if line.strip()]
    order = list(dict.fromkeys(kinds))
    assert order.index("pod") < order.index("service") < order.index("daemonset.apps") < \
        order.index("deployment.apps") < order.index("replicaset.apps") < \
        order.index("job.batch")
    apps = json.loads(up.kubectl("get", "--raw", "/apis/apps/v1"))["resources"]
    assert [r["name"] for r in apps] == sorted(r["name"] for r in apps)


def test_a_container_missing_its_config_map_has_its_image_pulled_then_fails(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "no-config"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27",
                                 "envFrom": [{"configMapRef": {"name": "absent"}}]}]}}))

    def reasons() -> list[str] | None:
        events = sorted(up.events("involvedObject.name=no-config"),
                        key=lambda e: e["metadata"]["creationTimestamp"])
        seen = [e["reason"] for e in events if e["reason"] != "Scheduled"]
        return seen if "Failed" in seen else None

    assert wait_for(reasons, "the config error") == ["Pulled", "Failed"]


def test_describe_node_lists_the_kubelets_and_node_controllers_events(up: Up) -> None:
    def reasons() -> list[str] | None:
        described = up.kubectl("describe", "node", "node-1").split("Events:", 1)[1]
        seen = [line.split()[1] for line in described.splitlines()[3:] if line.strip()]
        return seen if "RegisteredNode" in seen and "NodeReady" in seen else None

    seen = wait_for(reasons, "the node's events")
    for reason in ("Starting", "NodeHasSufficientMemory", "NodeHasNoDiskPressure",
                   "NodeHasSufficientPID", "NodeAllocatableEnforced"):
        assert reason in seen
    assert seen.index("Starting") < seen.index("NodeReady")
    ready = up.events("involvedObject.kind=Node,involvedObject.name=node-1,reason=NodeReady")
    assert ready[0]["message"] == "Node node-1 status is now: NodeReady"
    assert ready[0]["source"] == {"component": "kubelet", "host": "node-1"}
    starting = up.events("involvedObject.kind=Node,involvedObject.name=node-1,reason=Starting")
    assert [e.get("count", 1) for e in starting] == [1]  # the kubelet starts once
