"""Issue 25, "Done means" 2: an API server, a controller-manager, a scheduler and the CSI
sidecars, each its own process, and a `kubelet` process started alone with the
kubeconfig; a pod with a PVC goes Running through our CSI driver and CNI plugins, and
killing (-9) and restarting each process in turn loses nothing: the informers relist,
and the pod stays Running with the same IP and the same volume."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubelet_sim.cluster import default_nodes
from kubelet_sim.up import UpOptions
from kubelet_sim.up_processes import Supervisor, control_plane_argv, kubelet_argv
from tests.fixtures.apiserver_process import ApiServerProcess, running_apiserver
from tests.fixtures.component_process import ComponentProcess
from tests.fixtures.up_process import KUBECTL

NODE = default_nodes(1)[0]
# short Leases, so a component started again after a kill -9 leads within seconds
LEADER = {"leader-elect": ["--leader-elect-lease-duration", "4s",
                           "--leader-elect-renew-deadline", "3s",
                           "--leader-elect-retry-period", "1s"],
          "leader-election": ["--leader-election-lease-duration", "4s",
                              "--leader-election-renew-deadline", "3s",
                              "--leader-election-retry-period", "1s"]}
READY = {"controller-manager": "successfully acquired lease kube-system/kube-controller-manager",
         "scheduler": "successfully acquired lease kube-system/kube-scheduler",
         "sidecars": "successfully acquired lease default/external-attacher-leader-"}
MANIFESTS = """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: mini}
provisioner: csi-mini.example.com
volumeBindingMode: Immediate
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: mini
  resources: {requests: {storage: 1Gi}}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: default}
spec:
  containers:
    - name: db
      image: registry.k8s.io/pause:3.9
      volumeMounts: [{name: data, mountPath: /data}]
  volumes:
    - name: data
      persistentVolumeClaim: {claimName: data}
"""


class Processes:
    """The components, each started (and started again) the same way."""

    def __init__(self, server: ApiServerProcess, work: Path, controller: str,
                 node_endpoint: str) -> None:
        self.server, self.work = server, work
        argv = control_plane_argv(server.kubeconfig, UpOptions(), controller)
        argv["controller-manager"] += LEADER["leader-elect"]
        argv["scheduler"] += LEADER["leader-elect"]
        argv["sidecars"] += LEADER["leader-election"]
        argv["kubelet"] = kubelet_argv(server.kubeconfig, NODE,
                                       work / NODE.name / "kubelet", node_endpoint, UpOptions())
        self.argv = argv
        self.running: dict[str, ComponentProcess] = {}

    def start(self, name: str) -> ComponentProcess:
        proc = ComponentProcess(self.argv[name], self.work / "logs" / f"{name}.log")
        self.running[name] = proc
        if name in READY:
            proc.wait_for(READY[name], timeout=60)
        else:
            wait_node_ready(self.server, proc)
        return proc

    def stop(self) -> None:
        for proc in self.running.values():
            proc.stop(timeout=30)


def kubectl(server: ApiServerProcess, *args: str, stdin: str | None = None) -> str:
    return subprocess.run([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), *args],
                          input=stdin, capture_output=True, text=True, check=True,
                          timeout=60).stdout


def get(server: ApiServerProcess, kind: str, name: str, namespace: str = "default") -> Any:
    return json.loads(kubectl(server, "get", kind, name, "-n", namespace, "-o", "json"))


def wait_node_ready(server: ApiServerProcess, kubelet: ComponentProcess,
                    timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert kubelet.proc.poll() is None, f"the kubelet ended: {kubelet.log_tail()}"
        out = subprocess.run([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), "get",
                              "node", NODE.name, "-o", "json"], capture_output=True,
                             text=True, timeout=60)
        if out.returncode == 0:
            conditions = json.loads(out.stdout)["status"].get("conditions", [])
            if any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
                return
        time.sleep(0.5)
    raise AssertionError(f"{NODE.name} not Ready within {timeout}s: {kubelet.log_tail()}")


def running_pod(server: ApiServerProcess, name: str = "db", timeout: float = 90
                ) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    pod: dict[str, Any] = {}
    while time.monotonic() < deadline:
        pod = get(server, "pod", name)
        if pod["status"].get("phase") == "Running" and pod["status"].get("podIP"):
            return pod
        time.sleep(0.5)
    raise AssertionError(f"pod {name} not Running within {timeout}s: {pod.get('status')}")


def volume_state(server: ApiServerProcess) -> tuple[str, bool]:
    """The claim's volume, and whether its VolumeAttachment to the node is attached."""
    volume = get(server, "pvc", "data")["spec"]["volumeName"]
    attachments = json.loads(kubectl(server, "get", "volumeattachments", "-o", "json"))
    attached = any(va["spec"]["source"].get("persistentVolumeName") == volume
                   and va["spec"]["nodeName"] == NODE.name
                   and va.get("status", {}).get("attached") for va in attachments["items"])
    return volume, attached


@pytest.fixture
def work() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ksim-e2e-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_pod_with_a_volume_survives_a_kill_9_and_restart_of_every_component(
        work: Path) -> None:
    with running_apiserver() as server:
        plugins = Supervisor(UpOptions(nodes=1), work)
        processes: Processes | None = None
        try:
            controller, nodes = await plugins.start_plugins()
            kubectl(server, "create", "-f", "-", stdin=json.dumps({
                "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
                "metadata": {"name": "csi-mini.example.com"},
                "spec": {"attachRequired": True, "podInfoOnMount": True,
                         "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}))
            processes = Processes(server, work / "cluster", controller, nodes[NODE.name])
            for name in ("controller-manager", "scheduler", "sidecars", "kubelet"):
                processes.start(name)
            kubectl(server, "apply", "-f", "-", stdin=MANIFESTS)
            pod = running_pod(server)
            volume, attached = volume_state(server)
            assert attached

            for name in ("controller-manager", "scheduler", "sidecars", "kubelet", "apiserver"):
                if name == "apiserver":
                    server.kill9()
                    server.start()
                else:
                    processes.running[name].kill9()
                    processes.start(name)
                again = running_pod(server)
                assert again["metadata"]["uid"] == pod["metadata"]["uid"], name
                assert again["status"]["podIP"] == pod["status"]["podIP"], name
                assert again["status"]["containerStatuses"][0]["restartCount"] == 0, name
                assert volume_state(server) == (volume, True), name

            # a leader that could not renew while the API server was down ended (status
            # 1, as kube-controller-manager does): started again, as its supervisor would
            for name in ("controller-manager", "scheduler", "sidecars"):
                if processes.running[name].proc.poll() is not None:
                    assert processes.running[name].wait() == 1, name
                    processes.start(name)
            # and the cluster still works: a new pod is scheduled and started
            kubectl(server, "run", "after", "--image", "registry.k8s.io/pause:3.9")
            running_pod(server, "after")
        finally:
            if processes is not None:
                processes.stop()
            plugins.stop_all()
