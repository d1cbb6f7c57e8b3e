"""Each newer case of the CSI conformance suite fails against a driver broken the way the
case is meant to catch: our driver started by the suite with ``--faults`` rules (its
fault injection), in-process, one focused run per case; for the two-node case, our driver
at given endpoints whose second node plugin cannot publish."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubelet_sim.conformance.csi import run_csi_suite
from kubelet_sim.conformance.csi_run import CsiTarget
from kubelet_sim.conformance.report import FAILED, SKIPPED, Report
from tests.fixtures.driver_process import DriverProcess

# (case focus, the one fault rule of the broken driver, what the case's failure says)
BROKEN = [
    pytest.param("expansion/offline",
                 {"method": "ControllerExpandVolume", "code": "INTERNAL",
                  "message": "expansion broken on purpose"},
                 "expansion broken on purpose", id="expansion-controller-expand-fails"),
    # NodeGetInfo says 3 (the suite's flag), ControllerPublishVolume takes one volume only
    pytest.param("volume-limits/",
                 {"method": "ControllerPublishVolume", "code": "RESOURCE_EXHAUSTED",
                  "message": "this node takes one volume", "after": 1},
                 "1 of 3 pods run on node-1 with a limit of 3",
                 id="volume-limits-fewer-than-reported"),
    pytest.param("snapshots/delete-order",
                 {"method": "DeleteSnapshot", "code": "INTERNAL", "message": "kept forever"},
                 "outlived its snapshot", id="snapshot-delete-fails"),
    pytest.param("capacity/get-capacity",
                 {"method": "GetCapacity", "code": "UNAVAILABLE", "message": "unknown today"},
                 "GetCapacity: UNAVAILABLE: unknown today", id="capacity-unanswered"),
    # the provisioner role cannot publish what the driver does not answer
    pytest.param("capacity/scheduling",
                 {"method": "GetCapacity", "code": "UNAVAILABLE", "message": "unknown today"},
                 "CSIStorageCapacity objects for segments []",
                 id="capacity-objects-unpublished"),
    pytest.param("co-retries/controller-publish-timeout",
                 {"method": "ControllerPublishVolume", "hang": True},
                 "pod csi-conformance-1/patient is Pending", id="publish-hangs-every-time"),
    # the mismatch half is the kubelet's own check; the correctly used claim must mount
    pytest.param("volumemode/mismatch",
                 {"method": "NodePublishVolume", "code": "INTERNAL", "message": "no mounts"},
                 "no mounts", id="volumemode-correct-use-cannot-mount"),
]


@pytest.mark.parametrize(("case", "rule", "detail"), BROKEN)
async def test_a_case_fails_against_a_driver_broken_the_way_it_checks(
    tmp_path: Path, case: str, rule: dict[str, object], detail: str,
) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([rule]))
    report = Report(focus=case)

    await run_csi_suite(CsiTarget(driver_args=("--faults", str(faults))), report)

    [result] = report.results
    assert (result.outcome, detail in result.detail) == (FAILED, True), result



async def test_rwx_across_nodes_fails_when_the_second_node_cannot_reach_the_data(
    tmp_path: Path,
) -> None:
    faults = tmp_path / "faults.yaml"
    faults.write_text("- method: NodePublishVolume\n  code: INTERNAL\n"
                      "  message: node-2 cannot reach the data\n")
    first = DriverProcess(node_id="node-1")
    second = DriverProcess(node_id="node-2", state_dir=first.state_dir,
                           args=["--faults", str(faults)])
    report = Report(focus="multivolume/rwx")
    try:
        first.start()
        second.start()
        await run_csi_suite(CsiTarget(first.endpoint, {"node-1": first.endpoint,
                                                       "node-2": second.endpoint}), report)
    finally:
        second.cleanup()
        first.cleanup()

    [result] = report.results
    assert result.outcome == FAILED, result
    assert "csi-conformance-1/second is Pending" in result.detail
    assert "node-2 cannot reach the data" in result.detail


async def test_rwx_across_nodes_is_skipped_when_the_driver_refuses_the_access_mode(
    tmp_path: Path,
) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{
        "method": "CreateVolume", "code": "INVALID_ARGUMENT",
        "message": "access mode MULTI_NODE_MULTI_WRITER is not supported"}]))
    report = Report(focus="multivolume/rwx")

    await run_csi_suite(CsiTarget(driver_args=("--faults", str(faults))), report)

    [result] = report.results
    assert result.outcome == SKIPPED, result
    assert result.detail.startswith("the driver does not offer ReadWriteMany volumes: ")
    assert "MULTI_NODE_MULTI_WRITER is not supported" in result.detail
