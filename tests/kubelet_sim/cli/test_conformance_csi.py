"""`kubelet_sim conformance csi` as a driver author runs it: against our own driver (every
case passes), and against a driver at given endpoints that is broken on purpose (its
NodePublishVolume always fails): the suite fails with the driver's error, the cases
that need our driver's process (or a second node) are skipped with the reason, and the
exit status is 1. With ``--compare-to ours``: our driver at endpoints makes the same
calls as the suite's own; the broken one differs at NodePublishVolume."""

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
         "capacity/get-capacity", "capacity/scheduling", "co-retries/node-stage-unavailable",
         "co-retries/controller-publish-timeout", "restart/teardown-after-node-plugin-restart",
         "csidriver/fs-group-policy", "csidriver/selinux-mount", "csidriver/no-attach",
         "csidriver/lifecycle-mode-refusal", "csidriver/token-requests",
         "csidriver/requires-republish", "secrets/every-operation", "secrets/missing-secret")
# the cases that run only with --csidriver FILE
DRIVER_FIELD_CASES = tuple(c for c in CASES if c.startswith(("csidriver/", "secrets/")))
TOKEN_AND_SECRET_CASES = DRIVER_FIELD_CASES[-4:]


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
    assert {r for c, (r, _) in results.items() if c not in DRIVER_FIELD_CASES} == {"PASSED"}
    assert {results[c] for c in DRIVER_FIELD_CASES} == {
        ("SKIPPED", "no CSIDriver object given (--csidriver FILE)")}
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == (str(len(CASES)), "0")


def test_the_driver_field_cases_pass_with_a_csidriver_object_that_sets_them(
    tmp_path: Path,
) -> None:
    csidriver = tmp_path / "csidriver.yaml"
    csidriver.write_text(
        "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: any\n"
        "spec:\n  attachRequired: false\n  fsGroupPolicy: File\n  seLinuxMount: true\n"
        "  volumeLifecycleModes: [Persistent]\n")

    done = conformance("--csidriver", str(csidriver), "--focus", "csidriver/|ephemeral/inline")

    assert done.returncode == 0, done.stdout + done.stderr
    results = rows(done.stdout)
    assert {c: r for c, (r, _) in results.items()} == {
        "ephemeral/inline": "SKIPPED",
        **{c: "PASSED" for c in DRIVER_FIELD_CASES if c not in TOKEN_AND_SECRET_CASES},
        "csidriver/token-requests": "SKIPPED", "csidriver/requires-republish": "SKIPPED"}


TOKENS_CSIDRIVER = """apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata:
  name: any
spec:
  requiresRepublish: true
  tokenRequests:
  - audience: vault.example.com
    expirationSeconds: 3600
  - audience: ""
"""


def test_the_token_and_secret_cases_pass_with_a_csidriver_object_asking_for_tokens(
    tmp_path: Path,
) -> None:
    csidriver = tmp_path / "csidriver.yaml"
    csidriver.write_text(TOKENS_CSIDRIVER)

    done = conformance("--csidriver", str(csidriver), "--focus", "token|republish|secrets/")

    assert done.returncode == 0, done.stdout + done.stderr
    assert rows(done.stdout) == {case: ("PASSED", "") for case in TOKEN_AND_SECRET_CASES}


def test_a_csidriver_file_without_a_csidriver_object_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "pod.yaml"
    wrong.write_text("kind: Pod\nspec: {}\n")

    done = conformance("--csidriver", str(wrong))

    assert done.returncode == 2
    assert "holds no CSIDriver object with a spec" in done.stdout


def against_driver_at_endpoints(*args: str, driver_args: tuple[str, ...] = ()
                                ) -> subprocess.CompletedProcess[str]:
    """The suite against our driver started as an outside driver on node-1."""
    driver = DriverProcess(node_id="node-1", args=list(driver_args))
    try:
        driver.start()
        return conformance("--controller-endpoint", driver.endpoint,
                           "--node-endpoint", f"node-1={driver.endpoint}", *args)
    finally:
        driver.cleanup()


def broken_driver_args(tmp_path: Path) -> tuple[str, ...]:
    rules = tmp_path / "broken.yaml"
    rules.write_text("- method: NodePublishVolume\n  code: INTERNAL\n"
                     "  message: this driver is broken on purpose\n")
    return ("--faults", str(rules))


def test_a_driver_whose_publish_always_fails_fails_the_suite(tmp_path: Path) -> None:
    done = against_driver_at_endpoints(
        "--focus", "provisioning/filesystem|co-retries|restart|rwx",
        driver_args=broken_driver_args(tmp_path))
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


def differences_rows(stdout: str) -> list[tuple[str, str, str]]:
    """(case, what differs, the rest of the row) from the DIFFERENCES table."""
    table = stdout.split("DIFFERENCES", 1)[1].splitlines()[2:-1]
    return [(parts[0], parts[1], line) for line in table if (parts := line.split())]


def test_our_driver_at_endpoints_compared_to_ours_differs_only_where_it_is_skipped() -> None:
    # started as the suite starts its own (the same volume limit), on one node
    done = against_driver_at_endpoints(
        "--compare-to", "ours", driver_args=("--mode", "all", "--max-volumes-per-node", "3"))
    assert done.returncode == 0, done.stdout + done.stderr
    # the same RPCs with the same codes in every case both ran; the three cases that
    # need the suite's own driver process are skipped on the target only (rwx needs a
    # second node, which neither run has)
    found = differences_rows(done.stdout)
    assert [(c, what) for c, what, _ in found] == [
        ("co-retries/node-stage-unavailable", "outcome"),
        ("co-retries/controller-publish-timeout", "outcome"),
        ("restart/teardown-after-node-plugin-restart", "outcome")]
    assert all("SKIPPED" in row and row.endswith("PASSED") for _, _, row in found)
    assert done.stdout.splitlines()[-1].startswith(
        "3 of 26 cases differ from ours (3 in outcome, 0 in calls only)")


def test_a_broken_driver_compared_to_ours_shows_the_rpc_that_failed(tmp_path: Path) -> None:
    done = against_driver_at_endpoints("--focus", "provisioning/filesystem",
                                       "--compare-to", "ours",
                                       driver_args=broken_driver_args(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    found = differences_rows(done.stdout)
    assert [(c, what) for c, what, _ in found] == [
        ("provisioning/filesystem", "outcome"), ("provisioning/filesystem", "call")]
    assert found[0][2].split()[-1] == "PASSED"  # ours
    call = found[1][2].split(None, 5)[-1]  # after "case call N of T/O"
    assert call.split() == ["Node/NodePublishVolume", "→", "INTERNAL",
                            "Node/NodePublishVolume", "→", "OK"]


def test_a_driver_of_another_name_than_driver_name_stops_the_suite() -> None:
    done = against_driver_at_endpoints("--driver-name", "hostpath.csi.k8s.io")
    assert done.returncode == 2
    assert "is 'csi-mini.example.com', not 'hostpath.csi.k8s.io'" in done.stdout
    assert "SUITE" not in done.stdout  # no case ran
    named = against_driver_at_endpoints("--driver-name", "csi-mini.example.com",
                                        "--focus", "provisioning/filesystem")
    assert named.returncode == 0, named.stdout + named.stderr
    assert rows(named.stdout)["provisioning/filesystem"][0] == "PASSED"
    without_endpoints = conformance("--driver-name", "x")
    assert without_endpoints.returncode == 2 and "names the driver at the endpoints" in \
        without_endpoints.stdout


def test_volume_limits_holds_back_the_pod_over_a_limit_of_ten() -> None:
    """As conformance against csi-driver-host-path started with ``--attach-limit 10``: our
    driver at endpoints with ``--max-volumes-per-node 10``. Ten pods run on node-1 and the
    eleventh (vol-10, which sorts before vol-2 by name) waits for the volume limit."""
    done = against_driver_at_endpoints("--focus", "volume-limits",
                                       driver_args=("--max-volumes-per-node", "10"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert rows(done.stdout) == {"volume-limits/one-over-the-limit": ("PASSED", "")}
