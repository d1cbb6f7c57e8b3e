"""Capacity-aware scheduling on `python -m kubelet_sim up` with our driver, driven by
kubectl: once the CSIDriver says ``storageCapacity: true``, the provisioner role publishes
one CSIStorageCapacity per node segment for a WaitForFirstConsumer class (our driver's
pool, 1Ti), a claim bigger than that keeps its pod Pending with the scheduler's reason, a
smaller one runs and its node's capacity shrinks by it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

pytestmark = pytest.mark.skipif(not KUBECTL.exists(),
                                reason="kubectl not installed: run `make kubectl`")

DRIVER = "csi-mini.example.com"
NOT_ENOUGH = ("0/2 nodes are available: 2 node(s) did not have enough free storage. "
              "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")

LATE_CLASS = f"""apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: late}}
provisioner: {DRIVER}
volumeBindingMode: WaitForFirstConsumer
"""


def claim_and_pod(name: str, size: str) -> str:
    return f"""apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: late
  resources: {{requests: {{storage: {size}}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
  containers: [{{name: app, image: registry.k8s.io/pause:3.9}}]
  volumes: [{{name: data, persistentVolumeClaim: {{claimName: {name}}}}}]
"""


def capacities(up: Up) -> dict[str, dict[str, Any]]:
    """node -> its segment's CSIStorageCapacity, as kubectl gets them."""
    items = json.loads(up.kubectl("get", "csistoragecapacities", "-A", "-o", "json"))["items"]
    return {c["nodeTopology"]["matchLabels"]["topology.csi-mini.example.com/node"]: c
            for c in items}


def pod_scheduled(up: Up, name: str) -> dict[str, Any]:
    pod = json.loads(up.kubectl("get", "pod", name, "-o", "json"))
    return next((c for c in pod["status"].get("conditions", [])
                 if c["type"] == "PodScheduled"), {})


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "2") as cluster:
        cluster.kubectl("patch", "csidriver", DRIVER, "--type", "merge",
                        "-p", '{"spec":{"storageCapacity":true}}')
        cluster.kubectl("apply", "-f", "-", stdin=LATE_CLASS)
        wait_for(lambda: len(capacities(cluster)) == 2, "a capacity object per node")
        yield cluster


def test_kubectl_lists_one_capacity_per_node_segment_for_the_class(up: Up) -> None:
    lines = up.kubectl("get", "csistoragecapacities", "-n", "kube-system").splitlines()
    assert lines[0].split() == ["NAME", "STORAGECLASSNAME", "CAPACITY"]
    assert sorted(line.split()[1:] for line in lines[1:]) == [["late", "1Ti"], ["late", "1Ti"]]
    assert all(line.split()[0].startswith("csisc-") for line in lines[1:])
    found = capacities(up)
    assert sorted(found) == ["node-1", "node-2"]
    assert {c["metadata"]["labels"]["csi.storage.k8s.io/managed-by"]
            for c in found.values()} == {"external-provisioner"}


def test_a_claim_bigger_than_every_segment_keeps_its_pod_pending_with_the_reason(
    up: Up,
) -> None:
    up.kubectl("apply", "-f", "-", stdin=claim_and_pod("huge", "2Ti"))

    scheduled = wait_for(lambda: pod_scheduled(up, "huge").get("reason") == "Unschedulable"
                         and pod_scheduled(up, "huge"), "the pod found unschedulable")

    assert scheduled["status"] == "False" and scheduled["message"] == NOT_ENOUGH
    events = up.events("involvedObject.kind=Pod,involvedObject.name=huge,"
                       "reason=FailedScheduling")
    assert [e["message"] for e in events] == [NOT_ENOUGH]
    claim = json.loads(up.kubectl("get", "pvc", "huge", "-o", "json"))
    assert claim["status"]["phase"] == "Pending"


def test_a_claim_that_fits_runs_and_its_segment_shrinks(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=claim_and_pod("small", "1Gi"))

    up.kubectl("wait", "--for=condition=Ready", "pod/small", "--timeout=60s")

    node = json.loads(up.kubectl("get", "pod", "small", "-o", "json"))["spec"]["nodeName"]
    shrunk = wait_for(lambda: capacities(up)[node]["capacity"] == "1023Gi"
                      and capacities(up)[node], "the capacity to shrink")
    assert shrunk["maximumVolumeSize"] == "1023Gi"
