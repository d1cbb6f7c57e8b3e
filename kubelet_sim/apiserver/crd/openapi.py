"""The OpenAPI v3 schema of a custom kind's version, as kube-apiserver publishes it in
``/openapi/v3/apis/<group>/<version>``: the definition's ``openAPIV3Schema`` with
``apiVersion``, ``kind`` and ``metadata`` filled in and the kind's
``x-kubernetes-group-version-kind``."""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.apiserver.crd.definition import CustomKind, CustomVersion

_META: dict[str, dict[str, Any]] = {
    "apiVersion": {"type": "string", "description": "APIVersion defines the versioned "
                   "schema of this representation of an object."},
    "kind": {"type": "string", "description": "Kind is a string value representing the "
             "REST resource this object represents."},
    "metadata": {"type": "object", "description": "Standard object's metadata."},
}


def custom_schema(served: CustomKind, version: CustomVersion) -> dict[str, Any]:
    doc = copy.deepcopy(version.schema) or {"type": "object"}
    properties = doc.setdefault("properties", {})
    for name, meta in _META.items():
        properties[name] = {**meta, **{k: v for k, v in (properties.get(name) or {}).items()
                                       if k == "description"}}
    doc["x-kubernetes-group-version-kind"] = [
        {"group": served.group, "version": version.name, "kind": served.kind}]
    return doc


def custom_schema_name(served: CustomKind, version: CustomVersion) -> str:
    """The component name: the group's domain reversed, the version, the kind
    (``com.example.v1.Widget``)."""
    return ".".join([*reversed(served.group.split(".")), version.name, served.kind])
