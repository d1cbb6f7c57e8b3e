"""The defaults kube-apiserver fills into a pod's volume sources on create."""

from __future__ import annotations

from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer


def test_pod_volume_sources_get_kube_apiservers_defaults() -> None:
    api = APIServer()
    stored = api.create(builders.pod("web", volumes=[
        {"name": "bare"},
        {"name": "cm", "configMap": {"name": "settings"}},
        {"name": "sec", "secret": {"secretName": "creds", "defaultMode": 0o400}},
        {"name": "info", "downwardAPI": {"items": [
            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "host", "hostPath": {"path": "/var/log"}},
        {"name": "all", "projected": {"sources": [
            {"serviceAccountToken": {"path": "token"}},
            {"downwardAPI": {"items": [{"path": "ns",
                                        "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ]}},
    ]))

    volumes = {v["name"]: v for v in stored.spec["volumes"]}
    assert volumes["bare"] == {"name": "bare", "emptyDir": {}}
    assert volumes["cm"]["configMap"]["defaultMode"] == 420
    assert volumes["sec"]["secret"]["defaultMode"] == 0o400  # given: kept
    assert volumes["info"]["downwardAPI"]["defaultMode"] == 420
    assert volumes["info"]["downwardAPI"]["items"][0]["fieldRef"] == {
        "apiVersion": "v1", "fieldPath": "metadata.name"}
    assert volumes["host"]["hostPath"] == {"path": "/var/log", "type": ""}
    projected = volumes["all"]["projected"]
    assert projected["defaultMode"] == 420
    assert projected["sources"][0]["serviceAccountToken"] == {"path": "token",
                                                              "expirationSeconds": 3600}
    assert projected["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
