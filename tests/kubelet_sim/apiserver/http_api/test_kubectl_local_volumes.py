"""The volumes the kubelet makes itself, on `python -m kubelet_sim up` driven by the real
kubectl (v1.35): a ConfigMap mounted in a pod is a file under the node's
``pods/<uid>/volumes/kubernetes.io~configmap`` that follows ``kubectl apply`` of a new
version; a missing ConfigMap keeps the pod ContainerCreating with the kubelet's
FailedMount event until it is created; a secret volume has its ``items`` and
``defaultMode``; a projected ServiceAccount token is a JWT for its audience, signed by the
key /openid/v1/jwks publishes and bound to the pod; deleting the pod removes its files."""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest

from tests.fixtures.up_process import Up, running_up, wait_for

from .conftest import needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def up() -> Iterator[Up]:
    with running_up() as running:
        yield running


def pods_dir(up: Up) -> Path:
    return up.state / "cluster" / "node-1" / "kubelet" / "pods"


def config_map(value: str, name: str = "settings") -> str:
    return f"""apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}}}
data: {{level: "{value}"}}
"""


def pod(name: str, volume: str, **spec: str) -> str:
    extra = "".join(f"  {key}: {value}\n" for key, value in spec.items())
    return f"""apiVersion: v1
kind: Pod
metadata: {{name: {name}}}
spec:
{extra}  containers:
  - name: c
    image: busybox
    volumeMounts: [{{name: vol, mountPath: /etc/vol}}]
  volumes:
  - name: vol
{volume}"""


def uid_of(up: Up, name: str) -> str:
    found: str = json.loads(up.kubectl("get", "pod", name, "-o", "json"))["metadata"]["uid"]
    return found


def running(up: Up, name: str) -> str:
    """Wait until the pod runs; its uid."""
    up.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=60s", timeout=90)
    return uid_of(up, name)


def read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def test_a_mounted_config_map_is_a_file_on_the_node_that_follows_its_updates(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=config_map("info"))
    up.kubectl("apply", "-f", "-", stdin=pod("reader", "    configMap: {name: settings}\n"))
    uid = running(up, "reader")

    volume = pods_dir(up) / uid / "volumes" / "kubernetes.io~configmap" / "vol"
    assert (volume / "level").read_text() == "info"
    assert (volume / "..data").is_symlink()

    up.kubectl("apply", "-f", "-", stdin=config_map("debug"))
    wait_for(lambda: read(volume / "level") == "debug", "the file to follow the ConfigMap",
             timeout=30)

    up.kubectl("delete", "pod", "reader", "--wait=true", timeout=90)
    assert not (pods_dir(up) / uid).exists()


def test_a_missing_config_map_keeps_the_pod_creating_until_it_exists(up: Up) -> None:
    up.kubectl("apply", "-f", "-", stdin=pod("waiter", "    configMap: {name: later}\n"))
    message = 'MountVolume.SetUp failed for volume "vol" : configmap "later" not found'

    def failed_mount() -> list[dict[str, Any]]:
        return [e for e in up.events("involvedObject.name=waiter")
                if e["reason"] == "FailedMount" and e["message"] == message]

    [event] = wait_for(failed_mount, "the FailedMount event")
    assert event["type"] == "Warning" and event["source"]["component"] == "kubelet"
    status = json.loads(up.kubectl("get", "pod", "waiter", "-o", "json"))["status"]
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}

    up.kubectl("apply", "-f", "-", stdin=config_map("now", name="later"))
    uid = running(up, "waiter")
    volume = pods_dir(up) / uid / "volumes" / "kubernetes.io~configmap" / "vol"
    assert (volume / "level").read_text() == "now"


def test_a_secret_volume_with_items_and_default_mode(up: Up) -> None:
    up.kubectl("create", "secret", "generic", "creds", "--from-literal=user=admin",
               "--from-literal=pass=s3cr3t")
    up.kubectl("apply", "-f", "-", stdin=pod("secretive", """    secret:
      secretName: creds
      defaultMode: 0400
      items: [{key: pass, path: db/password}, {key: user, path: user, mode: 0640}]
"""))
    uid = running(up, "secretive")

    volume = pods_dir(up) / uid / "volumes" / "kubernetes.io~secret" / "vol"
    assert sorted(p.name for p in volume.iterdir() if not p.name.startswith("..")) == \
        ["db", "user"]
    password = volume / "db" / "password"
    assert password.read_text() == "s3cr3t"
    assert stat.S_IMODE(password.stat().st_mode) == 0o400
    assert stat.S_IMODE((volume / "user").stat().st_mode) == 0o640


def test_a_projected_service_account_token_is_a_jwt_for_its_audience_bound_to_the_pod(
        up: Up) -> None:
    up.kubectl("create", "serviceaccount", "robot")
    up.kubectl("apply", "-f", "-", stdin=pod("tokened", """    projected:
      sources:
      - serviceAccountToken: {audience: vault, expirationSeconds: 3600, path: token}
      - downwardAPI:
          items: [{path: name, fieldRef: {fieldPath: metadata.name}}]
""", serviceAccountName="robot"))
    uid = running(up, "tokened")

    volume = pods_dir(up) / uid / "volumes" / "kubernetes.io~projected" / "vol"
    token = (volume / "token").read_text()
    keys = json.loads(up.kubectl("get", "--raw", "/openid/v1/jwks"))["keys"]
    kid = jwt.get_unverified_header(token)["kid"]
    claims = jwt.decode(token, jwt.PyJWK(next(k for k in keys if k["kid"] == kid)),
                        algorithms=["RS256"], audience="vault")
    assert claims["sub"] == "system:serviceaccount:default:robot"
    assert claims["kubernetes.io"]["pod"] == {"name": "tokened", "uid": uid}
    assert claims["exp"] - claims["iat"] == 3600
    assert (volume / "name").read_text() == "tokened"
