"""``python -m kubelet_sim demo`` run as ``make demo`` runs it: a fresh process, no root,
the emulated dataplane; the six scenarios print what the issue says they show."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kubelet_sim.failing_plugins import FAILING_LOOPBACK_MESSAGE

PROJECT_ROOT = Path(__file__).resolve().parents[3]
HEADER = re.compile(r"^=== (\d)\. (.*)$", re.MULTILINE)

# What each scenario must show, from the issue: (scenario, start of the [ok] line).
EXPECTED_OK = [
    (1, "web's IP from node-1's podCIDR 10.244.1.0/24: 10.244.1.2"),
    (1, "gateway 10.244.1.1: 10.244.1.1"),
    (1, "phase Running: Running"),
    (2, "app-a on node-1 has 10.244.1.2: 10.244.1.2"),
    (2, "app-b on node-2 has 10.244.2.2: 10.244.2.2"),
    (2, "node-1 reaches app-b via next hop 192.168.0.2: reachable=True via 192.168.0.2"),
    (3, "web→db:3306 allowed: allowed"),
    (3, "web→db:8080 denied: denied"),
    (3, "db→db:3306 denied: denied"),
    (4, "PVC Bound to its PV: Bound → pvc-"),
    (4, "attached to node-1: csi-"),
    (4, "staged at the global mount: "),
    (4, "published at the pod's mount: "),
    (4, "pod Running: Running"),
    (4, "unpublished (target removed): "),
    (4, "unstaged: "),
    (4, "detached (VolumeAttachment gone): gone"),
    (4, "claim deleted: DeleteVolume (reclaim Delete) and the PV removed: DeleteVolume calls=1"),
    (5, "10Gi volume bound: {'storage': '10Gi'}"),
    (5, "snapshot created and ready: readyToUse=True"),
    (5, "expanded to 20Gi (controller): 20Gi"),
    (5, "expanded to 20Gi (node: PVC status): {'storage': '20Gi'}"),
    (5, "NodeExpandVolume called by the kubelet: "),
    (5, "restored volume bound at 10Gi: {'storage': '10Gi'}"),
    (5, "restore records its source: "),
    (6, "an IP: 10.244.1."),
    (6, "a mounted, bound PVC: Bound at "),
    (6, "Running: Running"),
    (6, "volumes mounted before the sandbox's CNI ADD: csi.Node/NodeStageVolume → "
        "csi.Node/NodePublishVolume → cni ADD emu-loopback → cni ADD emu-bridge"),
]
TOPICS = {1: "CNI ADD + IPAM", 2: "Two nodes", 3: "NetworkPolicy", 4: "Dynamic provisioning",
          5: "Snapshot and expand", 6: "network and storage"}


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelet_sim", "demo", *args],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300,
                          check=False)


def sections(stdout: str) -> dict[int, str]:
    """Each scenario's printed block, by its number."""
    marks = list(HEADER.finditer(stdout))
    return {int(m.group(1)): stdout[m.start():marks[i + 1].start() if i + 1 < len(marks) else None]
            for i, m in enumerate(marks)}


@pytest.fixture(scope="module")
def full_demo() -> subprocess.CompletedProcess[str]:
    return run_demo()


def test_make_demo_exits_zero_and_all_six_scenarios_pass(
    full_demo: subprocess.CompletedProcess[str],
) -> None:
    assert full_demo.returncode == 0, full_demo.stdout + full_demo.stderr
    assert "6 of 6 scenarios passed" in full_demo.stdout
    assert "[FAIL]" not in full_demo.stdout


def test_make_demo_prints_the_six_scenario_headers_in_order(
    full_demo: subprocess.CompletedProcess[str],
) -> None:
    headers = [(int(n), title) for n, title in HEADER.findall(full_demo.stdout)]
    assert [n for n, _ in headers] == [1, 2, 3, 4, 5, 6]
    for n, title in headers:
        assert TOPICS[n] in title


@pytest.mark.parametrize("scenario", sorted(TOPICS))
def test_each_scenario_shows_its_checks_and_its_call_trace(
    full_demo: subprocess.CompletedProcess[str], scenario: int,
) -> None:
    block = sections(full_demo.stdout)[scenario]
    ok_lines = [line.strip()[len("[ok] "):] for line in block.splitlines()
                if line.strip().startswith("[ok] ")]
    for n, start in EXPECTED_OK:
        if n == scenario:
            assert any(line.startswith(start) for line in ok_lines), (start, ok_lines)
    assert "  call trace:" in block
    assert "cni ADD emu-bridge" in block


def test_demo_with_a_number_runs_only_that_scenario() -> None:
    result = run_demo("3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert [int(n) for n, _ in HEADER.findall(result.stdout)] == [3]
    assert "1 of 1 scenarios passed" in result.stdout
    assert "[ok] web→db:8080 denied: denied" in result.stdout


def test_demo_with_an_unknown_scenario_exits_2_naming_the_range() -> None:
    result = run_demo("9")
    assert result.returncode == 2
    assert "no scenario 9 (1-6)" in result.stderr
    assert "===" not in result.stdout


def test_demo_with_reference_cni_on_the_emulated_dataplane_is_refused_at_start() -> None:
    result = run_demo("1", "--reference-cni")
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("kubelet_sim: --reference-cni needs --dataplane linux: ")
    assert "real network namespace" in line
    assert result.stdout == ""


def test_demo_trace_file_holds_every_call_numbered_from_1_in_each_phase(tmp_path: Path) -> None:
    trace_file = tmp_path / "demo.jsonl"
    result = run_demo("1", "6", "--trace-file", str(trace_file))
    assert result.returncode == 0, result.stdout + result.stderr
    events = [json.loads(line) for line in trace_file.read_text().splitlines()]
    phases = list(dict.fromkeys(e["phase"] for e in events))
    assert phases == ["scenario 1 start-up", "scenario 1", "scenario 6 start-up", "scenario 6"]
    for phase in phases:
        numbers = [e["seq"] for e in events if e["phase"] == phase]
        assert numbers == list(range(1, len(numbers) + 1)), phase
    for scenario in (1, 6):
        block = sections(result.stdout)[scenario]
        printed = [line for line in block.split("  call trace:\n", 1)[1].splitlines()
                   if re.match(r"^\s+\d+ ", line)]
        calls = [e["call"] for e in events if e["phase"] == f"scenario {scenario}"]
        assert [int(line.split()[0]) for line in printed] == list(range(1, len(calls) + 1))
        assert [c for c in calls if c.startswith("cni ADD")] == \
            ["cni ADD emu-loopback", "cni ADD emu-bridge"]
        start_up = sum(e["phase"] == f"scenario {scenario} start-up" for e in events)
        assert f"  (before call 1, the cluster's start-up made {start_up} calls: " in block


def test_demo_prints_the_cni_error_of_a_pod_not_running_at_the_end(
    cni_bin_dir_failing_loopback: Path,
) -> None:
    result = run_demo("1", "--cni-bin-dir", str(cni_bin_dir_failing_loopback))
    assert result.returncode == 1
    assert "[FAIL] phase Running: Pending" in result.stdout
    block = sections(result.stdout)[1]
    after = block.split("  ! default/web Pending:\n", 1)[1].splitlines()
    assert after[0].startswith("      FailedCreatePodSandBox (kubelet): Failed to create pod "
                               "sandbox: ")
    assert FAILING_LOOPBACK_MESSAGE in after[0]
