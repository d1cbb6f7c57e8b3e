"""Init containers and sidecars against a running `up`, seen with the real kubectl:
`kubectl get pods -w` shows Init:0/2 while the init container runs, Init:1/2,
PodInitializing once the sidecar started, then Running with the sidecar counted in READY;
a Job-like pod whose app container finishes is Completed with its sidecar stopped; a
failing init container shows Init:Error under restartPolicy Never and
Init:CrashLoopBackOff otherwise."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl

INITIALIZED_WEB = """apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations: {sim.cni-csi-mini.io/exit-after.migrate: 2s}
spec:
  initContainers:
  - {name: migrate, image: busybox}
  - {name: proxy, image: envoy, restartPolicy: Always}
  containers: [{name: app, image: nginx}]
"""

JOB_WITH_SIDECAR = """apiVersion: v1
kind: Pod
metadata:
  name: job
  annotations: {sim.cni-csi-mini.io/exit-after: 1s}
spec:
  restartPolicy: Never
  initContainers: [{name: proxy, image: envoy, restartPolicy: Always}]
  containers: [{name: work, image: busybox}]
"""

FAILING_INIT = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  annotations: {{sim.cni-csi-mini.io/exit-code.setup: "1"}}
spec:
  restartPolicy: {policy}
  initContainers: [{{name: setup, image: busybox}}]
  containers: [{{name: app, image: nginx}}]
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "1") as cluster:
        yield cluster


def row(up: Up, name: str) -> list[str]:
    """NAME READY STATUS RESTARTS ... of ``kubectl get pod``."""
    return up.kubectl("get", "pod", name, "--no-headers").split()


def pod(up: Up, name: str) -> Any:
    return json.loads(up.kubectl("get", "pod", name, "-o", "json"))


class Watched:
    """The rows `kubectl get pods -w` prints for one pod, as they come."""

    def __init__(self, up: Up, name: str) -> None:
        self.rows: list[list[str]] = []
        self.proc = subprocess.Popen(
            [str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "pods", "-w", "--no-headers",
             "--field-selector", f"metadata.name={name}"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.rows.append(line.split())

    def statuses(self) -> list[str]:
        seen: list[str] = []
        for row in list(self.rows):
            if not seen or seen[-1] != row[2]:
                seen.append(row[2])
        return seen

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_kubectl_shows_the_init_containers_then_running_with_the_sidecar_ready(
        up: Up) -> None:
    watched = Watched(up, "web")
    try:
        up.kubectl("apply", "-f", "-", stdin=INITIALIZED_WEB)
        wait_for(lambda: "Running" in watched.statuses(), "web running")
    finally:
        watched.stop()
    statuses = watched.statuses()  # Pending first, until the kubelet's first write
    assert statuses[statuses.index("Init:0/2"):] == [
        "Init:0/2", "Init:1/2", "PodInitializing", "Running"], statuses
    assert ["0/2", "Init:0/2"] in [r[1:3] for r in watched.rows]
    assert row(up, "web")[1:4] == ["2/2", "Running", "0"]
    status = pod(up, "web")["status"]
    migrate, proxy = status["initContainerStatuses"]
    assert migrate["state"]["terminated"]["reason"] == "Completed" and migrate["ready"]
    assert "running" in proxy["state"] and proxy["started"] and proxy["ready"]
    initialized = next(c for c in status["conditions"] if c["type"] == "Initialized")
    assert initialized["status"] == "True"
    described = up.kubectl("describe", "pod", "web")
    assert "Init Containers:" in described and "Completed" in described

    up.kubectl("apply", "-f", "-", stdin=JOB_WITH_SIDECAR)
    wait_for(lambda: row(up, "job")[2] == "Completed", "the job pod completed")
    done = pod(up, "job")["status"]
    assert done["phase"] == "Succeeded"
    assert done["initContainerStatuses"][0]["state"]["terminated"]["exitCode"] == 0
    assert row(up, "job")[1] == "0/2"
    up.kubectl("delete", "pod", "web", "job", "--wait=false")


def test_a_failing_init_container_shows_init_error_or_crash_loop_back_off(up: Up) -> None:
    up.kubectl("apply", "-f", "-",
               stdin=FAILING_INIT.format(name="once", policy="Never") + "---\n"
               + FAILING_INIT.format(name="again", policy="OnFailure"))
    wait_for(lambda: row(up, "once")[2] == "Init:Error", "Init:Error")
    assert pod(up, "once")["status"]["phase"] == "Failed"
    wait_for(lambda: row(up, "again")[2] == "Init:CrashLoopBackOff", "Init:CrashLoopBackOff")
    assert pod(up, "again")["status"]["phase"] == "Pending"
    assert row(up, "again")[3] == "1"  # restarted once at once, then backing off
    up.kubectl("delete", "pod", "once", "again", "--wait=false")
