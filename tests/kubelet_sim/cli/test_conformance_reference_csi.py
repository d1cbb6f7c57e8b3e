"""`kubelet_sim conformance csi --compare-to ours` against the reference CSI driver,
csi-driver-host-path's ``hostpathplugin`` (a Go build: `make reference-hostpath
HOSTPATH_SRC=DIR` puts it in .tools/bin; skipped where it is not built): no case fails,
and where both ran, the cluster made the same calls with the same codes to it as to ours."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.up_process import PROJECT_ROOT
from tests.kubelet_sim.cli.test_conformance_csi import (
    TOKEN_AND_SECRET_CASES,
    TOKENS_CSIDRIVER,
    conformance,
    differences_rows,
    rows,
)

HOSTPATHPLUGIN = PROJECT_ROOT / ".tools" / "bin" / "hostpathplugin"

pytestmark = pytest.mark.skipif(
    not HOSTPATHPLUGIN.exists(),
    reason="the reference hostpathplugin is not built (make reference-hostpath HOSTPATH_SRC=DIR)")


@pytest.fixture
def hostpath(tmp_path: Path) -> Iterator[str]:
    """One hostpathplugin serving controller and node-1 (its README's single-node setup)."""
    socket = Path(f"/tmp/hp-{tmp_path.name[-12:]}.sock")
    process = subprocess.Popen(
        [str(HOSTPATHPLUGIN), "--endpoint", f"unix://{socket}", "--nodeid", "node-1",
         "--drivername", "hostpath.csi.k8s.io", "--enable-attach", "--maxvolumespernode", "3",
         "--statedir", str(tmp_path / "state")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not socket.exists():
            assert time.monotonic() < deadline, "hostpathplugin did not listen"
            time.sleep(0.05)
        yield f"unix://{socket}"
    finally:
        process.terminate()
        process.wait(10)
        socket.unlink(missing_ok=True)


def test_the_reference_driver_passes_and_makes_the_calls_ours_gets(
    hostpath: str, tmp_path: Path,
) -> None:
    # its deployment's CSIDriver, with tokens and republish (the token and Secret cases run)
    csidriver = tmp_path / "csidriver.yaml"
    csidriver.write_text(TOKENS_CSIDRIVER + "  volumeLifecycleModes: [Persistent, Ephemeral]\n"
                         "  podInfoOnMount: true\n  fsGroupPolicy: File\n")
    done = conformance("--controller-endpoint", hostpath, "--node-endpoint",
                       f"node-1={hostpath}", "--csidriver", str(csidriver),
                       "--compare-to", "ours")
    assert done.returncode == 0, done.stdout + done.stderr
    results = rows(done.stdout.split("\n\n", 1)[0])
    assert "FAILED" not in {outcome for outcome, _ in results.values()}
    passed = [case for case, (outcome, _) in results.items() if outcome == "PASSED"]
    assert {"provisioning/filesystem", "snapshots/restore", "expansion/offline",
            "volume-limits/one-over-the-limit", "csidriver/fs-group-policy",
            *TOKEN_AND_SECRET_CASES} <= set(passed)
    # every difference is a case the target skipped (with its reason); no call differs
    found = differences_rows(done.stdout)
    assert found and all(what == "outcome" and "SKIPPED" in row for _, what, row in found)
    assert "0 in calls only" in done.stdout.splitlines()[-1]
