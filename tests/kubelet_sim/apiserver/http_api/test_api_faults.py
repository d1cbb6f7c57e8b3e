"""The API server's fault injection in `up`: conflicts from the flags (the components
retry and the pod still runs), and at run time through /debug/kubelet-sim/faults with
kubectl: conflicts kubectl itself sees, a slow write, and dropped watches that come back
410 Gone so clients relist."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.fixtures.up_process import KUBECTL, running_up

from .conftest import needs_kubectl

pytestmark = needs_kubectl
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
       "spec": {"containers": [{"name": "web", "image": "nginx"}]}}


def test_conflicts_from_the_flags_are_retried_by_the_components() -> None:
    with running_up("--api-conflicts", "Pod=3") as up:
        up.kubectl("apply", "-f", "-", stdin=json.dumps(POD))
        up.kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")


def test_faults_set_at_run_time_reach_kubectl_and_watchers(tmp_path: Path) -> None:
    with running_up() as up:
        up.kubectl("apply", "-f", "-", stdin=json.dumps(POD))
        faults = tmp_path / "faults.json"

        faults.write_text(json.dumps({"conflicts": [
            {"kind": "Pod", "count": 1, "verbs": ["patch"]}]}))
        up.kubectl("create", "--raw", "/debug/kubelet-sim/faults", "-f", str(faults))
        refused = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "label", "pod",
                                  "web", "tier=front"], capture_output=True, text=True,
                                 timeout=30, check=False)
        assert refused.returncode != 0 and "injected" in refused.stderr, refused.stderr
        up.kubectl("label", "pod", "web", "tier=front")  # the next one goes through

        faults.write_text(json.dumps({"writeDelaySeconds": 0.5}))
        up.kubectl("create", "--raw", "/debug/kubelet-sim/faults", "-f", str(faults))
        assert json.loads(up.kubectl("get", "--raw", "/debug/kubelet-sim/faults")) == {
            "writeDelaySeconds": 0.5}
        started = time.monotonic()
        up.kubectl("label", "pod", "web", "tier=back", "--overwrite")
        assert time.monotonic() - started >= 0.5  # the write waited
        faults.write_text(json.dumps({"writeDelaySeconds": 0}))
        up.kubectl("create", "--raw", "/debug/kubelet-sim/faults", "-f", str(faults))

        version = json.loads(up.kubectl("get", "--raw", "/api/v1/pods"))["metadata"][
            "resourceVersion"]
        # a change after `version`, which dropping the watch history then forgets (a
        # watch from the newest version has nothing to miss and stays valid, as in etcd)
        up.kubectl("label", "pod", "web", "tier=mid", "--overwrite")
        watcher = subprocess.Popen(
            [str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "--raw",
             f"/api/v1/pods?watch=1&resourceVersion={version}&timeoutSeconds=60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)
        faults.write_text(json.dumps({"dropWatches": True}))
        dropped = json.loads(up.kubectl("create", "--raw", "/debug/kubelet-sim/faults",
                                        "-f", str(faults)))
        assert dropped["droppedWatches"] >= 1
        watcher.communicate(timeout=30)  # its stream ended (long before its 60 s)
        again = subprocess.run(
            [str(KUBECTL), "--kubeconfig", up.kubeconfig, "get", "--raw",
             f"/api/v1/pods?watch=1&resourceVersion={version}&timeoutSeconds=2"],
            capture_output=True, text=True, timeout=30, check=False)
        said = again.stdout + again.stderr
        assert "Expired" in said and "410" in said, said  # the client must relist

        faults.write_text(json.dumps({"writeDelaySeconds": 99}))
        bad = subprocess.run([str(KUBECTL), "--kubeconfig", up.kubeconfig, "create", "--raw",
                              "/debug/kubelet-sim/faults", "-f", str(faults)],
                             capture_output=True, text=True, timeout=30, check=False)
        assert bad.returncode != 0 and "within 0..60" in bad.stderr
