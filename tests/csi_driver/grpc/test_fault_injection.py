"""Fault injection in the driver process, used as a plugin author uses it: ``--faults``
with the rule file from the issue, rules added and cleared at run time through
``python -m csi_driver faults --control``, a delay, a hang past the caller's deadline,
and the log marking each injected call."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import make_create_volume_req, mount_capability
from tests.fixtures.driver_process import REPO, DriverProcess, rpc_lines

ISSUE_RULES = """\
- method: NodeStageVolume
  code: UNAVAILABLE
  message: injected by the test
  times: 2
"""


def faults(control: Path, *args: str) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "csi_driver", "faults", "--control",
                           str(control), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=30, check=False)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else {}


def logged(proc: DriverProcess, method: str, count: int) -> list[dict]:
    """The driver's log lines for ``method`` once there are ``count`` of them (each is
    written just after its answer goes out)."""
    deadline = time.monotonic() + 10
    while True:
        lines = [line for line in rpc_lines(proc) if line["method"].endswith("/" + method)]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def volume_and_publish(proc: DriverProcess, name: str) -> tuple[str, dict[str, str]]:
    vol = proc.stubs.controller.CreateVolume(make_create_volume_req(name)).volume
    pub = proc.stubs.controller.ControllerPublishVolume(csi_pb2.ControllerPublishVolumeRequest(
        volume_id=vol.volume_id, node_id=proc.node_id, volume_capability=mount_capability()))
    return vol.volume_id, dict(pub.publish_context)


def test_the_issues_rule_file_fails_node_stage_twice_then_it_is_served(
    spawn_driver: SpawnDriver, tmp_path: Path,
) -> None:
    rules = tmp_path / "faults.yaml"
    rules.write_text(ISSUE_RULES)
    proc = spawn_driver("--faults", str(rules))
    control = proc.sock_dir / "faults.sock"
    volume_id, context = volume_and_publish(proc, "staged")
    staging = proc.state_dir / "staging"
    staging.mkdir()
    request = csi_pb2.NodeStageVolumeRequest(
        volume_id=volume_id, staging_target_path=str(staging),
        volume_capability=mount_capability(), publish_context=context)
    for _ in range(2):
        with pytest.raises(grpc.RpcError) as err:
            proc.stubs.node.NodeStageVolume(request)
        assert (err.value.code(), err.value.details()) == (
            grpc.StatusCode.UNAVAILABLE, "injected by the test")
    proc.stubs.node.NodeStageVolume(request)  # the third is the driver's own answer
    proc.stubs.node.NodeUnstageVolume(csi_pb2.NodeUnstageVolumeRequest(
        volume_id=volume_id, staging_target_path=str(staging)))
    stages = logged(proc, "NodeStageVolume", 3)
    assert [(s["code"], s.get("injected")) for s in stages] == [
        ("UNAVAILABLE", {"rule": 1, "action": "UNAVAILABLE"}),
        ("UNAVAILABLE", {"rule": 1, "action": "UNAVAILABLE"}),
        ("OK", None)]
    assert not control.exists()  # no control socket unless asked for


def test_rules_added_at_run_time_delay_hang_and_clear(
    spawn_driver: SpawnDriver,
) -> None:
    proc = spawn_driver("--fault-control", "PLACEHOLDER", start=False)
    control = proc.sock_dir / "faults.sock"
    proc.args = ["--fault-control", str(control)]
    proc.start()
    code, answer = faults(control, "add", "--method", "/csi.v1.Controller/CreateVolume",
                          "--delay", "0.4")
    assert (code, answer) == (0, {"ok": True, "ids": [1]})
    proc.stubs.controller.CreateVolume(make_create_volume_req("slow"))
    created = logged(proc, "CreateVolume", 1)
    assert created[-1]["injected"] == {"rule": 1, "action": "delay 0.4s"}
    assert created[-1]["duration_ms"] >= 400

    volume_id = created[-1]["volume_id"]
    assert faults(control, "add", "--method", "ControllerPublishVolume", "--hang",
                  "--times", "1")[1]["ids"] == [2]
    publish = csi_pb2.ControllerPublishVolumeRequest(
        volume_id=volume_id, node_id=proc.node_id, volume_capability=mount_capability())
    with pytest.raises(grpc.RpcError) as err:
        proc.stubs.controller.ControllerPublishVolume(publish, timeout=1.0)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    first = proc.stubs.controller.ControllerPublishVolume(publish)  # the CO's retry
    again = proc.stubs.controller.ControllerPublishVolume(publish)  # idempotent
    assert first.publish_context == again.publish_context

    code, listed = faults(control, "list")
    assert code == 0
    assert [(r["id"], r["action"], r["matched"], r["fired"]) for r in listed["rules"]] == [
        (1, "delay 0.4s", 1, 1), (2, "hang", 3, 1)]
    assert faults(control, "remove", "1") == (0, {"ok": True})
    assert faults(control, "clear") == (0, {"ok": True, "removed": 1})
    code, refused = faults(control, "add", "--method", "Probe", "--code", "NOPE")
    assert code == 1 and "unknown gRPC status code" in refused["error"]


def test_a_bad_faults_file_stops_the_driver_at_start_with_the_reason(
    spawn_driver: SpawnDriver, tmp_path: Path,
) -> None:
    rules = tmp_path / "faults.yaml"
    rules.write_text("- method: NodeStageVolume\n  code: UNAVAILABLE\n  delay: 1\n")
    proc = spawn_driver("--faults", str(rules), start=False)
    assert proc.spawn().wait(timeout=30) == 2
    assert "exactly one of code, delay or hang" in proc.stderr()
