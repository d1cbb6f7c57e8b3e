"""kubectl's drain, delete --all, get pdb and auth commands against a running `up`: the
node is cordoned with a patch, its pods (a ReplicaSet's) evicted through pods/eviction,
which asks their PodDisruptionBudget (kept up to date by the disruption controller in the
control plane)."""

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


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    """One plain `up` for the tests that neither cordon a node nor need a second one."""
    with running_up() as running:
        yield running


def replica_set(node: str) -> dict[str, Any]:
    """Two replicated pods on ``node`` (kubectl drain refuses bare pods without --force);
    their replacements can go nowhere else."""
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                         "nodeSelector": {"kubernetes.io/hostname": node},
                         "containers": [{"name": "c", "image": "busybox"}]}}}}


def kubectl_fails(up: Up, *args: str, timeout: float = 60) -> str:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, *args],
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def pods_of(up: Up) -> dict[str, dict[str, Any]]:
    items = json.loads(up.kubectl("get", "pods", "-o", "json"))["items"]
    return {p["metadata"]["name"]: p for p in items}


def on_node(up: Up, node: str) -> dict[str, dict[str, Any]]:
    return {name: p for name, p in pods_of(up).items() if p["spec"].get("nodeName") == node}


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in pod.get("status", {}).get("conditions") or [])


def test_drain_evicts_what_the_budget_allows_then_everything_once_it_is_gone(
        tmp_path: Path) -> None:
    with running_up("--nodes", "2") as up:
        manifest = tmp_path / "rs.json"
        manifest.write_text(json.dumps(replica_set("node-1")))
        up.kubectl("apply", "-f", str(manifest))
        wait_for(lambda: len(on_node(up, "node-1")) == 2
                 and all(map(ready, on_node(up, "node-1").values())), what="both pods Ready")
        pdb = tmp_path / "pdb.json"
        pdb.write_text(json.dumps({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}))
        up.kubectl("apply", "-f", str(pdb))

        def pdb_row() -> list[str]:
            return up.kubectl("get", "pdb", "web", "--no-headers").split()

        wait_for(lambda: pdb_row()[:4] == ["web", "1", "N/A", "1"],
                 what="the disruption controller allowing one disruption")
        header = up.kubectl("get", "pdb").splitlines()[0].split()
        assert header == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED",
                          "DISRUPTIONS", "AGE"]

        # one pod may go; the other would break the budget: kubectl retries, then gives up
        said = kubectl_fails(up, "drain", "node-1", "--ignore-daemonsets",
                             "--delete-emptydir-data", "--timeout=7s", timeout=90)
        assert "Cannot evict pod as it would violate the pod's disruption budget." in said
        node = json.loads(up.kubectl("get", "node", "node-1", "-o", "json"))
        assert node["spec"]["unschedulable"] is True  # cordoned first
        wait_for(lambda: len(on_node(up, "node-1")) == 1, what="the evicted pod gone")

        up.kubectl("delete", "pdb", "web")
        out = up.kubectl("drain", "node-1", "--ignore-daemonsets", "--delete-emptydir-data",
                         "--timeout=60s", timeout=90)
        assert "node/node-1 drained" in out
        assert on_node(up, "node-1") == {}
        # the ReplicaSet's replacements wait: their node is cordoned
        assert [p["status"]["phase"] for p in pods_of(up).values()] == ["Pending"] * 2


def test_delete_pods_all_deletes_every_pod_of_the_namespace(up: Up, tmp_path: Path) -> None:
    for name in ("a", "b"):
        manifest = tmp_path / f"{name}.json"
        manifest.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}))
        up.kubectl("apply", "-f", str(manifest))
    out = up.kubectl("delete", "pods", "--all", "--timeout=60s", timeout=90)
    assert sorted(out.splitlines()) == ['pod "a" deleted from default namespace',
                                        'pod "b" deleted from default namespace']
    assert pods_of(up) == {}


def test_kubectl_auth_whoami_names_the_cluster_admin(up: Up) -> None:
    out = up.kubectl("auth", "whoami")
    assert "kubernetes-admin" in out and "system:masters" in out


def test_kubectl_auth_can_i_says_yes_and_lists_every_rule(up: Up) -> None:
    assert up.kubectl("auth", "can-i", "create", "pods").strip() == "yes"
    listed = up.kubectl("auth", "can-i", "--list").splitlines()
    assert listed[0].split()[:2] == ["Resources", "Non-Resource"]
    assert any(row.split()[0] == "*.*" for row in listed[1:])
