"""The real CSI sidecars against `up --no-sidecars --no-snapshot-controller`: kubernetes-csi's
csi-provisioner, csi-attacher, csi-resizer, csi-snapshotter and snapshot-controller (built
by `make sidecars SRC=DIR`), each with its upstream deployment's flags and leader election
on, do the storage work of the cluster through its API and the CSI controller plugin's
socket: a claim provisioned and bound, a pod running on the attached volume, the volume
expanded, a snapshot taken and restored, everything deleted again (DeleteVolume,
DeleteSnapshot, detach) — with no klog error line a real cluster would not print too.

Skipped where the binaries or external-snapshotter's CRDs are not there."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from csi_protos import csi_pb2, csi_pb2_grpc
from tests.fixtures.real_sidecars import (
    LEADER_ELECTION_NAMESPACE,
    SIDECARS,
    Sidecars,
    missing_binaries,
    running_sidecars,
    snapshot_crd_dir,
)
from tests.fixtures.up_process import KUBECTL, Up, running_up

pytestmark = [
    pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl not installed: run `make kubectl`"),
    pytest.mark.skipif(bool(missing_binaries()),
                       reason="the real CSI sidecars are not built (missing from .tools/bin: "
                       f"{', '.join(missing_binaries())}): run `make sidecars SRC=DIR`"),
    pytest.mark.skipif(snapshot_crd_dir() is None,
                       reason="external-snapshotter's client/config/crd not found: set "
                       "SIDECARS_SRC to the SRC of `make sidecars`"),
]

DRIVER = "csi-mini.example.com"

# klog error lines a real cluster's sidecars print as well, each with the reason; every
# other error line fails the test. All are the same race inside the sidecars: a deleted
# object has several finalizer owners (pv-protection, the provisioner, the attacher; the
# snapshot controller and csi-snapshotter), each acting on its informer's copy; a write
# based on a copy that is a moment old fails, and the requeued retry, its cache caught up,
# finds the work done (the test still sees every object gone). Whether a run prints them
# depends on timing, on a real cluster as here.
EXPECTED_ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r'"Failed to remove finalizer from PersistentVolume" err="the server '
                r'rejected our request due to an error in our request"'),
     "external-attacher removes its PV finalizer with a JSON patch that first tests the "
     "finalizer at the index its cache shows; when pv-protection or the provisioner removed "
     "theirs first, the index moved, the test op fails and kube-apiserver answers 422 with "
     "exactly this message"),
    (re.compile(r'"Failed to remove finalizer from PersistentVolume" err="persistentvolumes '
                r'\\"(pvc-[\w-]+)\\" not found" PersistentVolume="\1"'),
     "external-attacher's patch of a PV whose other finalizers went while the patch was "
     "built: the PV is already gone"),
    (re.compile(r'"Unhandled Error" err="error syncing volume \\"(pvc-[\w-]+)\\": '
                r'persistentvolumes \\"\1\\" not found"'),
     "external-provisioner's own DELETE of a PV queues it again while the first pass runs; "
     "the second pass reads the cached PV (deletionTimestamp set, its finalizer still "
     "listed), calls DeleteVolume again (kubernetes-csi/external-provisioner#1235) and "
     "DELETEs the PV the first pass's finalizer removal already let go: 404"),
    (re.compile(r'could not sync snapshot "[\w.-]+/[\w.-]+": failed to delete '
                r'VolumeSnapshotContent ([\w-]+) from API server: "volumesnapshotcontents'
                r'(\.snapshot\.storage\.k8s\.io)? \\"\1\\" not found"'),
     "snapshot-controller DELETEs the content of a deleted VolumeSnapshot from its cache "
     "while csi-snapshotter, DeleteSnapshot done, has already removed the content's last "
     "finalizer: 404"),
    (re.compile(r'"Unhandled Error" err="(item \'[\w.-]+/[\w.-]+\'|claim \\"[\w-]+\\") in '
                r'work queue no longer exists"'),
     "external-provisioner's claim and clone queues hold a claim the test deleted (every "
     "object is deleted at once, --wait=false) before a worker took it: the worker finds "
     "it gone in its informer and reports it"),
    (re.compile(r'persistentvolume (pvc-[\w-]+) is still attached to node [\w.-]+'),
     "external-provisioner refuses DeleteVolume while a VolumeAttachment names the PV; the "
     "pod and the claim are deleted together, so the first try can come before the "
     "detach, and it is retried"),
)

STORAGE = """\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: mini
provisioner: csi-mini.example.com
reclaimPolicy: Delete
volumeBindingMode: Immediate
allowVolumeExpansion: true
---
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshotClass
metadata:
  name: mini-snapclass
driver: csi-mini.example.com
deletionPolicy: Delete
"""

CLAIM_AND_POD = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
  namespace: default
spec:
  accessModes: ["ReadWriteOnce"]
  storageClassName: mini
  resources:
    requests:
      storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: app
  namespace: default
spec:
  containers:
    - name: app
      image: registry.k8s.io/pause:3.9
      volumeMounts:
        - name: data
          mountPath: /data
  volumes:
    - name: data
      persistentVolumeClaim:
        claimName: data
"""

CLASSES = """\
apiVersion: storage.k8s.io/v1
kind: VolumeAttributesClass
metadata:
  name: fast
driverName: csi-mini.example.com
parameters:
  iops: "6000"
"""

SNAPSHOT = """\
apiVersion: snapshot.storage.k8s.io/v1
kind: VolumeSnapshot
metadata:
  name: data-snap
  namespace: default
spec:
  volumeSnapshotClassName: mini-snapclass
  source:
    persistentVolumeClaimName: data
"""

RESTORED_CLAIM = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-restored
  namespace: default
spec:
  accessModes: ["ReadWriteOnce"]
  storageClassName: mini
  dataSource:
    apiGroup: snapshot.storage.k8s.io
    kind: VolumeSnapshot
    name: data-snap
  resources:
    requests:
      storage: 2Gi
"""

SNAPSHOT_CRDS = ("volumesnapshotclasses", "volumesnapshotcontents", "volumesnapshots")


def controller_socket(up: Up) -> str:
    (line,) = [s for s in up.said if s.startswith("CSI controller plugin: ")]
    return line.split(": ", 1)[1]


def unexpected(errors: list[str]) -> list[str]:
    return [line for line in errors
            if not any(pattern.search(line) for pattern, _ in EXPECTED_ERRORS)]


class Flow:
    """kubectl against `up` and waits that, when they time out, say what the sidecars
    logged."""

    def __init__(self, up: Up, sidecars: Sidecars) -> None:
        self.up, self.sidecars = up, sidecars

    def jsonpath(self, *target: str, path: str) -> str:
        return self.up.kubectl("get", *target, "-o", f"jsonpath={path}")

    def names(self, kind: str) -> list[str]:
        return self.up.kubectl("get", kind, "-A", "-o", "name").split()

    def none_left(self, kind: str) -> Callable[[], bool]:
        return lambda: not self.names(kind)

    def wait(self, check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; the sidecars logged:\n"
                             + self.sidecars.first_errors())

    def reasons(self, namespace: str, name: str) -> set[str]:
        out = self.up.kubectl("get", "events", "-n", namespace, "--field-selector",
                              f"involvedObject.name={name}", "-o", "json")
        return {e["reason"] for e in json.loads(out)["items"]}


def test_the_real_sidecars_provision_attach_expand_snapshot_restore_and_delete(
        tmp_path: Path) -> None:
    crds = snapshot_crd_dir()
    assert crds is not None
    with running_up("--no-sidecars", "--no-snapshot-controller") as up:
        # what every install does first: external-snapshotter's CRDs
        up.kubectl("create", "-k", str(crds))
        up.kubectl("wait", "--for=condition=Established", "--timeout=30s",
                   *[f"crd/{plural}.snapshot.storage.k8s.io" for plural in SNAPSHOT_CRDS])
        up.kubectl("apply", "-f", "-", stdin=STORAGE)
        leases = ("get", "leases", "-n", LEADER_ELECTION_NAMESPACE, "-o", "name")
        before = set(up.kubectl(*leases).split())
        with running_sidecars(up.kubeconfig, controller_socket(up), tmp_path) as sidecars:
            flow = Flow(up, sidecars)
            # each sidecar takes a Lease of its own (leader election on, as deployed upstream)
            flow.wait(lambda: len(set(up.kubectl(*leases).split()) - before) == len(SIDECARS),
                      "a Lease per sidecar in " + LEADER_ELECTION_NAMESPACE)

            # external-provisioner: CreateVolume and the PV; the attacher: the attachment
            up.kubectl("apply", "-f", "-", stdin=CLAIM_AND_POD)
            flow.wait(lambda: flow.jsonpath("pvc", "data", path="{.status.phase}") == "Bound",
                      "the claim Bound")
            pv = flow.jsonpath("pvc", "data", path="{.spec.volumeName}")
            assert flow.jsonpath("pv", pv, path="{.metadata.annotations.pv\\.kubernetes\\.io/"
                                 "provisioned-by}") == DRIVER
            flow.wait(lambda: flow.jsonpath("pod", "app", path="{.status.phase}") == "Running",
                      "the pod Running")
            (va,) = flow.names("volumeattachments")
            assert flow.jsonpath(va, path="{.status.attached}") == "true"
            assert f"external-attacher/{DRIVER.replace('.', '-')}" in flow.jsonpath(
                va, path="{.metadata.finalizers}")

            # external-resizer: ControllerExpandVolume, then the kubelet's node expansion
            up.kubectl("patch", "pvc", "data", "--type=merge", "-p",
                       '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}')
            flow.wait(lambda: flow.jsonpath("pv", pv, path="{.spec.capacity.storage}")
                      == "2Gi", "the PV expanded to 2Gi")
            flow.wait(lambda: flow.jsonpath("pvc", "data", path="{.status.capacity.storage}")
                      == "2Gi", "the claim's capacity 2Gi")

            # external-resizer's modify controller: ControllerModifyVolume to another class
            up.kubectl("apply", "-f", "-", stdin=CLASSES)
            up.kubectl("patch", "pvc", "data", "--type=merge", "-p",
                       '{"spec":{"volumeAttributesClassName":"fast"}}')
            flow.wait(lambda: flow.jsonpath(
                "pvc", "data", path="{.status.currentVolumeAttributesClassName}") == "fast",
                "the claim's volume attributes class fast")
            assert flow.jsonpath("pv", pv, path="{.spec.volumeAttributesClassName}") == "fast"

            # snapshot-controller: the content; csi-snapshotter: CreateSnapshot
            up.kubectl("apply", "-f", "-", stdin=SNAPSHOT)
            flow.wait(lambda: flow.jsonpath("volumesnapshot", "data-snap",
                                            path="{.status.readyToUse}") == "true",
                      "the snapshot ReadyToUse")
            # the provisioner again: a volume from the snapshot
            up.kubectl("apply", "-f", "-", stdin=RESTORED_CLAIM)
            flow.wait(lambda: flow.jsonpath("pvc", "data-restored", path="{.status.phase}")
                      == "Bound", "the restored claim Bound")

            # each sidecar's Events, as `kubectl describe` lists them
            assert "ProvisioningSucceeded" in flow.reasons("default", "data")
            assert "ProvisioningSucceeded" in flow.reasons("default", "data-restored")
            assert {"Resizing", "VolumeModify", "VolumeModifySuccessful"} <= flow.reasons(
                "default", "data")
            assert {"CreatingSnapshot", "SnapshotCreated", "SnapshotReady"} <= flow.reasons(
                "default", "data-snap")

            # deletion of all: detach, DeleteVolume, DeleteSnapshot
            up.kubectl("delete", "pod", "app", "--wait=false")
            up.kubectl("delete", "pvc", "data-restored", "--wait=false")
            up.kubectl("delete", "volumesnapshot", "data-snap", "--wait=false")
            up.kubectl("delete", "pvc", "data", "--wait=false")
            up.kubectl("delete", "volumeattributesclass", "fast", "--wait=false")
            for kind in ("volumeattachments", "volumesnapshotcontents", "pv", "pvc", "pods",
                         "volumeattributesclasses"):
                flow.wait(flow.none_left(kind), f"no {kind} left", 120)
            with grpc.insecure_channel(controller_socket(up)) as channel:
                stub = csi_pb2_grpc.ControllerStub(channel)
                assert not stub.ListVolumes(csi_pb2.ListVolumesRequest(), timeout=10).entries
                assert not stub.ListSnapshots(csi_pb2.ListSnapshotsRequest(),
                                              timeout=10).entries

            errors = {name: unexpected(lines) for name, lines in sidecars.errors().items()}
            assert not any(errors.values()), "\n".join(
                f"{name}: {line}" for name, lines in errors.items() for line in lines[:10])
