"""``python -m kubelet_sim apply FILE.yaml`` in a fresh process: the manifests go onto a new
simulated cluster, pods and claims are reported with their status and the trace; a bad
manifest exits 1 naming the document and the field, before anything is applied."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT_ROOT = Path(__file__).resolve().parents[2]
POD_WITH_PVC = PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"
# The other examples (pod-with-pvc.yaml has its own, closer test).
EXAMPLES = sorted(set((PROJECT_ROOT / "examples").glob("*.yaml")) - {POD_WITH_PVC})
STATUS_LINE = re.compile(r"^  (\S+)/(\S+)\s+(\w+)\s", re.MULTILINE)


def run_apply(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelet_sim", "apply", *map(str, args)],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120,
                          check=False)


def statuses(stdout: str, section: str) -> dict[str, str]:
    """``namespace/name -> phase`` from one section (PODS or PERSISTENTVOLUMECLAIMS)."""
    body = stdout.split(f"\n{section}\n", 1)[1]
    body = re.split(r"\n[A-Z]+\n", body, maxsplit=1)[0]
    return {f"{ns}/{name}": phase for ns, name, phase in STATUS_LINE.findall(body)}


def test_example_with_a_claim_a_pod_and_a_policy_runs_the_pods_and_binds_the_claim(
    tmp_path: Path,
) -> None:
    trace_file = tmp_path / "trace.jsonl"
    result = run_apply(POD_WITH_PVC, "--trace-file", trace_file)
    assert result.returncode == 0, result.stdout + result.stderr
    for applied in ("storageclass/mini", "persistentvolumeclaim/db-data", "pod/db", "pod/web",
                    "networkpolicy/db-allow-web"):
        assert f"{applied} applied" in result.stdout
    assert statuses(result.stdout, "PODS") == {"default/db": "Running", "default/web": "Running"}
    assert statuses(result.stdout, "PERSISTENTVOLUMECLAIMS") == {"default/db-data": "Bound"}
    assert "capacity=2Gi" in result.stdout
    events = [json.loads(line) for line in trace_file.read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    calls = [e["call"] for e in events]
    for call in ("csi.Controller/CreateVolume", "csi.Controller/ControllerPublishVolume",
                 "csi.Node/NodeStageVolume", "csi.Node/NodePublishVolume", "cni ADD emu-bridge"):
        assert call in calls
    assert calls.index("csi.Node/NodePublishVolume") < calls.index("cni ADD emu-loopback")
    assert "csi.Controller/CreateVolume" in result.stdout.split("\nTRACE\n", 1)[1]


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_applies_with_pods_running_and_claims_bound(example: Path) -> None:
    result = run_apply(example)
    assert result.returncode == 0, result.stdout + result.stderr
    pods = statuses(result.stdout, "PODS")
    assert pods and set(pods.values()) == {"Running"}
    assert set(statuses(result.stdout, "PERSISTENTVOLUMECLAIMS").values()) <= {"Bound"}


def test_manifest_with_a_missing_field_exits_1_naming_the_document_and_field(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n"
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n"
        "    - name: app\n")
    result = run_apply(bad)
    assert result.returncode == 1
    assert f"{bad}: document 2 (Pod web): spec.containers[0].image: Required value" \
        in result.stderr
    assert "applied" not in result.stdout


def test_manifest_the_api_server_refuses_exits_1_naming_the_object(tmp_path: Path) -> None:
    bad = tmp_path / "elsewhere.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: nowhere}\n"
                   "spec: {containers: [{name: app, image: pause}]}\n")
    result = run_apply(bad)
    assert result.returncode == 1
    assert "Pod nowhere/web" in result.stderr
    assert "not found" in result.stderr


def test_missing_file_exits_1_saying_it_cannot_be_read(tmp_path: Path) -> None:
    result = run_apply(tmp_path / "absent.yaml")
    assert result.returncode == 1
    assert "absent.yaml: cannot read" in result.stderr
