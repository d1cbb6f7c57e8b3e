"""A running pod's status as kubectl reads it on `python -m kubelet_sim up`: the five
conditions a kubelet writes (`kubectl wait --for=condition=Ready` returns), container
statuses with containerd ids, READY 1/1 and the QoS class the API server sets."""

from __future__ import annotations

import json
import re

from tests.fixtures.up_process import running_up

from .conftest import needs_kubectl

pytestmark = needs_kubectl

PODS = """apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  containers: [{name: app, image: registry.k8s.io/pause:3.9}]
---
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.36
    resources: {limits: {cpu: 100m, memory: 64Mi}}
  - name: side
    image: docker.io/library/busybox:1.36
    resources: {requests: {cpu: 50m, memory: 32Mi}, limits: {cpu: 50m, memory: 32Mi}}
"""


def test_a_running_pods_status_is_the_kubelets() -> None:
    with running_up() as up:
        up.kubectl("apply", "-f", "-", stdin=PODS)
        up.kubectl("wait", "--for=condition=Ready", "pod/plain", "pod/sized", "--timeout=60s")
        pods = {p["metadata"]["name"]: p
                for p in json.loads(up.kubectl("get", "pods", "-o", "json"))["items"]}
        plain = pods["plain"]["status"]
        assert [c["type"] for c in plain["conditions"]] == [
            "PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready",
            "PodScheduled"]
        assert all(c["status"] == "True" for c in plain["conditions"])
        (container,) = plain["containerStatuses"]
        assert container["containerID"].startswith("containerd://")
        assert len(container["containerID"]) == len("containerd://") + 64
        assert container["imageID"].startswith("registry.k8s.io/pause@sha256:")
        assert container["ready"] and container["started"]
        assert "startedAt" in container["state"]["running"]
        assert plain["qosClass"] == "BestEffort"
        sized = pods["sized"]["status"]
        assert sized["qosClass"] == "Guaranteed"  # limits alone default the requests
        ids = {c["containerID"] for c in sized["containerStatuses"]}
        assert len(ids) == 2
        rows = up.kubectl("get", "pods").splitlines()[1:]
        assert sorted(r.split()[:3] for r in rows) == [["plain", "1/1", "Running"],
                                                       ["sized", "2/2", "Running"]]
        described = up.kubectl("describe", "pod", "plain")
        assert re.search(r"^QoS Class:\s+BestEffort$", described, re.M)
        assert re.search(r"^    State:\s+Running$", described, re.M)
        assert re.search(r"^    Container ID:\s+containerd://[0-9a-f]{64}$", described, re.M)
        assert re.search(r"^  PodReadyToStartContainers\s+True\s*$", described, re.M)
        up.kubectl("delete", "pod", "plain", "sized", "--timeout=60s")
