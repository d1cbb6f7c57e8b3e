"""``python -m kubelet_sim demo --processes 1 4``: the scenarios against clusters started
as ``up --processes``, their checks answered over HTTPS, from the nodes' directories and
from the kubelets' and sidecars' trace files; the same [ok] lines as in-process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kubelet_sim.cli.test_demo_cli import EXPECTED_OK, HEADER, PROJECT_ROOT

SCENARIOS = (1, 4)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    trace_file = tmp_path_factory.mktemp("demo-processes") / "trace.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "kubelet_sim", "demo", "--processes",
         *map(str, SCENARIOS), "--trace-file", str(trace_file)],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout, trace_file


def _section(out: str, scenario: int) -> str:
    starts = [(int(m.group(1)), m.start()) for m in HEADER.finditer(out)]
    ends = [s for _, s in starts[1:]] + [len(out)]
    return next(out[s:e] for (n, s), e in zip(starts, ends, strict=True) if n == scenario)


@pytest.mark.parametrize(("scenario", "expected"),
                         [(n, line) for n, line in EXPECTED_OK if n in SCENARIOS])
def test_each_scenario_shows_what_it_shows_in_process(demo: tuple[str, Path], scenario: int,
                                                      expected: str) -> None:
    assert f"  [ok] {expected}" in _section(demo[0], scenario)


def test_the_run_says_every_scenario_passed_on_up_processes(demo: tuple[str, Path]) -> None:
    assert "[FAIL]" not in demo[0]
    assert "2 of 2 scenarios passed" in demo[0]
    assert "(emulated dataplane, up --processes)" in demo[0]


def test_delete_volume_is_read_from_the_sidecars_trace_file(demo: tuple[str, Path]) -> None:
    section = _section(demo[0], 4)
    assert "  [ok] claim deleted: DeleteVolume (reclaim Delete) and the PV removed: " \
        "DeleteVolume calls=1 PVs=[]" in section  # once: the sidecar re-reads before it calls
    assert "external-provisioner  csi.Controller/DeleteVolume" in section


def test_the_trace_file_holds_each_scenarios_calls_from_the_component_processes(
        demo: tuple[str, Path]) -> None:
    events = [json.loads(line) for line in demo[1].read_text().splitlines()]
    by_phase = {(e["phase"], e["call"]) for e in events}
    assert ("scenario 1", "cni ADD emu-bridge") in by_phase
    assert ("scenario 4", "csi.Node/NodeStageVolume") in by_phase
    assert ("scenario 4 start-up", "csi.Node/NodeGetInfo") in by_phase
    scenario_4 = [e["seq"] for e in events if e["phase"] == "scenario 4"]
    assert scenario_4 == list(range(1, len(scenario_4) + 1))
