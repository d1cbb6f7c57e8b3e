"""Objects the quota tests build: quotas with the status their controller writes, pods
with resources, claims, Services."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import JSON
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import ServedKind
from kubelet_sim.controllers.resource_quota import ResourceQuotaController


def quota(name: str, hard: dict[str, str], **spec: Any) -> JSON:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": hard, **spec}}


def computed(api: APIServer, body: JSON) -> None:
    """Create the quota and write the status the resource quota controller computes."""
    created = api.create(body)
    custom = [ServedKind(k.store_kind, f"{k.group}/{k.storage_version.name}", k.plural, True,
                         frozenset()) for k in api.custom.kinds()
              if k.namespaced and not k.adopts_builtin]
    created.status = ResourceQuotaController(api).computed_status(created, custom)
    api.update_status(created)


def pod(name: str, requests: dict[str, str] | None = None,
        limits: dict[str, str] | None = None, **spec: Any) -> JSON:
    resources: JSON = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    container: JSON = {"name": "main", "image": "nginx"}
    if resources:
        container["resources"] = resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [container], **spec}}


def claim(name: str, storage: str, storage_class: str | None = None) -> JSON:
    spec: JSON = {"accessModes": ["ReadWriteOnce"],
                  "resources": {"requests": {"storage": storage}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": spec}


def used(api: APIServer, name: str) -> dict[str, str]:
    return dict(api.get("ResourceQuota", name).status.get("used") or {})
