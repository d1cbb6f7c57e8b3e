"""The defaults kube-apiserver fills into a pod's volume sources (k8s.io/kubernetes'
``SetDefaults_*`` for core/v1): ``defaultMode`` 420 (0644) on configMap, secret,
downwardAPI and projected volumes, ``expirationSeconds`` 3600 on a projected
serviceAccountToken, ``apiVersion: v1`` on a fieldRef, ``type: ""`` on a hostPath, and
an ``emptyDir: {}`` for a volume that names no source."""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import JSON

DEFAULT_MODE = 0o644  # 420
DEFAULT_TOKEN_SECONDS = 3600


def default_volumes(volumes: list[Any]) -> None:
    for volume in volumes:
        if not isinstance(volume, dict):
            continue
        if set(volume) <= {"name"}:
            volume["emptyDir"] = {}
        for key in ("configMap", "secret", "downwardAPI", "projected"):
            source = volume.get(key)
            if isinstance(source, dict):
                source.setdefault("defaultMode", DEFAULT_MODE)
        downward = volume.get("downwardAPI")
        if isinstance(downward, dict):
            _field_refs(downward.get("items"))
        host_path = volume.get("hostPath")
        if isinstance(host_path, dict):
            host_path.setdefault("type", "")
        projected = volume.get("projected")
        if isinstance(projected, dict):
            for source in projected.get("sources") or []:
                _projection(source)


def _projection(source: Any) -> None:
    if not isinstance(source, dict):
        return
    token = source.get("serviceAccountToken")
    if isinstance(token, dict):
        token.setdefault("expirationSeconds", DEFAULT_TOKEN_SECONDS)
    downward = source.get("downwardAPI")
    if isinstance(downward, dict):
        _field_refs(downward.get("items"))


def _field_refs(items: Any) -> None:
    for item in items or []:
        ref: JSON | None = item.get("fieldRef") if isinstance(item, dict) else None
        if isinstance(ref, dict):
            ref.setdefault("apiVersion", "v1")
