"""Pods that follow their spec against a running `up`, driven by the real kubectl: a
crashing container shows CrashLoopBackOff and its restarts in `kubectl get pods`;
`kubectl set image` on a running pod restarts its container with the kubelet's events in
`kubectl describe`; activeDeadlineSeconds fails the pod with DeadlineExceeded; an envFrom
of a missing ConfigMap waits with CreateContainerConfigError until `kubectl create
configmap`; a restartPolicy on a regular container is refused; a deleted running pod is
watched `0/1 Completed` (its terminal status) before it goes."""

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

CRASHING = """apiVersion: v1
kind: Pod
metadata:
  name: crash
  annotations: {sim.cni-csi-mini.io/exit-after: 200ms, sim.cni-csi-mini.io/exit-code: "1"}
spec:
  containers: [{name: app, image: busybox}]
"""

DEADLINE = """apiVersion: v1
kind: Pod
metadata: {name: brief}
spec:
  activeDeadlineSeconds: 2
  containers: [{name: app, image: busybox}]
"""

NEEDS_CONFIG = """apiVersion: v1
kind: Pod
metadata: {name: configured}
spec:
  containers:
  - name: app
    image: busybox
    envFrom: [{configMapRef: {name: settings}}]
"""

SIDECAR_ON_A_REGULAR_CONTAINER = """apiVersion: v1
kind: Pod
metadata: {name: wrong}
spec:
  containers: [{name: app, image: busybox, restartPolicy: Always}]
"""


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up("--nodes", "1") as cluster:
        yield cluster


def pod(up: Up, name: str) -> Any:
    return json.loads(up.kubectl("get", "pod", name, "-o", "json"))


def container(up: Up, name: str) -> Any:
    return (pod(up, name)["status"].get("containerStatuses") or [{}])[0]


def event_lines(up: Up, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"])
            for e in up.events(f"involvedObject.name={name}")]


def test_a_crashing_container_shows_crash_loop_back_off_and_its_restarts(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=CRASHING)
    wait_for(lambda: "CrashLoopBackOff" in up.kubectl("get", "pod", "crash"),
             "CrashLoopBackOff in kubectl get pods")
    row = up.kubectl("get", "pod", "crash", "--no-headers").split()
    assert row[1:4] == ["0/1", "CrashLoopBackOff", "1"], row
    status = container(up, "crash")
    uid = pod(up, "crash")["metadata"]["uid"]
    assert status["state"]["waiting"]["message"] == (
        f"back-off 10s restarting failed container=app pod=crash_default({uid})")
    assert status["lastState"]["terminated"]["exitCode"] == 1
    assert ("BackOff", f"Back-off restarting failed container app in pod "
            f"crash_default({uid})") in event_lines(up, "crash")
    up.kubectl("delete", "pod", "crash", "--wait=false")


def test_set_image_restarts_the_running_container_with_the_kubelets_events(up: Up) -> None:
    up.kubectl("run", "web", "--image=nginx:1")
    wait_for(lambda: container(up, "web").get("ready"), "web running")
    manifest = up.kubectl("get", "pod", "web", "-o", "yaml")
    assert "    image: docker.io/library/nginx:1\n" in manifest  # the runtime's reference
    assert "    lastState: {}\n" in manifest  # never terminated yet
    up.kubectl("set", "image", "pod/web", "web=nginx:2")
    wait_for(lambda: container(up, "web").get("restartCount") == 1, "web restarted")
    status = container(up, "web")
    assert status["image"] == "docker.io/library/nginx:2" and "running" in status["state"]
    described = up.kubectl("describe", "pod", "web")
    assert "Container web definition changed, will be restarted" in described
    assert ('Container image "nginx:2" already present on machine and can be accessed '
            "by the pod") in described
    started = [e.get("count", 1) for e in up.events("involvedObject.name=web")
               if e["reason"] == "Started"]
    assert sum(started) == 2  # the same event again: its count goes up
    up.kubectl("delete", "pod", "web", "--wait=false")


def test_active_deadline_fails_the_pod_with_deadline_exceeded(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=DEADLINE)
    wait_for(lambda: pod(up, "brief")["status"].get("phase") == "Failed", "brief failed",
             timeout=30)
    status = pod(up, "brief")["status"]
    assert (status["reason"], status["message"]) == (
        "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
    # printPod starts from the pod's reason, then its killed container's terminated
    # reason (exit code 137, Error) overrides it, as in a real cluster
    assert up.kubectl("get", "pod", "brief", "--no-headers").split()[1:3] == ["0/1", "Error"]
    assert ("DeadlineExceeded", status["message"]) in event_lines(up, "brief")
    up.kubectl("delete", "pod", "brief", "--wait=false")


def test_a_missing_config_map_waits_until_it_is_created(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=NEEDS_CONFIG)
    wait_for(lambda: "CreateContainerConfigError" in up.kubectl("get", "pod", "configured"),
             "CreateContainerConfigError")
    waiting = container(up, "configured")["state"]["waiting"]
    assert waiting["message"] == 'configmap "settings" not found'
    assert ("Failed", 'Error: configmap "settings" not found') in event_lines(up, "configured")
    up.kubectl("create", "configmap", "settings", "--from-literal=mode=fast")
    wait_for(lambda: "Running" in up.kubectl("get", "pod", "configured"), "configured running",
             timeout=10)
    up.kubectl("delete", "pod", "configured", "--wait=false")


def test_a_restart_policy_on_a_regular_container_is_refused(up: Up) -> None:
    done = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "apply", "-f", "-"],
                          input=SIDECAR_ON_A_REGULAR_CONTAINER, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode != 0
    assert ('The Pod "wrong" is invalid: spec.containers[0].restartPolicy: Forbidden: '
            "may not be set for non-init containers") in done.stderr


def _watch(up: Up, name: str, *output: str) -> subprocess.Popen[str]:
    return subprocess.Popen([str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "pod", name,
                             "-w", "--output-watch-events", *output],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _lines_until_deleted(watch: subprocess.Popen[str]) -> list[str]:
    """What the watch printed, a line an event, up to the deletion (the kubectl process
    is killed by the test when it does not come)."""
    lines: list[str] = []
    assert watch.stdout is not None
    for line in watch.stdout:
        lines.append(line)
        if "DELETED" in line:
            break
    return lines


def test_a_deleted_running_pod_is_watched_completed_before_it_goes(up: Up) -> None:
    up.kubectl("run", "doomed", "--image=busybox")
    wait_for(lambda: pod(up, "doomed")["status"].get("phase") == "Running", "doomed Running")
    as_json, as_table = _watch(up, "doomed", "-o", "json"), _watch(up, "doomed")
    def stop() -> None:
        as_json.kill()
        as_table.kill()
    timer = threading.Timer(60, stop)
    timer.start()
    try:
        assert as_json.stdout is not None and as_table.stdout is not None
        # each lists the pod first (ADDED), then watches
        assert json.loads(as_json.stdout.readline())["type"] == "ADDED"
        assert as_table.stdout.readline().split()[0] == "EVENT"
        assert as_table.stdout.readline().split()[0] == "ADDED"
        up.kubectl("delete", "pod", "doomed", "--wait=false")
        events = [json.loads(line) for line in _lines_until_deleted(as_json)]
        rows = _lines_until_deleted(as_table)
    finally:
        timer.cancel()
        stop()
    assert events[-1]["type"] == "DELETED"
    terminal = next(e["object"] for e in events if e["type"] == "MODIFIED"
                    and e["object"]["status"]["phase"] == "Succeeded")
    assert terminal["metadata"]["deletionTimestamp"]
    state = terminal["status"]["containerStatuses"][0]
    assert state["state"]["terminated"]["reason"] == "Completed"
    assert state["state"]["terminated"]["exitCode"] == 0
    assert (state["ready"], state["started"]) == (False, False)
    assert {(c["type"], c["status"], c.get("reason")) for c in terminal["status"]["conditions"]
            } >= {("Ready", "False", "PodCompleted"), ("ContainersReady", "False", "PodCompleted")}
    assert rows[-1].split()[0] == "DELETED"
    assert rows[-1].split()[2:4] == ["0/1", "Completed"]
