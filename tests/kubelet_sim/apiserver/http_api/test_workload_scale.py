"""The scale subresource of the built-in workload kinds (autoscaling/v1 Scale) over HTTPS:
kubectl scale's merge patch, the selector as text, and a protobuf GET and PUT as
client-go's scale client sends them."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.request
from typing import Any

import yaml

from kubelet_sim.apiserver.http.encoding import envelope

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl
PROTOBUF = "application/vnd.kubernetes.protobuf"


def request(served: Served, method: str, path: str, body: bytes | None = None,
            content_type: str = "") -> tuple[str, bytes]:
    config = yaml.safe_load(served.handle.kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    tls = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    headers = {"Authorization": "Bearer " + config["users"][0]["user"]["token"],
               "Accept": PROTOBUF, **({"Content-Type": content_type} if content_type else {})}
    sent = urllib.request.Request(cluster["server"] + path, data=body, method=method,
                                  headers=headers)
    with urllib.request.urlopen(sent, context=tls) as answer:
        return str(answer.headers["Content-Type"]), answer.read()


def test_kubectl_scale_patches_the_scale_of_a_deployment(served: Served) -> None:
    served.kubectl("create", "deployment", "web", "--image=nginx", "--replicas=2")
    served.kubectl("scale", "deployment", "web", "--replicas=5")
    assert served.kubectl_json("get", "deployment", "web")["spec"]["replicas"] == 5
    scale: dict[str, Any] = json.loads(served.kubectl(
        "get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale").stdout)
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 5}
    assert scale["status"] == {"replicas": 0, "selector": "app=web"}


def test_a_scale_is_read_and_replaced_in_protobuf(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                     "containers": [{"name": "c", "image": "i"}]}}}}))
    path = "/apis/apps/v1/namespaces/default/statefulsets/db/scale"
    kind, raw = request(served, "GET", path)
    assert kind == PROTOBUF
    scale = envelope.decode(raw)
    assert scale["kind"] == "Scale" and scale["spec"] == {"replicas": 1}
    scale["spec"]["replicas"] = 3
    kind, raw = request(served, "PUT", path, envelope.encode(scale), PROTOBUF)
    assert envelope.decode(raw)["spec"] == {"replicas": 3}
    assert served.kubectl_json("get", "statefulset", "db")["spec"]["replicas"] == 3
