"""A small OpenAPI v3 for kubectl: the paths of every kind with their verbs, and one schema
per kind, built from the fields :mod:`kubelet_sim.api.schema` lists (the same list
``fieldValidation`` checks against).

kubectl reads it to learn that PATCH takes ``fieldValidation`` (then it leaves validation
to the server instead of downloading schemas to validate itself) and ``kubectl explain``
reads the schemas. The discovery document ``/openapi/v3`` points at one document per
group/version.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kubelet_sim.api.schema import Arr, Leaf, Map, Node, Obj, kind_schema
from kubelet_sim.apiserver.crd.openapi import custom_schema, custom_schema_name
from kubelet_sim.apiserver.http.custom import custom_parts
from kubelet_sim.apiserver.http.resources import ApiResource, group_versions

_GROUP_PACKAGES = {"": "io.k8s.api.core", "storage.k8s.io": "io.k8s.api.storage",
                   "networking.k8s.io": "io.k8s.api.networking",
                   "snapshot.storage.k8s.io": "io.k8s.external-snapshotter.snapshot",
                   "coordination.k8s.io": "io.k8s.api.coordination"}
_QUERY = ("dryRun", "fieldManager", "fieldValidation", "pretty")


def schema_name(r: ApiResource) -> str:
    custom = custom_parts(r)
    if custom is not None:
        return custom_schema_name(*custom)
    return f"{_GROUP_PACKAGES.get(r.group, r.group)}.{r.version}.{r.kind}"


def _gvk(r: ApiResource) -> dict[str, str]:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _operation(r: ApiResource, verb: str, action: str) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{schema_name(r)}"}
    op: dict[str, Any] = {
        "operationId": f"{verb}{r.kind}", "description": f"{verb} the specified {r.kind}",
        "x-kubernetes-action": action, "x-kubernetes-group-version-kind": _gvk(r),
        "parameters": [{"name": q, "in": "query", "schema": {"type": "string"}}
                       for q in _QUERY],
        "responses": {"200": {"description": "OK",
                              "content": {"application/json": {"schema": ref}}}},
    }
    if verb in ("create", "replace", "patch"):
        # Strategic merge patch is accepted but not listed: kubectl then computes its
        # patches from its own compiled types (built-in kinds) or sends a merge patch,
        # instead of looking for merge keys in these schemas, which do not describe them.
        types = (["application/json-patch+json", "application/merge-patch+json"]
                 if verb == "patch" else ["application/json"])
        op["requestBody"] = {"content": {t: {"schema": ref} for t in types}, "required": True}
    return op


def _paths(r: ApiResource) -> dict[str, Any]:
    prefix = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced else \
        f"{prefix}/{r.plural}"
    paths = {
        base: {"get": _operation(r, "list", "list"), "post": _operation(r, "create", "post")},
        f"{base}/{{name}}": {"get": _operation(r, "read", "get"),
                             "put": _operation(r, "replace", "put"),
                             "patch": _operation(r, "patch", "patch"),
                             "delete": _operation(r, "delete", "delete")},
    }
    if r.has_scale:
        paths[f"{base}/{{name}}/scale"] = {"get": _operation(r, "read", "get"),
                                          "put": _operation(r, "replace", "put"),
                                          "patch": _operation(r, "patch", "patch")}
    if r.has_status:
        paths[f"{base}/{{name}}/status"] = {"get": _operation(r, "read", "get"),
                                           "put": _operation(r, "replace", "put"),
                                           "patch": _operation(r, "patch", "patch")}
    return paths


_DESCRIPTIONS = {
    "apiVersion": "APIVersion defines the versioned schema of this representation of an "
                  "object.",
    "kind": "Kind is a string value representing the REST resource this object represents.",
    "metadata": "Standard object's metadata.",
}


def _openapi(node: Node) -> dict[str, Any]:
    """The OpenAPI v3 schema of one :mod:`kubelet_sim.api.schema` node."""
    if isinstance(node, Leaf):
        return {"type": node.type}
    if isinstance(node, Map):
        return {"type": "object", "additionalProperties": _openapi(node.values)}
    if isinstance(node, Arr):
        return {"type": "array", "items": _openapi(node.items)}
    if isinstance(node, Obj):
        return {"type": "object",
                "properties": {k: _openapi(v) for k, v in node.fields.items()}}
    return {"x-kubernetes-preserve-unknown-fields": True}  # fields not enumerated


def _schema(r: ApiResource) -> dict[str, Any]:
    custom = custom_parts(r)
    if custom is not None:  # a CustomResourceDefinition's own schema
        return custom_schema(*custom)
    described = kind_schema(r.kind)
    fields = _openapi(described)["properties"] if described else {}
    descriptions = {**_DESCRIPTIONS, "spec": f"The desired state of the {r.kind}.",
                    "status": f"The observed state of the {r.kind}."}
    for name, text in descriptions.items():
        if name in fields:
            fields[name]["description"] = text
    return {"type": "object", "description": f"{r.kind} ({r.group_version}), as served by the "
            "cni-csi-mini simulated cluster.", "properties": fields,
            "x-kubernetes-group-version-kind": [_gvk(r)]}


def document(group_version: str,
             served: dict[str, list[ApiResource]] | None = None) -> dict[str, Any] | None:
    resources = (served if served is not None else group_versions()).get(group_version)
    if resources is None:
        return None
    resources = [r for r in resources if "patch" in r.verbs]  # read-only ones: no schema
    paths: dict[str, Any] = {}
    for r in resources:
        paths.update(_paths(r))
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "paths": paths,
            "components": {"schemas": {schema_name(r): _schema(r) for r in resources}}}


def index(served: dict[str, list[ApiResource]] | None = None) -> dict[str, Any]:
    paths = {}
    served = served if served is not None else group_versions()
    for gv in served:
        key = f"apis/{gv}" if "/" in gv else f"api/{gv}"
        digest = hashlib.sha256(json.dumps(document(gv, served),
                                           sort_keys=True).encode()).hexdigest()
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest[:32].upper()}"}
    return {"paths": paths}
