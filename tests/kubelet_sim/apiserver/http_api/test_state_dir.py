"""`up --state-dir DIR` keeps the cluster: started again on DIR (after SIGTERM or a
kill -9) it has every API object it had, under the same resourceVersions, serves on the
same port with the same CA and token (the old kubeconfig works), answers a watch from
before the restart 410 Gone, and the kubelets take back the pods they ran, so deleting
them still unpublishes, unstages, detaches and releases their addresses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT, Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl
EXAMPLE = PROJECT_ROOT / "examples" / "pod-with-pvc.yaml"


@pytest.fixture
def state() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ksim-keep-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pods(up: Up) -> dict[str, tuple[str, str]]:
    """name -> (phase, pod IP)."""
    items = json.loads(up.kubectl("get", "pods", "-o", "json"))["items"]
    return {p["metadata"]["name"]: (p["status"].get("phase", ""), p["status"].get("podIP", ""))
            for p in items}


def list_version(up: Up) -> int:
    return int(json.loads(up.kubectl("get", "--raw", "/api/v1/pods"))["metadata"]
               ["resourceVersion"])


def driver_processes(state: Path) -> list[int]:
    """The csi_driver processes serving sockets under ``state``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "stat").read_text()
        except OSError:
            continue
        if b"csi_driver" in cmdline and str(state).encode() in cmdline \
                and status.rsplit(")", 1)[1].split()[0] != "Z":
            found.append(int(entry.name))
    return found


def node_calls(state: Path) -> list[str]:
    log = state / "cluster" / "logs" / "csi-node-1.log"
    return [json.loads(line)["method"].rsplit("/", 1)[1]
            for line in log.read_text().splitlines() if line.startswith("{")]


def test_after_kill_9_the_same_cluster_comes_back_and_its_pods_still_tear_down(
    state: Path,
) -> None:
    with running_up(state=state) as up:
        up.kubectl("apply", "-f", str(EXAMPLE))
        up.kubectl("wait", "--for=condition=Ready", "pod/db", "pod/web", "--timeout=60s")
        before = pods(up)
        claim = json.loads(up.kubectl("get", "pvc", "db-data", "-o", "json"))
        version = list_version(up)
        kubeconfig = Path(up.kubeconfig).read_text()
        server = up.said[0].rsplit(" ", 1)[1]
        up.kill9()
    assert len(driver_processes(state)) == 2  # a killed simulator leaves its plugins

    with running_up(state=state) as up:
        assert up.said[0].rsplit(" ", 1)[1] == server  # same port
        assert Path(up.kubeconfig).read_text() == kubeconfig  # same CA and token
        assert len(driver_processes(state)) == 2  # the stale ones were stopped, not doubled
        assert pods(up) == before  # still Running, same addresses: the sandboxes were kept
        again = json.loads(up.kubectl("get", "pvc", "db-data", "-o", "json"))
        assert again["metadata"]["uid"] == claim["metadata"]["uid"]
        assert again["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]
        assert again["spec"]["volumeName"] == claim["spec"]["volumeName"]
        assert list_version(up) >= version  # the counter goes on from where it was

        # A watch from before the restart: 410 Gone (Expired), so the client relists.
        done = subprocess.run(
            [str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "--raw",
             f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={version - 1}"
             "&timeoutSeconds=2"], capture_output=True, text=True, timeout=30, check=False)
        said = done.stdout + done.stderr
        assert "Expired" in said and "410" in said, said
        # ... and from the current version it streams.
        now = list_version(up)
        up.kubectl("get", "--raw",
                   f"/api/v1/namespaces/default/pods?watch=1&resourceVersion={now}"
                   "&timeoutSeconds=1")

        up.kubectl("delete", "pod", "db", "web", "--timeout=60s")
        wait_for(lambda: not json.loads(up.kubectl("get", "volumeattachments", "-o",
                                                   "json"))["items"], "the detach")
        calls = node_calls(state)
        assert "NodeUnpublishVolume" in calls and "NodeUnstageVolume" in calls
        leases = state / "cluster" / "node-1" / "ipam" / "mini-pod-network"
        assert not [p for p in os.listdir(leases) if p.startswith("10.")]  # CNI DEL ran


def test_after_sigterm_claims_classes_and_volumes_stay_and_serve_a_new_pod(
    state: Path,
) -> None:
    with running_up(state=state) as up:
        up.kubectl("apply", "-f", str(EXAMPLE))
        up.kubectl("wait", "--for=condition=Ready", "pod/db", "--timeout=60s")
        volume = json.loads(up.kubectl("get", "pvc", "db-data", "-o", "json"))["spec"][
            "volumeName"]
        up.stop()  # the orderly teardown deletes the pods

    with running_up(state=state) as up:
        assert pods(up) == {}
        assert up.kubectl("get", "storageclass", "mini", "-o", "name") == \
            "storageclass.storage.k8s.io/mini\n"
        assert json.loads(up.kubectl("get", "pv", volume, "-o", "json"))["status"][
            "phase"] == "Bound"
        up.kubectl("apply", "-f", str(EXAMPLE))  # the claim is unchanged, the pods new
        up.kubectl("wait", "--for=condition=Ready", "pod/db", "--timeout=60s")
        assert json.loads(up.kubectl("get", "pvc", "db-data", "-o", "json"))["spec"][
            "volumeName"] == volume
