"""The real kubectl (v1.35) against the simulated API server: discovery, get with the
columns a real cluster prints, apply (create, then a strategic merge patch), the patch
types, selectors, server dry-run, explain, watch and delete."""

from __future__ import annotations

import subprocess
import time

from .conftest import KUBECTL, POD, Served, needs_kubectl

pytestmark = needs_kubectl


def test_version_and_nodes_table(served: Served) -> None:
    assert "Server Version: v1.35.0-cni-csi-mini" in served.kubectl("version").stdout
    out = served.kubectl("get", "nodes", "-o", "wide").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP",
                              "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION",
                              "CONTAINER-RUNTIME"]
    assert out[1].split()[:3] == ["node-1", "Ready", "<none>"]
    # a Node no kubelet described yet: kubectl's <unknown> for each of the three
    assert out[1].split()[-3:] == ["<unknown>"] * 3
    assert "192.168.0.1" in out[1]


def test_apply_creates_then_patches_and_get_prints_pod_columns(served: Served) -> None:
    assert served.kubectl("apply", "-f", "-", stdin=POD).stdout.strip() == "pod/web created"
    pod = served.api.get("Pod", "web", "default")
    assert "kubectl.kubernetes.io/last-applied-configuration" in pod.metadata.annotations
    changed = POD.replace("labels: {app: web}", "labels: {app: web, tier: front}")
    assert served.kubectl("apply", "-f", "-", stdin=changed).stdout.strip() == \
        "pod/web configured"
    assert served.api.get("Pod", "web", "default").metadata.labels == {"app": "web",
                                                                       "tier": "front"}
    lines = served.kubectl("get", "pods", "-o", "wide").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                "NOMINATED", "NODE", "READINESS", "GATES"]
    assert lines[1].split()[:4] == ["web", "0/1", "Pending", "0"]


def test_selectors_reach_the_server(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    served.kubectl("apply", "-f", "-", stdin=POD.replace("name: web", "name: db")
                   .replace("app: web", "app: db"))
    assert served.kubectl("get", "pods", "-l", "app=db", "-o", "name").stdout.split() == \
        ["pod/db"]
    assert served.kubectl("get", "pods", "--field-selector", "metadata.name=web", "-o",
                          "name").stdout.split() == ["pod/web"]
    assert served.kubectl("get", "pods", "--field-selector", "status.phase=Running",
                          "-o", "name").stdout.split() == []


def test_patch_types(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    served.kubectl("patch", "pod", "web", "--type=merge", "-p",
                   '{"metadata":{"labels":{"m":"1"}}}')
    served.kubectl("patch", "pod", "web", "--type=json", "-p",
                   '[{"op":"add","path":"/metadata/labels/j","value":"2"}]')
    # strategic: the container is merged by name (its image changes, its ports stay)
    served.kubectl("patch", "pod", "web", "-p",
                   '{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}')
    pod = served.api.get("Pod", "web", "default")
    assert pod.metadata.labels == {"app": "web", "m": "1", "j": "2"}
    [container] = pod.spec["containers"]
    assert container["image"] == "busybox:2"
    assert container["ports"] == [{"containerPort": 80, "protocol": "TCP"}]


def test_errors_read_as_kubernetes_words_them(served: Served) -> None:
    missing = served.kubectl("get", "pod", "nope", check=False)
    assert missing.returncode == 1
    assert 'Error from server (NotFound): pods "nope" not found' in missing.stderr
    served.kubectl("create", "-f", "-", stdin=POD)
    again = served.kubectl("create", "-f", "-", stdin=POD, check=False)
    assert ('Error from server (AlreadyExists): error when creating "STDIN": '
            'pods "web" already exists') in again.stderr
    immutable = served.kubectl("patch", "pod", "web", "--type=merge", "-p",
                               '{"spec":{"restartPolicy":"Never"}}', check=False)
    assert immutable.returncode == 1 and "Forbidden" in immutable.stderr


def test_server_dry_run_stores_nothing(served: Served) -> None:
    out = served.kubectl("apply", "--dry-run=server", "-f", "-", stdin=POD).stdout
    assert "pod/web created (server dry run)" in out
    assert served.api.list("Pod", "default").items == []


def test_explain_reads_the_openapi_schema(served: Served) -> None:
    out = served.kubectl("explain", "pods").stdout
    assert "KIND:       Pod" in out and "VERSION:    v1" in out
    assert "spec\t<PodSpec>" in out


def test_watch_streams_changes_and_delete_removes(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    watcher = subprocess.Popen([str(KUBECTL), "--kubeconfig", str(served.handle.kubeconfig),
                                "get", "pods", "-w", "--output-watch-events"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        served.api.patch("Pod", "web", {"metadata": {"labels": {"seen": "yes"}}}, "default")
        assert served.kubectl("delete", "pod", "web").stdout.startswith('pod "web" deleted')
        time.sleep(1.5)
    finally:
        watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    events = [line.split()[:2] for line in out.splitlines()[1:]]
    assert ["ADDED", "web"] in events and ["MODIFIED", "web"] in events
    assert ["DELETED", "web"] in events
    header = out.splitlines()[0].split()
    assert header[:4] == ["EVENT", "NAME", "READY", "STATUS"]
    assert served.api.list("Pod", "default").items == []
