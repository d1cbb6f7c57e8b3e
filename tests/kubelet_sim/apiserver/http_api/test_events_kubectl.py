"""Events as the real kubectl sees them on a running `python -m kubelet_sim up`: stored
Event objects, listed in order by `kubectl describe`, selected by field, counted when they
repeat, and streamed to `kubectl get events -w` as they are written."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT, Up, running_up, wait_for
from tests.kubelet_sim.failing_plugins import (
    FAILING_LOOPBACK_MESSAGE,
    bin_dir_with_failing_loopback,
)

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    """One plain `up` for the tests on its own plugins (their objects have distinct names)."""
    with running_up() as running:
        yield running

POD = """apiVersion: v1
kind: Pod
metadata: {name: lonely}
spec:
  containers: [{name: app, image: registry.k8s.io/pause:3.9}]
"""


WAITING_CLAIM = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: later}
provisioner: csi-mini.example.com
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: waiting}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: later
  resources: {requests: {storage: 1Gi}}
"""


def described_events(up: Up, pod: str) -> list[list[str]]:
    """The rows of `kubectl describe pod`'s Events table: type, reason, age, from, message."""
    section = up.kubectl("describe", "pod", pod).split("Events:", 1)[1].splitlines()
    return [row.split(None, 4) for row in section[3:] if row.strip()]


def test_describe_lists_a_pods_events_in_order_and_watch_sees_them_arrive(up: Up) -> None:
    watch = subprocess.Popen([str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "events",
                              "-w", "--field-selector", "involvedObject.name=db",
                              "-o", "jsonpath={.reason}{\"\\n\"}"],
                             stdout=subprocess.PIPE, text=True)
    try:
        up.kubectl("apply", "-f", str(PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"))
        wait_for(lambda: "Started" in [e["reason"] for e in up.events(
            "involvedObject.name=db")], "the db pod's Started event")
        rows = described_events(up, "db")
        # the claim may still be unbound at the first attempt, as in a real cluster
        while rows[0][1] == "FailedScheduling":
            assert "pod has unbound immediate PersistentVolumeClaims" in rows.pop(0)[4]
        # the kubelet (woken by the pod's binding) may look before the attach lands;
        # ours says so at once, where a real kubelet waits up to 2 min before it does
        rows = [r for r in rows if not (r[1] == "FailedMount" and (
            "not attached according to node status" in r[4]
            or "not attached to node-1 yet" in r[4] or "waits for VolumeAttachment" in r[4]))]
        assert [(r[0], r[1]) for r in rows] == [
            ("Normal", "Scheduled"), ("Normal", "SuccessfulAttachVolume"),
            ("Normal", "Pulled"), ("Normal", "Created"), ("Normal", "Started")]
        assert rows[0][3].startswith("default-scheduler")
        assert rows[0][4].endswith("Successfully assigned default/db to node-1")
        assert rows[1][3].startswith("attachdetach-controller")
        assert 'AttachVolume.Attach succeeded for volume "pvc-' in rows[1][4]
        assert rows[2][3].startswith("kubelet")
        assert rows[2][4].endswith('Container image "registry.k8s.io/pause:3.9" already '
                                   "present on machine and can be accessed by the pod")
        assert rows[3][4].endswith("Created container: mysql")
        assert rows[4][4].endswith("Started container mysql")
    finally:
        watch.terminate()
        streamed, _ = watch.communicate(timeout=10)
    # the watch was open before the pod existed: every event arrived through it
    assert [r for r in streamed.split() if r in ("Scheduled", "Started")] == [
        "Scheduled", "Started"]

    (started,) = up.events("involvedObject.name=db,reason=Started")
    assert started["metadata"]["name"].startswith("db.")
    assert started["involvedObject"]["fieldPath"] == "spec.containers{mysql}"
    assert started["source"] == {"component": "kubelet", "host": "node-1"}
    # the same object in the events.k8s.io/v1 shape
    v1 = json.loads(up.kubectl("get", "events.v1.events.k8s.io",
                               started["metadata"]["name"], "-o", "json"))
    assert (v1["regarding"]["name"], v1["note"], v1["reportingController"]) == (
        "db", "Started container mysql", "kubelet")

    # a larger claim: the resizer, then the kubelet's file system expansion
    up.kubectl("patch", "pvc", "db-data", "-p",
               '{"spec": {"resources": {"requests": {"storage": "3Gi"}}}}')
    resized = wait_for(lambda: up.events("reason=FileSystemResizeSuccessful"),
                       "FileSystemResizeSuccessful", timeout=30)
    volume = json.loads(up.kubectl("get", "pvc", "db-data", "-o", "json"))["spec"][
        "volumeName"]
    assert {(e["involvedObject"]["kind"], e["message"]) for e in resized} == {
        (kind, f'MountVolume.NodeExpandVolume succeeded for volume "{volume}" node-1')
        for kind in ("Pod", "PersistentVolumeClaim")}
    claim_reasons = [e["reason"] for e in up.events("involvedObject.name=db-data")]
    assert claim_reasons[-3:] == ["Resizing", "FileSystemResizeRequired",
                                  "FileSystemResizeSuccessful"]

    up.kubectl("delete", "pod", "web", "--wait=false")
    (killing,) = wait_for(lambda: up.events("involvedObject.name=web,reason=Killing"),
                          "the web pod's Killing event")
    assert killing["message"] == "Stopping container nginx"


def test_a_repeated_event_is_one_event_with_a_count(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=WAITING_CLAIM)
    selector = "involvedObject.name=waiting,reason=WaitForFirstConsumer"
    (first,) = wait_for(lambda: up.events(selector), "WaitForFirstConsumer")
    for n in range(2):  # each change of the claim is one more pass of the binder
        up.kubectl("label", "pvc", "waiting", f"touched={n}", "--overwrite")

    def counted() -> list[dict[str, Any]]:
        return [e for e in up.events(selector) if e["count"] > 1]

    (event,) = wait_for(counted, "a count above 1")
    assert event["metadata"]["name"] == first["metadata"]["name"]
    assert event["firstTimestamp"] == first["firstTimestamp"]
    assert event["message"] == "waiting for first consumer to be created before binding"
    rows = up.kubectl("describe", "pvc", "waiting").split("Events:", 1)[1]
    assert f"(x{event['count']} over" in rows


def test_a_failing_cni_add_is_a_failed_create_pod_sandbox_event_with_the_cni_error() -> None:
    bin_dir = bin_dir_with_failing_loopback(Path(tempfile.mkdtemp(prefix="ksim-cni-",
                                                                  dir="/tmp")))
    try:
        with running_up("--cni-bin-dir", str(bin_dir)) as up:
            up.kubectl("apply", "-f", "-", stdin=POD)
            selector = "reason=FailedCreatePodSandBox"
            failed = wait_for(lambda: up.events(selector), "FailedCreatePodSandBox")
            event = failed[0]
            assert event["type"] == "Warning"
            assert event["involvedObject"]["name"] == "lonely"
            assert event["source"] == {"component": "kubelet", "host": "node-1"}
            assert event["message"].startswith("Failed to create pod sandbox: ")
            assert FAILING_LOOPBACK_MESSAGE in event["message"]
            table = up.kubectl("get", "events", "--field-selector", selector)
            assert table.splitlines()[0].split() == ["LAST", "SEEN", "TYPE", "REASON",
                                                     "OBJECT", "MESSAGE"]
            assert "pod/lonely" in table and FAILING_LOOPBACK_MESSAGE in table
            rows = described_events(up, "lonely")
            assert ("Warning", "FailedCreatePodSandBox") in [(r[0], r[1]) for r in rows]
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)


EVENTS_V1_EVENT = """apiVersion: events.k8s.io/v1
kind: Event
metadata: {name: node-1.hello}
regarding: {kind: Node, name: node-1, apiVersion: v1}
reason: Hello
note: written in the events.k8s.io shape
type: Normal
action: Greeting
reportingController: example.com/greeter
reportingInstance: greeter-0
eventTime: "2026-12-03T12:00:00.000000Z"
"""


def test_an_events_k8s_io_event_is_the_same_object_as_a_core_event(served: Served) -> None:
    served.kubectl("create", "--validate=false", "-f", "-", stdin=EVENTS_V1_EVENT)

    core = served.kubectl_json("get", "events", "node-1.hello")
    assert (core["apiVersion"], core["involvedObject"]["name"], core["message"],
            core["reportingComponent"]) == ("v1", "node-1", "written in the events.k8s.io "
                                            "shape", "example.com/greeter")
    assert core["metadata"]["namespace"] == "default"  # a cluster-scoped object's events
    wide = served.kubectl("get", "events", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT",
                               "SOURCE", "MESSAGE", "FIRST", "SEEN", "COUNT", "NAME"]
    assert wide[1].split()[1:4] == ["Normal", "Hello", "node/node-1"]
    assert "example.com/greeter, greeter-0" in wide[1]
    served.kubectl("patch", "events.v1.events.k8s.io", "node-1.hello", "--type=merge",
                   "-p", '{"note": "patched"}')
    assert served.kubectl_json("get", "events", "node-1.hello")["message"] == "patched"


def test_an_event_about_a_namespaced_object_elsewhere_is_invalid(served: Served) -> None:
    wrong = EVENTS_V1_EVENT.replace("regarding: {kind: Node,",
                                    "regarding: {kind: Pod, namespace: other,")
    done = served.kubectl("create", "--validate=false", "-f", "-", stdin=wrong, check=False)
    assert done.returncode != 0
    assert "does not match event.namespace" in done.stderr
