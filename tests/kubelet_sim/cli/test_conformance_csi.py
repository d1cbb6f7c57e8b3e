"""`kubelet_sim conformance csi` as a driver author runs it: against our own driver (every
case passes), and against a driver at given endpoints that is broken on purpose (its
NodePublishVolume always fails): the suite fails with the driver's error, the cases
that need our driver's process (or a second node) are skipped with the reason, and the
exit status is 1."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.fixtures.driver_process import DriverProcess
from tests.fixtures.up_process import PROJECT_ROOT

CASES = ("provisioning/filesystem", "provisioning/block", "expansion/online",
         "expansion/offline", "snapshots/restore", "snapshots/delete-order",
         "multivolume/two-volumes-one-pod", "multivolume/rwo-two-pods-one-node",
         "multivolume/rwx-across-nodes", "topology/wait-for-first-consumer",
         "ephemeral/inline", "volumemode/mismatch", "volume-limits/one-over-the-limit",
         "capacity/get-capacity", "co-retries/node-stage-unavailable",
         "co-retries/controller-publish-timeout", "restart/teardown-after-node-plugin-restart")


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubelet_sim", "conformance", "csi", *args],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600,
                          check=False)


def rows(stdout: str) -> dict[str, tuple[str, str]]:
    """case -> (RESULT, detail) from the printed table."""
    out = {}
    for line in stdout.splitlines()[1:-1]:
        parts = line.split(None, 4)
        out[parts[1]] = (parts[2], parts[4] if len(parts) > 4 else "")
    return out


def test_our_driver_passes_every_case(tmp_path: Path) -> None:
    junit = tmp_path / "csi.xml"
    done = conformance("--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    results = rows(done.stdout)
    assert list(results) == list(CASES)
    assert {r for r, _ in results.values()} == {"PASSED"}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == (str(len(CASES)), "0")


def test_a_driver_whose_publish_always_fails_fails_the_suite(tmp_path: Path) -> None:
    rules = tmp_path / "broken.yaml"
    rules.write_text("- method: NodePublishVolume\n  code: INTERNAL\n"
                     "  message: this driver is broken on purpose\n")
    driver = DriverProcess(node_id="node-1", args=["--faults", str(rules)])
    try:
        driver.start()
        done = conformance("--controller-endpoint", driver.endpoint,
                           "--node-endpoint", f"node-1={driver.endpoint}",
                           "--focus", "provisioning/filesystem|co-retries|restart|rwx")
    finally:
        driver.cleanup()
    assert done.returncode == 1, done.stdout + done.stderr
    results = rows(done.stdout)
    outcome, detail = results["provisioning/filesystem"]
    assert outcome == "FAILED" and "this driver is broken on purpose" in detail
    assert results["co-retries/node-stage-unavailable"][0] == "SKIPPED"
    assert "fault injection of our driver" in results["co-retries/node-stage-unavailable"][1]
    assert results["restart/teardown-after-node-plugin-restart"][0] == "SKIPPED"
    outcome, detail = results["co-retries/controller-publish-timeout"]
    assert outcome == "SKIPPED" and "fault injection of our driver" in detail
    assert results["multivolume/rwx-across-nodes"] == ("SKIPPED", "needs two nodes")
