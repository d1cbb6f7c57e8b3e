"""``python -m kubelet_sim apply FILE.yaml`` in a fresh process: the manifests go onto a new
simulated cluster, pods and claims are reported with their status and the trace; a bad
manifest exits 1 naming the document and the field, before anything is applied."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kubelet_sim.failing_plugins import FAILING_LOOPBACK_MESSAGE

PROJECT_ROOT = Path(__file__).resolve().parents[3]
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


@dataclass
class Applied:
    result: subprocess.CompletedProcess[str]
    events: list[dict[str, Any]]  # the --trace-file lines

    def phase(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["phase"] == name]


@pytest.fixture(scope="module")
def pod_with_pvc(tmp_path_factory: pytest.TempPathFactory) -> Applied:
    """examples/pod-with-pvc.yaml applied once with --trace-file."""
    trace_file = tmp_path_factory.mktemp("trace") / "trace.jsonl"
    result = run_apply(POD_WITH_PVC, "--trace-file", trace_file)
    assert result.returncode == 0, result.stdout + result.stderr
    return Applied(result, [json.loads(line) for line in trace_file.read_text().splitlines()])


def test_example_with_a_claim_a_pod_and_a_policy_runs_the_pods_and_binds_the_claim(
    pod_with_pvc: Applied,
) -> None:
    result = pod_with_pvc.result
    for applied in ("storageclass/mini", "persistentvolumeclaim/db-data", "pod/db", "pod/web",
                    "networkpolicy/db-allow-web"):
        assert f"{applied} applied" in result.stdout
    assert statuses(result.stdout, "PODS") == {"default/db": "Running", "default/web": "Running"}
    assert statuses(result.stdout, "PERSISTENTVOLUMECLAIMS") == {"default/db-data": "Bound"}
    assert "capacity=2Gi" in result.stdout
    events = pod_with_pvc.events
    for phase in ("start-up", "apply"):
        in_phase = [e["seq"] for e in pod_with_pvc.phase(phase)]
        assert in_phase == list(range(1, len(in_phase) + 1)), phase
    assert {e["phase"] for e in events} == {"start-up", "apply"}
    calls = [e["call"] for e in pod_with_pvc.phase("apply")]
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


# -- why a pod is not running ---------------------------------------------------------------

STUCK = """\
apiVersion: v1
kind: Pod
metadata: {name: nowhere}
spec:
  nodeSelector: {disktype: ssd}
  containers: [{name: app, image: pause}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: orphan}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: missing-class
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: needs-class}
spec:
  containers:
    - {name: app, image: pause, volumeMounts: [{name: data, mountPath: /data}]}
  volumes: [{name: data, persistentVolumeClaim: {claimName: orphan}}]
"""

# A claim pre-bound to a PV whose volume handle the driver has never created.
UNATTACHABLE = """\
apiVersion: v1
kind: PersistentVolume
metadata: {name: gone-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  csi: {driver: csi-mini.example.com, volumeHandle: no-such-volume}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: gone}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: gone-pv
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  containers:
    - {name: app, image: pause, volumeMounts: [{name: data, mountPath: /data}]}
  volumes: [{name: data, persistentVolumeClaim: {claimName: gone}}]
"""

WEB = "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n" \
      "spec: {containers: [{name: app, image: pause}]}\n"
PINNED = "apiVersion: v1\nkind: Pod\nmetadata: {name: pinned}\n" \
         "spec: {nodeName: node-1, containers: [{name: app, image: pause}]}\n"


def reasons(stdout: str, section: str, name: str) -> list[str]:
    """The reason lines printed under ``name`` (namespace/name) in ``section``."""
    body = stdout.split(f"\n{section}\n", 1)[1]
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {name} "))
    found = []
    for line in lines[start + 1:]:
        if not line.startswith("      "):
            break
        found.append(line.strip())
    return found


@pytest.fixture(scope="module")
def stuck(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    manifest = tmp_path_factory.mktemp("stuck") / "stuck.yaml"
    manifest.write_text(STUCK)
    return run_apply(manifest)


def test_unschedulable_pod_shows_the_schedulers_failed_scheduling_message(
    stuck: subprocess.CompletedProcess[str],
) -> None:
    assert stuck.returncode == 0, stuck.stdout + stuck.stderr
    assert statuses(stuck.stdout, "PODS")["default/nowhere"] == "Pending"
    assert reasons(stuck.stdout, "PODS", "default/nowhere") == [
        "FailedScheduling (default-scheduler): 0/1 nodes are available: "
        "1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are "
        "available: 1 Preemption is not helpful for scheduling."]


def test_pod_of_a_claim_naming_a_missing_storage_class_shows_the_claims_failure(
    stuck: subprocess.CompletedProcess[str],
) -> None:
    missing = 'storageclass.storage.k8s.io "missing-class" not found'
    pod_reasons = reasons(stuck.stdout, "PODS", "default/needs-class")
    assert pod_reasons[0].startswith("FailedScheduling (default-scheduler): ")
    assert "unbound immediate PersistentVolumeClaims" in pod_reasons[0]
    assert pod_reasons[1:] == [
        f"persistentvolumeclaim/orphan: ProvisioningFailed (persistentvolume-binder): {missing}"]
    assert reasons(stuck.stdout, "PERSISTENTVOLUMECLAIMS", "default/orphan") == [
        f"ProvisioningFailed (persistentvolume-binder): {missing}"]


def test_pod_whose_volume_cannot_attach_shows_the_attach_error_and_the_volume_wait(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "unattachable.yaml"
    manifest.write_text(UNATTACHABLE)
    result = run_apply(manifest)
    assert result.returncode == 0, result.stdout + result.stderr
    assert statuses(result.stdout, "PODS") == {"default/reader": "Pending"}
    found = reasons(result.stdout, "PODS", "default/reader")
    assert "FailedMount (kubelet): Unable to attach or mount volumes: Volume not attached " \
        'according to node status for volume "gone-pv"' in found
    attach = [r for r in found if r.startswith("FailedAttachVolume (attachdetach-controller): ")]
    assert len(attach) == 1
    assert 'AttachVolume.Attach failed for volume "gone-pv" : ' in attach[0]
    assert "NOT_FOUND" in attach[0] and "no-such-volume" in attach[0]


def test_pod_whose_cni_add_fails_shows_the_plugin_error_of_failed_create_pod_sandbox(
    tmp_path: Path, cni_bin_dir_failing_loopback: Path,
) -> None:
    manifest = tmp_path / "web.yaml"
    manifest.write_text(WEB)
    result = run_apply(manifest, "--cni-bin-dir", cni_bin_dir_failing_loopback)
    assert result.returncode == 0, result.stdout + result.stderr
    (reason,) = reasons(result.stdout, "PODS", "default/web")
    assert reason.startswith("FailedCreatePodSandBox (kubelet): Failed to create pod sandbox: ")
    assert f'plugin type="emu-loopback" name="cni-loopback" failed (add): ' \
        f"{FAILING_LOOPBACK_MESSAGE}" in reason
    # The failed sandbox is retried after a backoff, not on every pass of the kubelet.
    trace = result.stdout.split("\nTRACE\n", 1)[1]
    adds = [line for line in trace.splitlines() if "cni ADD emu-loopback" in line]
    assert adds and len(adds) <= 5


def test_pods_on_a_node_whose_network_is_not_ready_show_the_network_not_ready_reason(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(PINNED + "---\n" + WEB)
    empty = tmp_path / "no-plugins"
    empty.mkdir()
    result = run_apply(manifest, "--cni-bin-dir", empty)
    assert result.returncode == 0, result.stdout + result.stderr
    not_ready = ("container runtime network not ready: NetworkReady=false "
                 "reason:NetworkPluginNotReady message:Network plugin returns error: "
                 f'failed to find plugin "emu-bridge" in path [{empty}]')
    assert reasons(result.stdout, "PODS", "default/pinned") == [
        f"NetworkNotReady (kubelet): network is not ready: {not_ready}"]
    unscheduled = reasons(result.stdout, "PODS", "default/web")
    assert "untolerated taint {node.kubernetes.io/not-ready: }" in unscheduled[0]
    assert unscheduled[1:] == [f"node/node-1 NotReady (KubeletNotReady): {not_ready}"]


# -- the printed trace ----------------------------------------------------------------------

def printed_calls(stdout: str) -> list[str]:
    """The numbered lines of the TRACE section."""
    trace = stdout.split("\nTRACE\n", 1)[1]
    return [line for line in trace.splitlines() if re.match(r"^\s+\d+ ", line)]


def test_printed_trace_numbers_the_manifests_calls_from_1_and_says_what_start_up_called(
    pod_with_pvc: Applied,
) -> None:
    stdout = pod_with_pvc.result.stdout
    trace = stdout.split("\nTRACE\n", 1)[1]
    start_up = len(pod_with_pvc.phase("start-up"))
    assert trace.startswith(f"  (before call 1, the cluster's start-up made {start_up} "
                            "calls: GetPluginInfo, ")
    numbers = [int(line.split()[0]) for line in printed_calls(stdout)]
    assert numbers == list(range(1, len(pod_with_pvc.phase("apply")) + 1))


def test_printed_request_summaries_keep_every_shown_value_whole(pod_with_pvc: Applied) -> None:
    events = {e["seq"]: e for e in pod_with_pvc.phase("apply")}
    lines = {int(line.split()[0]): line for line in printed_calls(pod_with_pvc.result.stdout)}
    create = next(s for s, e in events.items() if e["call"].endswith("/CreateVolume"))
    assert f"name={events[create]['request']['name']} " in lines[create]
    add = next(s for s, e in events.items() if e["call"] == "cni ADD emu-bridge")
    assert f"container_id={events[add]['request']['container_id']} " in lines[add]
    for line in lines.values():
        # "…" only as the count of fields left out, never inside a value.
        assert re.sub(r" …\+\d+ fields?$", "", line).count("…") == 0, line
