"""The real csi-provisioner's capacity controller (``--enable-capacity``) against
`up --no-sidecars`: it finds the v1 CSIStorageCapacity API (its probe create of an invalid
name must be 422 Invalid), publishes the objects through protobuf and a label-selected
watch, and writes the objects the simulator's provisioner role writes; the simulator's
scheduler then places a claim that fits and keeps one too big for them Pending. Skipped where the
binary is not built (`make sidecars SRC=DIR`)."""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.fixtures.real_sidecars import KLOG_ERROR, binary
from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

PROVISIONER = binary("csi-provisioner")
pytestmark = [
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl not installed: run `make kubectl`"),
    pytest.mark.skipif(not PROVISIONER.exists(),
                       reason="csi-provisioner is not built: run `make sidecars SRC=DIR`"),
]

DRIVER = "csi-mini.example.com"
STORAGE = f"""apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: late}}
provisioner: {DRIVER}
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: huge}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: late
  resources: {{requests: {{storage: 2Ti}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: huge}}
spec:
  containers: [{{name: app, image: registry.k8s.io/pause:3.9}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: huge}}}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: small}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: late
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: small}}
spec:
  containers: [{{name: app, image: registry.k8s.io/pause:3.9}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: small}}}}]
"""


def published(up: Up) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(up.kubectl(
        "get", "csistoragecapacities", "-n", "kube-system", "-o", "json"))["items"]
    return items


def selected_node(up: Up, claim: str) -> str:
    return up.kubectl("get", "pvc", claim, "-o",
                      r"jsonpath={.metadata.annotations.volume\.kubernetes\.io/selected-node}")


def test_the_real_capacity_controller_writes_the_objects_the_simulators_role_writes(
    tmp_path: Any,
) -> None:
    with running_up("--nodes", "2", "--no-sidecars", "--no-snapshot-controller") as up:
        csi = next(line.split(": ", 1)[1] for line in up.said
                   if line.startswith("CSI controller plugin: "))
        up.kubectl("patch", "csidriver", DRIVER, "--type", "merge",
                   "-p", '{"spec":{"storageCapacity":true}}')
        up.kubectl("apply", "-f", "-", stdin=STORAGE)
        log_path = tmp_path / "provisioner.log"
        with log_path.open("w") as log:
            real = subprocess.Popen(
                [str(PROVISIONER), f"--kubeconfig={up.kubeconfig}", f"--csi-address={csi}",
                 "--enable-capacity", "--capacity-ownerref-level=-1", "--v=5"],
                env={**os.environ, "NAMESPACE": "kube-system"}, stdout=log, stderr=log)
            try:
                theirs = wait_for(lambda: len(published(up)) == 2 and published(up),
                                  "the real provisioner's capacity objects", timeout=30)
                # a claim that fits is scheduled only because the objects say so
                chosen = wait_for(lambda: selected_node(up, "small"), "a node for the claim")
                why = up.kubectl("get", "pod", "huge", "-o", "jsonpath={.status.conditions}")
            finally:
                real.terminate()
                real.wait(timeout=30)
        errors = [line for line in log_path.read_text().splitlines() if KLOG_ERROR.match(line)]

    assert errors == []
    assert chosen in ("node-1", "node-2")
    assert "0/2 nodes are available: 2 node(s) did not have enough free storage." in why
    # what tests/kubelet_sim/sidecars/test_storage_capacity_up.py sees the simulator write
    assert sorted(c["nodeTopology"]["matchLabels"]["topology.csi-mini.example.com/node"]
                  for c in theirs) == ["node-1", "node-2"]
    for capacity in theirs:
        meta = capacity["metadata"]
        assert (meta["namespace"], meta["generateName"], meta["name"][:6]) == \
            ("kube-system", "csisc-", "csisc-")
        assert meta["labels"] == {"csi.storage.k8s.io/drivername": DRIVER,
                                  "csi.storage.k8s.io/managed-by": "external-provisioner"}
        assert "ownerReferences" not in meta
        # our driver's pool, before or after the small claim took 1Gi of it
        assert capacity["storageClassName"] == "late"
        assert capacity["capacity"] == capacity["maximumVolumeSize"]
        assert capacity["capacity"] in ("1Ti", "1023Gi")
