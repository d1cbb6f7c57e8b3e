"""Probes against a running `up`, driven by the real kubectl: a container whose liveness
probe fails is killed and restarted (RESTARTS goes up in `kubectl get pods`, `kubectl
get events` shows Unhealthy and Killing); one whose readiness probe fails stays Running
but 0/1 and its Service's EndpointSlice marks it not ready."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.up_process import Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

UNHEALTHY = """apiVersion: v1
kind: Pod
metadata:
  name: unhealthy
  annotations: {sim.cni-csi-mini.io/liveness-fails-after.app: 1s}
spec:
  containers:
  - name: app
    image: nginx
    livenessProbe:
      httpGet: {path: /healthz, port: 80}
      periodSeconds: 1
      failureThreshold: 1
"""

UNREADY = """apiVersion: v1
kind: Pod
metadata:
  name: unready
  labels: {app: unready}
  annotations: {sim.cni-csi-mini.io/readiness-passes-after: never}
spec:
  containers:
  - name: app
    image: nginx
    readinessProbe:
      tcpSocket: {port: 80}
      periodSeconds: 1
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "1") as cluster:
        yield cluster


def status(up: Up, name: str) -> Any:
    return json.loads(up.kubectl("get", "pod", name, "-o", "json"))["status"]


def test_a_failing_liveness_probe_restarts_the_container(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=UNHEALTHY)
    wait_for(lambda: (status(up, "unhealthy").get("containerStatuses") or [{}])[0]
             .get("restartCount", 0) >= 1, "a restart", timeout=30)
    row = up.kubectl("get", "pod", "unhealthy", "--no-headers").split()
    assert row[3] != "0", row  # RESTARTS
    events = up.kubectl("get", "events", "--field-selector",
                        "involvedObject.name=unhealthy")
    assert "Unhealthy" in events and "Killing" in events
    assert "Liveness probe failed: HTTP probe failed with statuscode: 500" in events
    assert "Container app failed liveness probe, will be restarted" in events
    last = status(up, "unhealthy")["containerStatuses"][0]["lastState"]["terminated"]
    assert last["reason"] == "Completed"
    described = up.kubectl("describe", "pod", "unhealthy")
    assert "http-get http://:80/healthz delay=0s timeout=1s period=1s #success=1 " \
           "#failure=1" in described
    up.kubectl("delete", "pod", "unhealthy", "--wait=false")


def test_a_failing_readiness_probe_keeps_the_pod_out_of_its_endpoints(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=UNREADY)
    up.kubectl("expose", "pod", "unready", "--port=80")
    wait_for(lambda: "Readiness probe failed" in up.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=unready"),
        "a failed readiness probe", timeout=30)
    row = up.kubectl("get", "pod", "unready", "--no-headers").split()
    assert row[1:3] == ["0/1", "Running"], row
    slices = json.loads(up.kubectl("get", "endpointslices", "-l",
                                   "kubernetes.io/service-name=unready", "-o", "json"))
    ready = [e["conditions"]["ready"] for s in slices["items"] for e in s.get("endpoints") or []]
    assert ready == [False]
    up.kubectl("delete", "service", "unready")
    up.kubectl("delete", "pod", "unready", "--wait=false")
