"""The OpenAPI schema of a custom kind's version, as kube-apiserver publishes it in
``/openapi/v3/apis/<group>/<version>`` and ``/openapi/v2``: the definition's
``openAPIV3Schema`` with ``apiVersion`` and ``kind`` described and the kind's
``x-kubernetes-group-version-kind`` (the HTTP layer puts the ObjectMeta reference in
``metadata``), and for v2 what Swagger 2.0 can say of it."""

from __future__ import annotations

import copy
from typing import Any

from kubelet_sim.apiserver.crd.definition import CustomKind, CustomVersion

_TYPE_META: dict[str, dict[str, Any]] = {
    "apiVersion": {"type": "string", "description": "APIVersion defines the versioned "
                   "schema of this representation of an object."},
    "kind": {"type": "string", "description": "Kind is a string value representing the "
             "REST resource this object represents."},
}


def custom_schema(served: CustomKind, version: CustomVersion) -> dict[str, Any]:
    """A copy of the version's schema with ``apiVersion``, ``kind`` and a placeholder
    ``metadata`` described, and the kind's group/version/kind."""
    doc = copy.deepcopy(version.schema) or {"type": "object"}
    properties = doc.setdefault("properties", {})
    for name, meta in _TYPE_META.items():
        given = properties.get(name) or {}
        properties[name] = {**meta, **{k: v for k, v in given.items() if k == "description"}}
    properties["metadata"] = {"type": "object"}
    doc["x-kubernetes-group-version-kind"] = [
        {"group": served.group, "version": version.name, "kind": served.kind}]
    return doc


_V3_ONLY = ("allOf", "anyOf", "oneOf", "not")


def v2_compatible(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` as apiextensions publishes it in Swagger 2.0: no ``allOf``, ``anyOf``,
    ``oneOf``, ``not``; a nullable value untyped with nothing under it (and not required
    by its parent); a value keeping unknown fields without properties or items; an array
    without an item schema untyped."""
    out = {k: v for k, v in schema.items() if k not in _V3_ONLY and k != "nullable"}
    if schema.get("nullable") is True or schema.get("x-kubernetes-preserve-unknown-fields"):
        if schema.get("nullable") is True:
            out.pop("type", None)
        out.pop("items", None)
        out.pop("properties", None)
    if isinstance(out.get("properties"), dict):
        properties = schema["properties"]
        out["properties"] = {name: v2_compatible(s) for name, s in properties.items()}
        nullable = {name for name, s in properties.items()
                    if isinstance(s, dict) and s.get("nullable") is True}
        if "required" in out and nullable:
            out["required"] = [name for name in out["required"] if name not in nullable]
            if not out["required"]:
                del out["required"]
    if isinstance(out.get("items"), dict):
        out["items"] = v2_compatible(out["items"])
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = v2_compatible(out["additionalProperties"])
    if out.get("type") == "array" and "items" not in out:
        out.pop("type")
    return out
