"""ConfigMaps, Services, their endpoints and the RBAC kinds on `python -m kubelet_sim up`,
driven by the real kubectl (v1.35) and the official Python client: what they create,
the columns `kubectl get` prints, kube-apiserver's refusals, `kubectl cluster-info`,
`kubectl expose` and `kubectl get all`, on a cluster started with its own
--service-cluster-ip-range and --service-node-port-range."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config

from tests.fixtures.up_process import KUBECTL, Up, running_up

from .conftest import needs_kubectl

pytestmark = needs_kubectl

CONFIG_MAP = """apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {mode: fast, level: "3"}
binaryData: {blob: aGVsbG8=}
"""

RBAC = """apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: plugin-runner}
rules:
- apiGroups: [""]
  resources: ["persistentvolumes"]
  verbs: ["get", "list", "watch", "create", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: plugin-role}
subjects: [{kind: ServiceAccount, name: plugin, namespace: default}]
roleRef: {kind: ClusterRole, name: plugin-runner, apiGroup: rbac.authorization.k8s.io}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: plugin-cfg}
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "update", "create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: plugin-cfg}
subjects: [{kind: ServiceAccount, name: plugin, namespace: default}]
roleRef: {kind: Role, name: plugin-cfg, apiGroup: rbac.authorization.k8s.io}
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--service-cluster-ip-range", "10.100.0.0/16",
                    "--service-node-port-range", "31000-31999") as running:
        yield running


def refused(up: Up, *args: str) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip()


def rows(up: Up, *args: str) -> list[list[str]]:
    return [line.split() for line in up.kubectl("get", *args).splitlines()]


def eventually(what: Callable[[], Any], timeout: float = 60) -> Any:
    """Poll ``what`` until it returns something truthy (the controllers run in real time)."""
    deadline = time.monotonic() + timeout
    while True:
        found = what()
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def test_config_maps_from_literals_and_a_manifest(up: Up) -> None:
    assert up.kubectl("create", "configmap", "lit", "--from-literal=a=b",
                      "--from-literal=c=d").strip() == "configmap/lit created"
    assert up.kubectl("apply", "-f", "-", stdin=CONFIG_MAP).strip() == \
        "configmap/settings created"
    table = rows(up, "cm")
    assert table[0] == ["NAME", "DATA", "AGE"]
    # beside the root-ca-cert-publisher's kube-root-ca.crt, as in every namespace
    assert sorted(r[:2] for r in table[1:]) == [["kube-root-ca.crt", "1"], ["lit", "2"],
                                               ["settings", "3"]]
    stored = json.loads(up.kubectl("get", "configmap", "settings", "-o", "json"))
    assert stored["data"] == {"mode": "fast", "level": "3"}
    assert stored["binaryData"] == {"blob": "aGVsbG8="}
    assert "a valid config key must consist of alphanumeric characters" in refused(
        up, "create", "configmap", "bad", "--from-literal=a b=c")


def test_cluster_info_finds_the_kubernetes_service_and_its_endpoints(up: Up) -> None:
    port = json.loads(up.kubectl("config", "view", "--raw", "-o", "json"))[
        "clusters"][0]["cluster"]["server"].rsplit(":", 1)[1]
    assert f"Kubernetes control plane is running at https://127.0.0.1:{port}" in up.kubectl(
        "cluster-info")
    assert rows(up, "svc", "kubernetes")[1][:5] == ["kubernetes", "ClusterIP", "10.100.0.1",
                                                    "<none>", "443/TCP"]
    assert rows(up, "endpoints", "kubernetes")[1][:2] == ["kubernetes", f"127.0.0.1:{port}"]
    assert rows(up, "endpointslices", "kubernetes")[1][:4] == ["kubernetes", "IPv4", port,
                                                               "127.0.0.1"]
    said = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "endpoints"],
                          capture_output=True, text=True, timeout=30, check=True).stderr
    assert said.strip() == ("Warning: v1 Endpoints is deprecated in v1.33+; use "
                            "discovery.k8s.io/v1 EndpointSlice")


def test_service_types_print_as_kubectl_prints_them(up: Up) -> None:
    up.kubectl("create", "service", "nodeport", "np", "--tcp=80:8080", "--node-port=31080")
    up.kubectl("create", "service", "clusterip", "headless", "--clusterip=None")
    up.kubectl("create", "service", "loadbalancer", "lb", "--tcp=443:8443")
    up.kubectl("create", "service", "externalname", "ext", "--external-name=example.com")
    table = {r[0]: r for r in rows(up, "svc", "-o", "wide")}
    assert table["NAME"] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE",
                             "SELECTOR"]
    assert table["np"][1] == "NodePort" and table["np"][4] == "80:31080/TCP"
    assert table["np"][2].startswith("10.100.") and table["np"][6] == "app=np"
    assert table["headless"][1:5] == ["ClusterIP", "None", "<none>", "<none>"]
    assert table["lb"][1] == "LoadBalancer" and table["lb"][3] == "<pending>"
    assert table["lb"][4].startswith("443:31") and table["lb"][4].endswith("/TCP")
    assert table["ext"][1:5] == ["ExternalName", "<none>", "example.com", "<none>"]


def test_kube_apiservers_refusals_reach_kubectl(up: Up) -> None:
    up.kubectl("create", "service", "nodeport", "taken", "--tcp=80", "--node-port=31090")
    assert refused(up, "create", "service", "nodeport", "again", "--tcp=80",
                   "--node-port=31090") == (
        'error: failed to create NodePort service: Service "again" is invalid: '
        "spec.ports[0].nodePort: Invalid value: 31090: provided port is already allocated")
    assert refused(up, "create", "service", "clusterip", "far", "--tcp=80",
                   "--clusterip=1.1.1.1") == (
        'error: failed to create ClusterIP service: Service "far" is invalid: '
        'spec.clusterIPs: Invalid value: []string{"1.1.1.1"}: failed to allocate IP '
        "1.1.1.1: the provided IP (1.1.1.1) is not in the valid range. The range of valid "
        "IPs is 10.100.0.0/16")
    assert refused(up, "patch", "svc", "taken", "-p", '{"spec":{"clusterIP":"10.100.0.99"}}') \
        .endswith('spec.clusterIPs[0]: Invalid value: []string{"10.100.0.99"}: may not '
                  "change once set")


def test_expose_a_pod_and_its_endpoints_follow_the_pod(up: Up) -> None:
    up.kubectl("run", "web", "--image=nginx", "--labels=app=web,tier=front", "--port=80")
    assert up.kubectl("expose", "pod/web", "--port", "80").strip() == "service/web exposed"
    up.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
    ip = up.kubectl("get", "pod", "web", "-o", "jsonpath={.status.podIP}")

    def endpoints() -> list[str]:
        found = rows(up, "endpoints", "web")[1]
        return found if found[1] == f"{ip}:80" else []

    assert eventually(endpoints)
    [eps] = json.loads(up.kubectl("get", "endpointslices", "-l",
                                  "kubernetes.io/service-name=web", "-o", "json"))["items"]
    assert eps["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslice-controller.k8s.io"
    assert eps["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert eps["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]
    [endpoint] = eps["endpoints"]
    assert endpoint["addresses"] == [ip] and endpoint["nodeName"] == "node-1"
    assert endpoint["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert endpoint["targetRef"]["name"] == "web"
    up.kubectl("delete", "pod", "web", "--wait=true")
    assert eventually(lambda: rows(up, "endpoints", "web")[1][1] == "<none>")
    up.kubectl("delete", "svc", "web")
    assert eventually(lambda: up.kubectl("get", "endpointslices", "-l",
                                         "kubernetes.io/service-name=web", "-o",
                                         "name").strip() == "")


def test_rbac_manifests_apply_and_print(up: Up) -> None:
    out = up.kubectl("apply", "-f", "-", stdin=RBAC).splitlines()
    assert out == ["clusterrole.rbac.authorization.k8s.io/plugin-runner created",
                   "clusterrolebinding.rbac.authorization.k8s.io/plugin-role created",
                   "role.rbac.authorization.k8s.io/plugin-cfg created",
                   "rolebinding.rbac.authorization.k8s.io/plugin-cfg created"]
    assert rows(up, "clusterrole", "plugin-runner")[0] == ["NAME", "CREATED", "AT"]
    binding = rows(up, "rolebinding", "plugin-cfg", "-o", "wide")
    assert binding[0] == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert binding[1][1] == "Role/plugin-cfg" and binding[1][-1] == "default/plugin"


def test_get_all_lists_pods_and_services(up: Up) -> None:
    up.kubectl("create", "service", "clusterip", "listed", "--tcp=80")
    names = up.kubectl("get", "all", "-o", "name").split()
    assert "service/kubernetes" in names and "service/listed" in names
    assert not any(n.startswith(("configmap/", "endpoints/")) for n in names)


def test_the_python_client_creates_services_and_reads_endpoints(up: Up) -> None:
    core: Any = client.CoreV1Api(config.new_client_from_config(up.kubeconfig))
    made = core.create_namespaced_service("default", {
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "py"},
        "spec": {"selector": {"app": "py"}, "ports": [{"port": 5432, "name": "pg"}]}})
    assert made.spec.cluster_ip.startswith("10.100.") and made.spec.ports[0].target_port == 5432
    assert eventually(lambda: [e.metadata.name for e in
                               core.list_namespaced_endpoints("default").items
                               if e.metadata.name == "py"])
    cm = core.create_namespaced_config_map("default", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "py"},
        "data": {"k": "v"}})
    assert core.read_namespaced_config_map("py", "default").data == cm.data == {"k": "v"}


def test_a_server_dry_run_answers_kubes_placeholder_ip_and_port_and_keeps_nothing(
        up: Up) -> None:
    # kube's dry-run allocators look for no free value: the range's network address, and
    # one past 32768 for a node port whatever the range
    shown = up.kubectl("create", "service", "nodeport", "dry", "--tcp=80", "--dry-run=server",
                       "-o", "json")
    spec = json.loads(shown)["spec"]
    assert spec["clusterIP"] == "10.100.0.0" and spec["clusterIPs"] == ["10.100.0.0"]
    assert spec["ports"][0]["nodePort"] == 32769
    assert 'services "dry" not found' in refused(up, "get", "svc", "dry")
