"""Secrets and ServiceAccount tokens end to end over the real driver processes: a
cluster running its loops (kubelet --sync-frequency 1 s) behind the HTTPS front, driven
with the real kubectl. The driver processes require ``token=<value>`` on every guarded
call, so a call that succeeds got the Secret's value; their JSON log lines show which
secret keys and which volume_context each call received.

- `kubectl create secret` + StorageClass parameters (fixed names for the controller
  calls, `${pvc.name}` / `${pvc.namespace}` templates for the node calls) drive the
  secrets CreateVolume, ControllerPublishVolume, NodeStageVolume and NodePublishVolume
  receive; a node-publish Secret created late holds the pod (a FailedMount event) until
  it exists.
- the CSIDriver's tokenRequests put the pod's token in NodePublishVolume's
  volume_context, and requiresRepublish has the kubelet call NodePublishVolume again
  within seconds."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jwt
import pytest

from kubelet_sim.apiserver.http import ApiServerHandle, start_api_server
from kubelet_sim.apiserver.token_request import ISSUER
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.kubelet.service_account_tokens import TOKENS_KEY
from tests.fixtures.up_process import KUBECTL, wait_for

pytestmark = pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl not installed")

VALUE = "the-value-the-driver-requires"
AUDIENCE = "e2e.example.com"
SECRET_PARAMETERS = {
    "csi.storage.k8s.io/provisioner-secret-name": "controller-creds",
    "csi.storage.k8s.io/provisioner-secret-namespace": "storage",
    "csi.storage.k8s.io/controller-publish-secret-name": "controller-creds",
    "csi.storage.k8s.io/controller-publish-secret-namespace": "storage",
    "csi.storage.k8s.io/node-stage-secret-name": "${pvc.name}-stage",
    "csi.storage.k8s.io/node-stage-secret-namespace": "${pvc.namespace}",
    "csi.storage.k8s.io/node-publish-secret-name": "${pvc.name}-publish",
    "csi.storage.k8s.io/node-publish-secret-namespace": "${pvc.namespace}",
}


@dataclass
class Live:
    cluster: Cluster
    handle: ApiServerHandle

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        done = subprocess.run([str(KUBECTL), "--kubeconfig", str(self.handle.kubeconfig),
                               *args], input=stdin, capture_output=True, text=True,
                              timeout=30, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def apply(self, doc: dict[str, Any]) -> None:
        self.kubectl("apply", "-f", "-", stdin=json.dumps(doc))

    def calls(self, method: str) -> list[dict[str, Any]]:
        """The driver processes' log lines of ``method`` (every process's log)."""
        lines = []
        for log in sorted((self.cluster.work_dir / "logs").glob("csi-*.log")):
            for line in log.read_text().splitlines():
                if line.startswith("{") and f'/{method}"' in line:
                    lines.append(json.loads(line))
        return lines

    def pod_phase(self, name: str) -> str:
        phase: str = json.loads(self.kubectl("get", "pod", name, "-o", "json"))["status"] \
            .get("phase", "")
        return phase


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """The cluster's loops in a thread of their own, as `up` runs them."""
    config = ClusterConfig(nodes=default_nodes(1), driver_args=["--secret", f"token={VALUE}"],
                           kubelet_sync_frequency=1.0)
    cluster = Cluster(config)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    started = threading.Event()

    async def main() -> None:
        try:
            await cluster.start()
        finally:
            started.set()
        await cluster.run(stop)

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    started.wait(60)
    handle = start_api_server(cluster.api, tmp_path_factory.mktemp("live") / "state")
    try:
        live = Live(cluster, handle)
        live.kubectl("create", "namespace", "storage")
        live.kubectl("create", "secret", "generic", "controller-creds", "-n", "storage",
                     f"--from-literal=token={VALUE}")
        live.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                    "metadata": {"name": "secured"}, "provisioner": cluster.driver_name,
                    "parameters": SECRET_PARAMETERS})
        yield live
    finally:
        handle.stop()
        loop.call_soon_threadsafe(stop.set)
        thread.join(60)
        loop.run_until_complete(cluster.stop())
        loop.close()


def claim_and_pod(live: Live, name: str) -> None:
    live.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "secured",
                         "resources": {"requests": {"storage": "1Mi"}}}})
    live.apply({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "busybox"}],
                         "volumes": [{"name": "data",
                                      "persistentVolumeClaim": {"claimName": name}}]}})


def ok_with_token_secret(lines: list[dict[str, Any]]) -> bool:
    return bool(lines) and all(line["code"] == "OK" for line in lines) and all(
        line["request"].get("secrets") == {"token": "***stripped***"} for line in lines)


def test_kubectl_secrets_and_storage_class_parameters_drive_every_secret_the_driver_gets(
        live: Live) -> None:
    live.kubectl("create", "secret", "generic", "data-stage", f"--from-literal=token={VALUE}")
    claim_and_pod(live, "data")

    def held_for_the_publish_secret() -> bool:
        events = live.kubectl("get", "events", "--field-selector",
                              "involvedObject.name=data,reason=FailedMount", "-o", "json")
        return any("fetching NodePublishSecretRef default/data-publish failed"
                   in e["message"] for e in json.loads(events)["items"])

    wait_for(held_for_the_publish_secret, "a FailedMount event naming the missing Secret")
    assert live.pod_phase("data") == "Pending"
    assert ok_with_token_secret(live.calls("NodeStageVolume"))  # staged with its own Secret

    live.kubectl("create", "secret", "generic", "data-publish", f"--from-literal=token={VALUE}")
    wait_for(lambda: live.pod_phase("data") == "Running", "the pod running", timeout=90)

    for method in ("CreateVolume", "ControllerPublishVolume", "NodeStageVolume",
                   "NodePublishVolume"):
        assert ok_with_token_secret(live.calls(method)), live.calls(method)


def test_token_requests_reach_node_publish_and_requires_republish_publishes_again(
        live: Live) -> None:
    live.kubectl("patch", "csidriver", live.cluster.driver_name, "--type", "merge", "-p",
                 json.dumps({"spec": {"requiresRepublish": True, "tokenRequests": [
                     {"audience": AUDIENCE, "expirationSeconds": 600}]}}))
    for name in ("tokens-stage", "tokens-publish"):
        live.kubectl("create", "secret", "generic", name, f"--from-literal=token={VALUE}")
    claim_and_pod(live, "tokens")
    wait_for(lambda: live.pod_phase("tokens") == "Running", "the pod running", timeout=90)
    pod_uid = json.loads(live.kubectl("get", "pod", "tokens", "-o", "json"))["metadata"]["uid"]

    def publishes() -> list[dict[str, Any]]:
        return [line for line in live.calls("NodePublishVolume")
                if pod_uid in line["request"]["target_path"]]

    wait_for(lambda: len(publishes()) >= 2, "NodePublishVolume again (requiresRepublish)",
             timeout=30)
    jwks = json.loads(live.kubectl("get", "--raw", "/openid/v1/jwks"))["keys"][0]
    for line in publishes()[:2]:
        assert line["code"] == "OK"
        tokens = json.loads(line["request"]["volume_context"][TOKENS_KEY])
        assert list(tokens) == [AUDIENCE]
        claims = jwt.decode(tokens[AUDIENCE]["token"], jwt.PyJWK(jwks), algorithms=["RS256"],
                            audience=AUDIENCE)
        assert claims["iss"] == ISSUER
        assert claims["sub"] == "system:serviceaccount:default:default"
        assert claims["kubernetes.io"]["pod"] == {"name": "tokens", "uid": pod_uid}
        assert claims["exp"] - claims["iat"] == 600
