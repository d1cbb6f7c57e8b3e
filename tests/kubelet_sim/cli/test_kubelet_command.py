"""`kubelet-sim kubelet` against a `kubelet-sim apiserver` process over HTTPS, read back with
kubectl: the Nodes and CSINodes it registers (labels, taints, podCIDRs), each node's
machine on disk with its own CNI config and CSI node plugin, the plugins stopped with it.

The last test runs a pod end to end: both nodes Ready, a pod bound by spec.nodeName Running
with an IP of its node's range, the same IP and sandbox after the process restarts."""

from __future__ import annotations

import ipaddress
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubelet_sim.kubelet_process import SIM_NODE_LABEL
from kubelet_sim.node_host import DRIVER_NAME, NodeDirs, install_cni_plugins, node_plugin
from tests.fixtures.apiserver_process import ApiServerProcess, running_apiserver
from tests.fixtures.kubelet_process import KubeletProcess
from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT

TAINT = "sim.cni-csi-mini.io/node=true:NoSchedule"

@pytest.fixture(scope="module")
def api() -> Iterator[ApiServerProcess]:
    with running_apiserver() as server:
        yield server


@pytest.fixture(scope="module")
def module_dir() -> Iterator[Path]:
    """Short paths (the plugin sockets live under the state dirs), and our CNI plugins laid
    out once for every kubelet of the module (--cni-bin-dir)."""
    path = Path(tempfile.mkdtemp(prefix="kc-", dir="/tmp"))
    install_cni_plugins(path / "bin")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def state(module_dir: Path) -> Path:
    """A kubelet's --state-dir of its own."""
    return Path(tempfile.mkdtemp(prefix="s-", dir=module_dir))


def kubelet_flags(module_dir: Path, state: Path, *flags: str) -> list[str]:
    return [*flags, "--state-dir", str(state), "--cni-bin-dir", str(module_dir / "bin")]


def kubectl(api: ApiServerProcess, *args: str, stdin: str | None = None) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", str(api.kubeconfig), *args],
                          input=stdin, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def get(api: ApiServerProcess, *what: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kubectl(api, "get", *what, "-o", "json"))
    return out


def running(pid_file: Path) -> bool:
    try:
        stat = Path(f"/proc/{int(pid_file.read_text())}/stat").read_text()
    except (OSError, ValueError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@dataclass
class Ran:
    """A kubelet process that joined, then was stopped: what it said, its state dir."""

    said: list[str]
    after: str  # what it printed after joining
    state: Path


@pytest.fixture(scope="module")
def two_nodes(api: ApiServerProcess, module_dir: Path) -> Ran:
    """`kubelet --nodes 2 --name-prefix reg- --pod-cidr 10.251.0.0/16` with our taint,
    started and stopped."""
    state = module_dir / "two-nodes"
    kubelet = KubeletProcess(api.kubeconfig, *kubelet_flags(
        module_dir, state, "--nodes", "2", "--name-prefix", "reg-", "--pod-cidr",
        "10.251.0.0/16", "--register-with-taints", TAINT)).start()
    return Ran(kubelet.said, kubelet.stop(), state)


def test_the_nodes_say_they_joined_the_api_server(two_nodes):
    assert two_nodes.said[-1].startswith("kubelet: 2 node(s) joined https://127.0.0.1:")
    assert "kubelet down" in two_nodes.after


def test_the_nodes_register_with_our_label_the_taint_and_their_own_pod_cidr(api, two_nodes):
    for i, name in enumerate(["reg-1", "reg-2"]):
        node = get(api, "node", name)
        assert node["metadata"]["labels"][SIM_NODE_LABEL] == "true"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == name
        assert node["spec"]["taints"] == [{"key": "sim.cni-csi-mini.io/node",
                                           "value": "true", "effect": "NoSchedule"}]
        assert node["spec"]["podCIDR"] == f"10.251.{i}.0/24"
        assert node["status"]["allocatable"]["pods"] == "110"


def test_each_node_has_a_csinode_owned_by_its_node(api, two_nodes):
    for name in ("reg-1", "reg-2"):
        node, csinode = get(api, "node", name), get(api, "csinode", name)
        assert csinode["metadata"]["ownerReferences"][0]["uid"] == node["metadata"]["uid"]


def test_each_node_has_its_own_cni_config_over_its_pod_cidr(two_nodes):
    for i, name in enumerate(["reg-1", "reg-2"]):
        node_dir = two_nodes.state / "nodes" / name
        conf = json.loads((node_dir / "net.d" / "10-mini.conflist").read_text())
        assert conf["plugins"][0]["ipam"]["ranges"] == [[{"subnet": f"10.251.{i}.0/24"}]]
        assert conf["plugins"][0]["ipam"]["dataDir"] == str(node_dir / "ipam")


def test_each_node_has_its_own_csi_node_plugin_stopped_with_the_process(two_nodes):
    state = two_nodes.state
    for i, name in enumerate(["reg-1", "reg-2"]):
        socket = state / "nodes" / name / "kubelet" / "plugins" / DRIVER_NAME / "csi.sock"
        assert any(line.startswith(f"node {name}: podCIDR 10.251.{i}.0/24, CSI node plugin "
                                   f"unix://{socket}") for line in two_nodes.said)
        assert (state / "logs" / f"csi-{name}.log").exists()  # it was started
        assert not running(state / "logs" / f"csi-{name}.pid")
        assert not socket.exists()
    # the storage array the node plugins share: by default in the state dir
    assert (state / "storage-array").is_dir()


async def test_a_node_with_a_root_dir_lays_out_beside_it_and_announces_the_given_plugin(
        api, module_dir):
    """The shape `up --processes` starts each node's kubelet in: its root dir, podCIDR,
    InternalIP and the node plugin it started itself; no --state-dir."""
    work = Path(tempfile.mkdtemp(prefix="w-", dir=module_dir))
    node_dir = work / "ext-1"
    plugin = node_plugin("ext-1", NodeDirs(node_dir), DRIVER_NAME,
                         ["--driver-name", DRIVER_NAME, "--state-dir", str(work / "array")],
                         work / "logs")
    plugin.start()
    try:
        await plugin.wait_ready()
        kubelet = KubeletProcess(
            api.kubeconfig, "--node-name", "ext-1", "--root-dir", str(node_dir / "kubelet"),
            "--pod-cidr", "10.248.0.0/24", "--node-ip", "10.1.2.3", "--csi-node-endpoint",
            f"ext-1={plugin.endpoint}", "--cni-bin-dir", str(module_dir / "bin")).start()
        assert kubelet.said[0] == (f"node ext-1: podCIDR 10.248.0.0/24, CSI node plugin "
                                   f"{plugin.endpoint}, dir {node_dir}")
        assert "kubelet down" in kubelet.stop()
        conf = json.loads((node_dir / "net.d" / "10-mini.conflist").read_text())
        assert conf["plugins"][0]["ipam"]["dataDir"] == str(node_dir / "ipam")
        addresses = get(api, "node", "ext-1")["status"]["addresses"]
        assert {"type": "InternalIP", "address": "10.1.2.3"} in addresses
        assert not (node_dir / "logs" / "csi-ext-1.log").exists()  # none of ours started
        assert plugin.process is not None and plugin.process.poll() is None  # not ours to stop
    finally:
        plugin.stop()


def test_the_shipped_rbac_applies_binding_the_kubelet_sim_service_account(api):
    kubectl(api, "apply", "-f", str(PROJECT_ROOT / "deploy" / "kubelet-rbac.yaml"))
    subject = {"apiGroup": "", "kind": "ServiceAccount", "name": "kubelet-sim",
               "namespace": "kube-system"}  # apiGroup defaulted as kube-apiserver does
    binding = get(api, "clusterrolebinding", "kubelet-sim-node")
    assert binding["subjects"] == [subject]
    assert binding["roleRef"]["name"] == "kubelet-sim-node"
    lease_binding = get(api, "rolebinding", "kubelet-sim-node-lease", "-n", "kube-node-lease")
    assert lease_binding["subjects"] == [subject]
    rules = get(api, "role", "kubelet-sim-node-lease", "-n", "kube-node-lease")["rules"]
    assert rules == [{"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                      "verbs": ["get", "create", "update"]}]
    get(api, "serviceaccount", "kubelet-sim", "-n", "kube-system")


# -- end to end: needs the converted Kubelet ----------------------------------------------


def wait_for(what: str, check: Any, kubelet: KubeletProcess, timeout: float = 60) -> Any:
    """Poll ``check()`` until it returns something true; fail at once if the kubelet
    process ended."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert kubelet.running(), f"the kubelet process ended while waiting for {what}"
        found = check()
        if found:
            return found
        time.sleep(0.3)
    raise AssertionError(f"no {what} within {timeout}s")


def ready(api: ApiServerProcess, name: str) -> bool:
    conditions = get(api, "node", name).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def pod_on(node: str, name: str) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": "default"},
                       "spec": {"nodeName": node, "containers": [
                           {"name": "c", "image": "registry.k8s.io/pause:3.9"}]}})


def running_ip(api: ApiServerProcess, name: str) -> str:
    pod = get(api, "pod", name)
    status = pod.get("status", {})
    return str(status.get("podIP", "")) if status.get("phase") == "Running" else ""


def test_two_nodes_go_ready_and_a_pod_bound_to_one_runs_with_an_ip_kept_across_a_restart(
        api, module_dir, state):
    flags = kubelet_flags(module_dir, state, "--nodes", "2", "--name-prefix", "e2e-",
                          "--pod-cidr", "10.254.0.0/16")
    kubelet = KubeletProcess(api.kubeconfig, *flags).start()
    try:
        for name in ("e2e-1", "e2e-2"):
            wait_for(f"{name} Ready", lambda n=name: ready(api, n), kubelet)
        kubectl(api, "create", "-f", "-", stdin=pod_on("e2e-2", "e2e-web"))
        ip = wait_for("e2e-web Running", lambda: running_ip(api, "e2e-web"), kubelet)
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.254.1.0/24")
        lease = get(api, "lease", "e2e-1", "-n", "kube-node-lease")
        assert lease["spec"]["holderIdentity"] == "e2e-1"
    finally:
        kubelet.stop()
    assert kubelet.returncode == 0
    sandboxes = state / "nodes" / "e2e-2" / "containerd" / "sandboxes"
    before = sorted(os.listdir(sandboxes))
    # started again on its state dir, the kubelet recovers the pod from the runtime state
    kubelet = KubeletProcess(api.kubeconfig, *flags).start()
    try:
        wait_for("e2e-2 Ready again", lambda: ready(api, "e2e-2"), kubelet)
        assert running_ip(api, "e2e-web") == ip
        assert sorted(os.listdir(sandboxes)) == before  # the same sandbox, no new one
    finally:
        kubelet.stop()
    assert kubelet.returncode == 0


def test_with_a_service_account_token_of_the_shipped_rbac_a_node_joins_and_runs_a_pod(
        api, module_dir, state):
    """The README's join steps against our API server, which enforces RBAC: the shipped
    role, a token from `kubectl create token`, a kubeconfig with it; every request the
    kubelets make is allowed, and nothing more (the node may not be deleted with it)."""
    kubectl(api, "apply", "-f", str(PROJECT_ROOT / "deploy" / "kubelet-rbac.yaml"))
    token = kubectl(api, "create", "token", "kubelet-sim", "-n", "kube-system",
                    "--duration=1h").strip()
    kubeconfig = state.parent / f"{state.name}.kubeconfig"
    shutil.copy(api.kubeconfig, kubeconfig)
    user = json.loads(kubectl(api, "config", "view", "--raw", "-o", "json"))["users"][0]["name"]
    subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "config", "set-credentials",
                    user, "--token", token], check=True, capture_output=True)
    who = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "auth", "whoami",
                          "-o", "json"], check=True, capture_output=True, text=True).stdout
    assert json.loads(who)["status"]["userInfo"]["username"] == \
        "system:serviceaccount:kube-system:kubelet-sim"
    kubelet = KubeletProcess(kubeconfig, *kubelet_flags(
        module_dir, state, "--node-name", "sa-1", "--pod-cidr", "10.253.0.0/24")).start()
    try:
        wait_for("sa-1 Ready", lambda: ready(api, "sa-1"), kubelet)
        kubectl(api, "create", "-f", "-", stdin=pod_on("sa-1", "sa-web"))
        ip = wait_for("sa-web Running", lambda: running_ip(api, "sa-web"), kubelet)
        assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.253.0.0/24")
        denied = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig), "delete",
                                 "node", "sa-1"], capture_output=True, text=True, check=False)
        assert denied.returncode != 0 and "Forbidden" in denied.stderr
    finally:
        kubectl(api, "delete", "pod", "sa-web", "--wait=false")
        said = kubelet.stop()
    assert kubelet.returncode == 0
    assert "forbidden" not in said.lower(), said
