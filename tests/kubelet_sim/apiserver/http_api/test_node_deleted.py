"""A Node deleted under a running kubelet, over a real `up`: the kubelet keeps running
(it registers once, as the real one does, and says why its status is not written), the
pod garbage collector removes the node's pods after its quarantine, and the kubelet tears
them down as it does any pod that left the API (CNI DEL). The quarantine is cut from 40 s
to 2 s here (tests/fixtures/up_short_pod_gc.py): its length is tested on a fake clock in
tests/kubelet_sim/controllers/test_pod_gc.py, this test is about what follows it."""

from __future__ import annotations

import json
import os

from tests.fixtures.up_process import running_up, wait_for

from .conftest import POD, needs_kubectl

pytestmark = needs_kubectl


def test_deleting_a_node_gcs_its_pods_and_the_kubelet_tears_them_down() -> None:
    with running_up(module="tests.fixtures.up_short_pod_gc") as up:
        up.kubectl("apply", "-f", "-", stdin=POD)
        up.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
        leases = up.state / "cluster" / "node-1" / "ipam" / "mini-pod-network"
        assert [p for p in os.listdir(leases) if p.startswith("10.")]
        up.kubectl("delete", "node", "node-1")
        wait_for(lambda: not json.loads(up.kubectl("get", "pods", "-o", "json"))["items"],
                 "the pod GC", timeout=60)
        wait_for(lambda: not [p for p in os.listdir(leases) if p.startswith("10.")],
                 "CNI DEL of the collected pod", timeout=30)
        rest = up.stop(timeout=60)
    assert "Traceback" not in rest, rest
