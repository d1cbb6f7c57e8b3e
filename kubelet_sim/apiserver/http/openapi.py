"""The OpenAPI documents kube-apiserver publishes, for the kinds served here.

- ``/openapi/v3``: the index, one ``serverRelativeURL`` per group/version with the hash
  of its document (``?hash=``); ``/openapi/v3/api/v1``, ``/openapi/v3/apis/<group>/<v>``:
  OpenAPI 3.0 documents, each with that group/version's paths and every schema they reach.
- ``/openapi/v2``: one Swagger 2.0 document with every path and definition, in JSON or
  (as client-go asks for it) in protobuf (:mod:`.openapi_v2_protobuf`).

Built-in kinds take their schemas from the type table
(:mod:`kubelet_sim.apiserver.http.openapi_definitions`). The kinds of
CustomResourceDefinitions take their definition's structural schema (in v2 made
v2-compatible as apiextensions does: no nullable, anyOf, oneOf, allOf, not), with
``metadata`` the ObjectMeta reference; the kinds that are custom resources in a real
cluster but served here without their CRD (the snapshot kinds until their definitions are
applied) take theirs from :mod:`kubelet_sim.api.schema`. Both are named as kube-apiserver
names a CRD's (``io.k8s.storage.snapshot.v1.VolumeSnapshot``), list kind included, and
their PATCH takes no strategic merge patch.

kubectl reads the PATCH operations' parameters to learn that the server validates fields
(``fieldValidation``: kubectl then sends ``fieldValidation=Strict`` and leaves validation
to the server), the patch extensions to compute strategic merge patches, and the schemas
for ``kubectl explain``. Documents are built once per set of served resources (the
definitions' schemas part of it, so a created, changed or deleted CRD shows at once) and
kept as bytes with their hash.
"""

from __future__ import annotations

import dataclasses
import email.utils
import hashlib
import json
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kubelet_sim.api import kube_types
from kubelet_sim.api.schema import Arr, Leaf, Map, Node, Obj, kind_schema
from kubelet_sim.apiserver.crd.openapi import custom_schema, v2_compatible
from kubelet_sim.apiserver.http import openapi_definitions as defs
from kubelet_sim.apiserver.http import openapi_v2_protobuf as v2_protobuf
from kubelet_sim.apiserver.http.custom import custom_parts
from kubelet_sim.apiserver.http.resources import ApiResource, group_versions

JSON, YAML, PROTOBUF = "application/json", "application/yaml", "application/vnd.kubernetes.protobuf"
PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
               "application/merge-patch+json", "application/strategic-merge-patch+json")

_QUERY: dict[str, tuple[str, str]] = {  # name -> (type, description of our own)
    "pretty": ("string", "Pretty-print the answer."),
    "dryRun": ("string", "All: validate and answer without storing."),
    "fieldManager": ("string", "The name of the actor making the change."),
    "fieldValidation": ("string", "What to do with unknown or duplicated fields: Ignore, "
                                  "Warn (the default) or Strict."),
    "force": ("boolean", "Server-side apply: take the fields other managers own."),
    "gracePeriodSeconds": ("integer", "Seconds before the object is deleted."),
    "orphanDependents": ("boolean", "Deprecated: use propagationPolicy."),
    "propagationPolicy": ("string", "Orphan, Background or Foreground."),
    "allowWatchBookmarks": ("boolean", "Send BOOKMARK events during a watch."),
    "continue": ("string", "The token of the next page of a list."),
    "fieldSelector": ("string", "Only objects whose fields match."),
    "labelSelector": ("string", "Only objects whose labels match."),
    "limit": ("integer", "At most this many objects per page."),
    "resourceVersion": ("string", "The resourceVersion to read from or watch from."),
    "resourceVersionMatch": ("string", "How resourceVersion applies to a list."),
    "sendInitialEvents": ("boolean", "A watch first sends the current objects."),
    "timeoutSeconds": ("integer", "End the list or watch after this long."),
    "watch": ("boolean", "Watch for changes instead of listing."),
}
_LIST_QUERY = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
               "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
               "timeoutSeconds", "watch")
_WRITE_QUERY = ("dryRun", "fieldManager", "fieldValidation")


# -- schemas ---------------------------------------------------------------------------------

def type_key(r: ApiResource) -> str | None:
    """The type table's key of a served built-in kind; None for a custom one."""
    if custom_parts(r) is not None:
        return None
    return kube_types.kind_type(r.group_version, r.kind)


def list_kind(r: ApiResource) -> str:
    """The kind of ``r``'s lists: a definition's ``listKind``, else ``<Kind>List``."""
    parts = custom_parts(r)
    return parts[0].list_kind if parts is not None else f"{r.kind}List"


SCALE = "k8s.io/api/autoscaling/v1.Scale"
_SCALE_GVK = {"group": "autoscaling", "kind": "Scale", "version": "v1"}
TOKEN_REQUEST = "k8s.io/api/authentication/v1.TokenRequest"  # serviceaccounts/<name>/token
_TOKEN_GVK = {"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}
# kube-apiserver's names of the kinds served from outside k8s.io/api
_PACKAGES = {"apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions"}


def _gvk(r: ApiResource, kind: str | None = None) -> dict[str, str]:
    return {"group": r.group, "kind": kind or r.kind, "version": r.version}


def custom_name(r: ApiResource, kind: str | None = None) -> str:
    """A custom resource's definition name: the group reversed, the version, the kind."""
    package = _PACKAGES.get(r.group) if custom_parts(r) is None else None
    if package is not None:
        return f"{package}.{r.version}.{kind or r.kind}"
    return ".".join([*reversed(r.group.split(".")), r.version, kind or r.kind])


def _node(node: Node) -> dict[str, Any]:
    if isinstance(node, Leaf):
        return {"type": node.type}
    if isinstance(node, Map):
        return {"type": "object", "additionalProperties": _node(node.values)}
    if isinstance(node, Arr):
        return {"type": "array", "items": _node(node.items)}
    if isinstance(node, Obj):
        return {"type": "object", "properties": {k: _node(v) for k, v in node.fields.items()}}
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _kind_definition(r: ApiResource, v3: bool) -> dict[str, Any]:
    parts = custom_parts(r)
    if parts is not None:  # a CustomResourceDefinition's structural schema
        kind = custom_schema(*parts)
        if not v3:  # apiVersion and kind stay even where unknown fields drop properties
            typed = {k: kind["properties"][k] for k in ("apiVersion", "kind")}
            kind = v2_compatible(kind)
            kind.setdefault("properties", {}).update(typed)
        meta = defs.type_schema(f"{defs.META}.ObjectMeta", v3)
        kind.setdefault("properties", {})["metadata"] = meta
        return kind
    described = kind_schema(r.kind)
    properties = _node(described)["properties"] if described else {}
    properties["metadata"] = defs.type_schema(f"{defs.META}.ObjectMeta", v3)
    return {"type": "object", "properties": properties,
            "x-kubernetes-group-version-kind": [_gvk(r)]}


def custom_definitions(r: ApiResource, v3: bool) -> dict[str, Any]:
    """The kind and list-kind definitions of a kind served as a custom resource."""
    listed = {"type": "object", "required": ["items"], "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"},
        "items": {"type": "array", "items": {"$ref": _ref(custom_name(r), v3)}},
        "metadata": defs.type_schema(f"{defs.META}.ListMeta", v3)},
        "x-kubernetes-group-version-kind": [_gvk(r, list_kind(r))]}
    return {custom_name(r): _kind_definition(r, v3), custom_name(r, list_kind(r)): listed}


def _ref(name: str, v3: bool) -> str:
    return ("#/components/schemas/" if v3 else "#/definitions/") + name


def built_in_definitions(resources: list[ApiResource], v3: bool) -> dict[str, Any]:
    """Every definition the built-in kinds among ``resources`` reach, with the meta types
    their operations name."""
    if not resources:
        return {}
    kinds: dict[str, list[dict[str, str]]] = {}
    roots: list[str] = []
    for r in resources:
        key = type_key(r)
        if key is None:
            continue
        roots.append(key)
        kinds.setdefault(key, []).append(_gvk(r))
        list_key = kube_types.kind_type(r.group_version, f"{r.kind}List")
        if list_key is not None:  # a request kind (a binding, a review) has no list
            roots.append(list_key)
            kinds.setdefault(list_key, []).append(_gvk(r, f"{r.kind}List"))
    meta_gvks = [{"group": g, "kind": "", "version": v} for g, v in sorted(
        {(r.group, r.version) for r in resources} | {("", "v1")})]
    for meta in (defs.DELETE_OPTIONS, defs.STATUS, defs.WATCH_EVENT):
        kinds[meta] = [{**g, "kind": meta.rpartition(".")[2]} for g in meta_gvks]
    roots += [defs.DELETE_OPTIONS, defs.STATUS, defs.WATCH_EVENT, defs.PATCH,
              f"{defs.META}.ObjectMeta", f"{defs.META}.ListMeta"]
    if any(r.has_scale for r in resources):
        roots.append(SCALE)
        kinds[SCALE] = [_SCALE_GVK]
    if any(r.kind == "ServiceAccount" and type_key(r) for r in resources):
        roots.append(TOKEN_REQUEST)
        kinds[TOKEN_REQUEST] = [_TOKEN_GVK]
    return defs.definitions(roots, v3, kinds)


def schemas(resources: list[ApiResource], v3: bool) -> dict[str, Any]:
    """Every definition a document listing ``resources`` holds."""
    out = built_in_definitions(resources, v3)
    for r in resources:
        if type_key(r) is None:
            out.update(custom_definitions(r, v3))
    return dict(sorted(out.items()))


def kind_ref(r: ApiResource, v3: bool, kind: str | None = None) -> str:
    key = kube_types.kind_type(r.group_version, kind or r.kind) if type_key(r) else None
    if key is not None:
        return defs.ref_path(key, v3)
    return _ref(custom_name(r, kind), v3)


# -- paths -----------------------------------------------------------------------------------

def _group_id(r: ApiResource) -> str:
    """``CoreV1``, ``StorageV1``, ``SnapshotStorageV1``: operation ids' group part."""
    if not r.group:
        return f"Core{r.version.capitalize()}"
    name = r.group.removesuffix(".k8s.io")
    return "".join(p.capitalize() for p in name.split(".")) + r.version.capitalize()


def _tag(r: ApiResource) -> str:
    name = r.group.removesuffix(".k8s.io").replace(".", "_") if r.group else "core"
    return f"{name}_{r.version}"


def _parameter(name: str, where: str, v3: bool) -> dict[str, Any]:
    kind, text = _QUERY.get(name, ("string", ""))
    if where == "path":
        text = {"name": "name of the object", "namespace": "the object's namespace"}[name]
    out: dict[str, Any] = {"name": name, "in": where, "description": text}
    if where == "path":
        out["required"] = True
    if v3:
        out["schema"] = {"type": kind, "uniqueItems": True}
    else:
        out.update({"type": kind, "uniqueItems": True})
    return out


def _media(r: ApiResource) -> list[str]:
    """What ``r``'s paths read and write: a custom resource JSON and YAML only, as
    apiextensions' OpenAPI builder lists them (a kind of the type table has protobuf)."""
    return [JSON, YAML, PROTOBUF] if type_key(r) is not None else [JSON, YAML]


def _produced(r: ApiResource, op: _Op) -> list[str]:
    """An operation's answer types: a list of a built-in kind streams its watch too
    (apiextensions lists no watch stream types for custom resources)."""
    types = _media(r)
    if op.verb == "list" and type_key(r) is not None:
        types += [f"{JSON};stream=watch", f"{PROTOBUF};stream=watch"]
    return types


def _responses(codes: dict[str, str], ref: str, v3: bool,
               types: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code, text in codes.items():
        if v3:
            out[code] = {"description": text,
                         "content": {t: {"schema": {"$ref": ref}} for t in sorted(types)}}
        else:
            out[code] = {"description": text, "schema": {"$ref": ref}}
    return out


@dataclass(frozen=True)
class _Op:
    verb: str  # list, create, read, replace, patch, delete, deletecollection
    action: str  # x-kubernetes-action
    query: tuple[str, ...]
    codes: dict[str, str]
    body: str = ""  # "object", "patch", "delete"


_OPS = {
    "list": _Op("list", "list", _LIST_QUERY, {"200": "OK"}),
    "create": _Op("create", "post", _WRITE_QUERY,
                  {"200": "OK", "201": "Created", "202": "Accepted"}, "object"),
    "read": _Op("read", "get", (), {"200": "OK"}),
    "replace": _Op("replace", "put", _WRITE_QUERY, {"200": "OK", "201": "Created"}, "object"),
    "patch": _Op("patch", "patch", (*_WRITE_QUERY, "force"),
                 {"200": "OK", "201": "Created"}, "patch"),
    "delete": _Op("delete", "delete", ("dryRun", "gracePeriodSeconds", "orphanDependents",
                                       "propagationPolicy"),
                  {"200": "OK", "202": "Accepted"}, "delete"),
    "deletecollection": _Op("deletecollection", "deletecollection",
                            ("dryRun", "gracePeriodSeconds", "orphanDependents",
                             "propagationPolicy", *_LIST_QUERY[1:-1]), {"200": "OK"}, "delete"),
}


def _operation(r: ApiResource, op: _Op, scope: str, v3: bool) -> dict[str, Any]:
    """One operation; ``scope`` is ``Namespaced``, ``""`` or ``ForAllNamespaces``, and a
    subresource's operation's scope ends with ``Status``, ``Scale``, ``Token`` (a
    ServiceAccount's TokenRequest) or ``Finalize`` (a Namespace's)."""
    sub = next((s for s in ("Status", "Scale", "Token", "Finalize") if scope.endswith(s)), "")
    base = scope.removesuffix(sub) if sub else scope
    all_namespaces = base == "ForAllNamespaces"
    operation_id = (f"{op.verb}{_group_id(r)}{'' if all_namespaces else base}{r.kind}"
                    f"{sub}{'ForAllNamespaces' if all_namespaces else ''}")
    if op.verb == "deletecollection":
        operation_id = f"delete{_group_id(r)}Collection{base}{r.kind}"
    kind = defs.ref_path(SCALE, v3) if sub == "Scale" else \
        defs.ref_path(TOKEN_REQUEST, v3) if sub == "Token" else kind_ref(r, v3)
    answers = kind_ref(r, v3, list_kind(r)) if op.verb == "list" else (
        defs.ref_path(defs.STATUS, v3) if op.verb == "deletecollection" else kind)
    what = f"{r.kind} {sub.lower()}" if sub else r.kind
    out: dict[str, Any] = {
        "description": f"{op.verb} {what}", "operationId": operation_id,
        "parameters": [_parameter(q, "query", v3) for q in op.query],
        "responses": _responses(op.codes, answers, v3, _produced(r, op)),
        "tags": [_tag(r)], "x-kubernetes-action": op.action,
        "x-kubernetes-group-version-kind": _SCALE_GVK if sub == "Scale" else
        _TOKEN_GVK if sub == "Token" else _gvk(r),
    }
    if op.body:
        if op.body == "patch":
            ref = defs.ref_path(defs.PATCH, v3)
            types = [t for t in PATCH_TYPES  # none for custom resources or their scale
                     if type_key(r) is not None or "strategic" not in t]
        elif op.body == "delete":
            ref, types = defs.ref_path(defs.DELETE_OPTIONS, v3), _media(r)
        else:
            ref, types = kind, _media(r)
        if v3:
            out["requestBody"] = {"content": {t: {"schema": {"$ref": ref}} for t in types},
                                  "required": op.body != "delete"}
        else:
            out["parameters"].append({"name": "body", "in": "body",
                                      "required": op.body != "delete",
                                      "schema": {"$ref": ref}})
            out["consumes"] = types
    if not v3:
        out["produces"] = _produced(r, op)
        out["schemes"] = ["https"]
    if not out["parameters"]:
        del out["parameters"]
    return out


def _path_item(r: ApiResource, verbs: dict[str, str], scope: str, params: list[str],
               v3: bool) -> dict[str, Any]:
    """``verbs``: HTTP method → operation; ``params``: the path's own parameters."""
    item: dict[str, Any] = {method: _operation(r, _OPS[op], scope, v3)
                            for method, op in verbs.items()}
    item["parameters"] = [*(_parameter(p, "path", v3) for p in params),
                          _parameter("pretty", "query", v3)]
    return item


def resource_paths(r: ApiResource, v3: bool) -> dict[str, Any]:
    """Every path of one served resource with the operations it answers."""
    prefix = f"/apis/{r.group}/{r.version}" if r.group else "/api/v1"
    scope = "Namespaced" if r.namespaced else ""
    params = ["namespace"] if r.namespaced else []
    base = f"{prefix}/namespaces/{{namespace}}/{r.plural}" if r.namespaced \
        else f"{prefix}/{r.plural}"
    collection = {m: v for m, v, needs in (("get", "list", "list"), ("post", "create", "create"),
                                           ("delete", "deletecollection", "deletecollection"))
                  if needs in r.verbs}
    single = {m: v for m, v, needs in (("get", "read", "get"), ("put", "replace", "update"),
                                       ("patch", "patch", "patch"), ("delete", "delete", "delete"))
              if needs in r.verbs}
    paths = {base: _path_item(r, collection, scope, params, v3),
             f"{base}/{{name}}": _path_item(r, single, scope, [*params, "name"], v3)}
    if r.has_status:
        status = {m: v for m, v in single.items() if m != "delete"}
        paths[f"{base}/{{name}}/status"] = _path_item(r, status, scope + "Status",
                                                      [*params, "name"], v3)
    if r.has_scale:
        scale = {m: v for m, v in single.items() if m != "delete"}
        paths[f"{base}/{{name}}/scale"] = _path_item(r, scale, scope + "Scale",
                                                     [*params, "name"], v3)
    if r.kind == "ServiceAccount" and type_key(r):
        paths[f"{base}/{{name}}/token"] = _path_item(r, {"post": "create"}, scope + "Token",
                                                     [*params, "name"], v3)
    if r.kind == "Namespace":
        paths[f"{base}/{{name}}/finalize"] = _path_item(r, {"put": "replace"}, "Finalize",
                                                        ["name"], v3)
    if r.namespaced and "list" in r.verbs:
        paths[f"{prefix}/{r.plural}"] = _path_item(r, {"get": "list"}, "ForAllNamespaces",
                                                   [], v3)
    return {p: item for p, item in paths.items() if len(item) > 1}


# -- documents -------------------------------------------------------------------------------

INFO = {"title": "Kubernetes", "version": "v1.35.0"}


def build_v3(resources: list[ApiResource]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in resources:
        paths.update(resource_paths(r, v3=True))
    return {"components": {"schemas": schemas(resources, v3=True)}, "info": INFO,
            "openapi": "3.0.0", "paths": dict(sorted(paths.items()))}


def build_v2(resources: list[ApiResource]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for r in resources:
        paths.update(resource_paths(r, v3=False))
    return {"definitions": schemas(resources, v3=False), "info": INFO,
            "paths": dict(sorted(paths.items())), "security": [{"BearerToken": []}],
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "in": "header",
                                                    "name": "authorization"}},
            "swagger": "2.0"}


@dataclass(frozen=True)
class Built:
    """A document serialized once, with the hash kube-apiserver puts in its URL and ETag."""

    body: bytes
    hash: str

    @property
    def etag(self) -> str:
        return f'"{self.hash}"'


def _built(doc: dict[str, Any]) -> Built:
    body = json.dumps(doc, separators=(",", ":")).encode()
    return Built(body, hashlib.sha512(body).hexdigest()[:128].upper())


# A built document's key: the resources it lists and, for the kinds of
# CustomResourceDefinitions, a digest of what their definitions say (an ApiResource compares
# by its names, so a changed schema must change the key). Bounded: CRDs come and go.
_Key = tuple[tuple[ApiResource, ...], tuple[str, ...]]


@lru_cache(maxsize=256)
def _v3(key: _Key) -> Built:
    return _built(build_v3(list(key[0])))


@lru_cache(maxsize=4)
def _v2(key: _Key) -> tuple[Built, Built]:
    """The v2 document in JSON and in protobuf."""
    doc = build_v2(list(key[0]))
    encoded = v2_protobuf.document(doc)
    return _built(doc), Built(encoded, hashlib.sha512(encoded).hexdigest().upper())


def _definition_digest(r: ApiResource) -> str:
    parts = custom_parts(r)
    if parts is None:
        return ""
    said = json.dumps([dataclasses.asdict(p) for p in parts], sort_keys=True, default=str)
    return hashlib.sha256(said.encode()).hexdigest()


def _served(resources: list[ApiResource]) -> _Key:
    # the writable ones; a create-only request kind (a binding, a review) is posted too
    listed = tuple(r for r in resources if "patch" in r.verbs or "create" in r.verbs)
    return listed, tuple(_definition_digest(r) for r in listed)


def document_key(group_version: str) -> str:
    """``v1`` → ``api/v1``; ``storage.k8s.io/v1`` → ``apis/storage.k8s.io/v1``."""
    return f"apis/{group_version}" if "/" in group_version else f"api/{group_version}"


Served = dict[str, list[ApiResource]]  # group/version -> its resources


def v3_document(key: str, served: Served | None = None) -> Built | None:
    """The document at ``/openapi/v3/<key>``; None when no group/version is there.
    ``served``: every group/version served (the built-in ones when not given)."""
    for gv, resources in (group_versions() if served is None else served).items():
        if document_key(gv) == key:
            return _v3(_served(resources))
    return None


def v3_index(served: Served | None = None) -> dict[str, Any]:
    served = group_versions() if served is None else served
    return {"paths": {document_key(gv): {"serverRelativeURL":
                                         f"/openapi/v3/{document_key(gv)}?hash="
                                         f"{_v3(_served(resources)).hash}"}
                      for gv, resources in served.items()}}


def built_index(served: Served | None = None) -> Built:
    """The index serialized, with its ETag (it changes as the documents do)."""
    return _built(v3_index(served))


def v2_document(protobuf: bool = False, served: Served | None = None) -> Built:
    """``/openapi/v2``: JSON, or gnostic's protobuf Document."""
    served = group_versions() if served is None else served
    everything = [r for resources in served.values() for r in resources]
    return _v2(_served(everything))[1 if protobuf else 0]


def immutable_headers(now: float | None = None) -> dict[str, str]:
    """The headers of a document asked for by its hash, which never changes: cached for
    good, expiring a year on (kube-apiserver's)."""
    when = (time.time() if now is None else now) + 365 * 86400
    return {"Cache-Control": "public, immutable",
            "Expires": email.utils.formatdate(when, usegmt=True)}


def negotiate(accept: str, protobuf: str | None = None) -> str | None:
    """The media type to answer an Accept header with: JSON (also for no header), the
    ``protobuf`` one where it is offered and asked for first, None when neither fits."""
    if not accept.strip():
        return JSON
    for clause in accept.split(","):
        media = clause.split(";")[0].strip().lower()
        if media in ("*/*", "application/*", JSON):
            return JSON
        if protobuf is not None and media == protobuf:
            return protobuf
    return None
