"""VolumeAttributesClass over a real `up` with kubectl: a claim created with a class is
provisioned with it, `kubectl get vac` prints the class's columns, and `kubectl patch pvc`
to another class has the resizer modify the volume and record the new current class."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from tests.fixtures.up_process import PROJECT_ROOT, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


def driver_mutable_parameters(state: Path) -> list[dict[str, str]]:
    """What the csi-mini driver recorded for its volumes (its state database)."""
    db = sqlite3.connect(f"file:{state / 'cluster' / 'storage-array' / 'state.db'}?mode=ro",
                         uri=True)
    try:
        return [json.loads(row[0]) for row in db.execute(
            "SELECT mutable_parameters FROM volumes")]
    finally:
        db.close()


def test_kubectl_moves_a_claim_to_another_volume_attributes_class() -> None:
    with running_up("--nodes", "1") as up:
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" /
                                      "volume-attributes-class.yaml"))

        def claim() -> dict[str, Any]:
            found: dict[str, Any] = json.loads(up.kubectl("get", "pvc", "fast-data", "-o",
                                                          "json"))
            return found

        wait_for(lambda: claim()["status"].get("currentVolumeAttributesClassName")
                 == "iops-3000", what="the claim bound with class iops-3000")
        vacs = up.kubectl("get", "vac").splitlines()
        assert vacs[0].split() == ["NAME", "DRIVERNAME", "AGE"]
        assert [row.split()[:2] for row in vacs[1:]] == [
            ["iops-3000", "csi-mini.example.com"], ["iops-6000", "csi-mini.example.com"]]
        volume = claim()["spec"]["volumeName"]
        pv = json.loads(up.kubectl("get", "pv", volume, "-o", "json"))
        assert pv["spec"]["volumeAttributesClassName"] == "iops-3000"
        assert driver_mutable_parameters(up.state) == [{"iops": "3000"}]  # CreateVolume's

        up.kubectl("patch", "pvc", "fast-data", "-p",
                   '{"spec":{"volumeAttributesClassName":"iops-6000"}}')

        wait_for(lambda: claim()["status"].get("currentVolumeAttributesClassName")
                 == "iops-6000", what="the claim's class modified to iops-6000")
        status = claim()["status"]
        assert "modifyVolumeStatus" not in status
        pv = json.loads(up.kubectl("get", "pv", volume, "-o", "json"))
        assert pv["spec"]["volumeAttributesClassName"] == "iops-6000"
        assert driver_mutable_parameters(up.state) == [{"iops": "6000"}]
        reasons = [e["reason"] for e in up.events(
            "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=fast-data")]
        assert "VolumeModify" in reasons and "VolumeModifySuccessful" in reasons
        row = up.kubectl("get", "pvc", "fast-data").splitlines()[1].split()
        assert row[:2] == ["fast-data", "Bound"] and "iops-6000" in row
