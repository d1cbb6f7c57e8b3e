"""OpenAPI schemas of the built-in types, walked from the Kubernetes type table
(:mod:`kubelet_sim.api.kube_types`), named and shaped as kube-apiserver publishes them.

A struct or a specially encoded type becomes a named definition
(``io.k8s.api.core.v1.PodSpec``: the Go import path with its domain reversed) that the
others ``$ref``; aliases are replaced by what they name (``ResourceList`` is an object of
Quantities); slices are arrays, maps are objects with ``additionalProperties``. Each field
carries the markers the table holds as the ``x-kubernetes-*`` extensions kubectl and
server-side apply read. v3 wraps a ``$ref`` that has siblings in ``allOf`` (a ``$ref``
beside other keys is ignored by OpenAPI 3.0 readers); v2 keeps them side by side.

Descriptions are left out (``kubectl explain`` prints ``<no description>`` for a field),
except a short one of our own on each kind.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api import kube_types
from kubelet_sim.api.kube_types import Field, TypeRef

META = "k8s.io/apimachinery/pkg/apis/meta/v1"
# Types the paths name besides the kinds themselves.
DELETE_OPTIONS = f"{META}.DeleteOptions"
STATUS = f"{META}.Status"
WATCH_EVENT = f"{META}.WatchEvent"
PATCH = f"{META}.Patch"  # the body of a PATCH: an empty struct, an object to OpenAPI

_INTEGERS = {"int": "int32", "int8": "int32", "int16": "int32", "int32": "int32",
             "uint8": "int32", "uint16": "int32", "byte": "int32", "int64": "int64",
             "uint32": "int64", "uint64": "int64"}
_NUMBERS = {"float32": "float", "float64": "double"}
# apiextensions' JSON and the unions in a CustomResourceDefinition's schema
_ANY_JSON = frozenset({"JSON", "JSONSchemaPropsOrArray", "JSONSchemaPropsOrBool",
                       "JSONSchemaPropsOrStringArray"})


def definition_name(key: str) -> str:
    """``k8s.io/api/core/v1.Pod`` → ``io.k8s.api.core.v1.Pod``."""
    package, _, name = key.rpartition(".")
    domain, _, rest = package.partition("/")
    parts = [*reversed(domain.split(".")), *rest.split("/")]
    return ".".join([p for p in parts if p] + [name])


def ref_path(key: str, v3: bool) -> str:
    prefix = "#/components/schemas/" if v3 else "#/definitions/"
    return prefix + definition_name(key)


def _special(special: str, v3: bool) -> dict[str, Any]:
    """The ways Kubernetes publishes its specially encoded types."""
    if special == "Quantity":
        return {"oneOf": [{"type": "string"}, {"type": "number"}]} if v3 else {"type": "string"}
    if special == "IntOrString":
        shape: dict[str, Any] = {"format": "int-or-string"}
        shape.update({"oneOf": [{"type": "integer"}, {"type": "string"}]} if v3
                     else {"type": "string"})
        return shape
    if special in ("Time", "MicroTime"):
        return {"type": "string", "format": "date-time"}
    if special == "Duration":
        return {"type": "string"}
    if special in _ANY_JSON:
        return {}  # typeless, as apiextensions publishes them: any JSON value
    return {"type": "object"}  # RawExtension, FieldsV1: any JSON object


def _scalar(name: str) -> dict[str, Any]:
    if name == "string":
        return {"type": "string"}
    if name == "bool":
        return {"type": "boolean"}
    if name == "[]byte":
        return {"type": "string", "format": "byte"}
    if name in _INTEGERS:
        return {"type": "integer", "format": _INTEGERS[name]}
    if name in _NUMBERS:
        return {"type": "number", "format": _NUMBERS[name]}
    return {"type": "string"}


def named(ref: TypeRef) -> str | None:
    """The definition key ``ref`` names (a struct or a special type), after aliases."""
    ref = kube_types.resolve(ref)
    if isinstance(ref, str) and ref not in kube_types.SCALARS:
        info = kube_types.type_info(ref)
        if info is not None and info.kind in ("struct", "special"):
            return ref
    return None


def type_schema(ref: TypeRef, v3: bool, siblings: dict[str, Any] | None = None) \
        -> dict[str, Any]:
    """The schema of a value of type ``ref``, with ``siblings`` (extensions, default)."""
    extra = dict(siblings or {})
    key = named(ref)
    if key is not None:
        link = {"$ref": ref_path(key, v3)}
        if not extra:
            return link
        return {"allOf": [link], **extra} if v3 else {**link, **extra}
    ref = kube_types.resolve(ref)
    if isinstance(ref, dict) and "slice" in ref:
        item = ref["slice"]
        if kube_types.resolve(item) == "byte":  # an alias of []byte
            return {**_scalar("[]byte"), **extra}
        return {"type": "array", "items": _element(item, v3), **extra}
    if isinstance(ref, dict) and "map" in ref:
        return {"type": "object", "additionalProperties": _element(ref["map"]["value"], v3),
                **extra}
    return {**_scalar(ref if isinstance(ref, str) else "string"), **extra}


def _element(ref: TypeRef, v3: bool) -> dict[str, Any]:
    """An array item or map value: a struct held by value defaults to ``{}``."""
    key = named(ref)
    if key is not None and kube_types.special_of(key) is None:
        return type_schema(ref, v3, {"default": {}})
    return type_schema(ref, v3)


def _field_extensions(f: Field) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if f.list_map_keys:
        out["x-kubernetes-list-map-keys"] = list(f.list_map_keys)
    if f.list_type:
        out["x-kubernetes-list-type"] = f.list_type
    if f.map_type:
        out["x-kubernetes-map-type"] = f.map_type
    elif f.struct_type:
        out["x-kubernetes-map-type"] = f.struct_type
    if f.patch_merge_key:
        out["x-kubernetes-patch-merge-key"] = f.patch_merge_key
    if f.patch_strategy:
        out["x-kubernetes-patch-strategy"] = f.patch_strategy
    return out


def field_schema(f: Field, v3: bool) -> dict[str, Any]:
    siblings = _field_extensions(f)
    key = named(f.type)
    if key is not None and not f.pointer and kube_types.special_of(key) is None:
        siblings["default"] = {}
    return type_schema(f.type, v3, siblings)


def is_required(f: Field) -> bool:
    """Required as openapi-gen decides: no ``+optional`` marker and no ``omitempty``."""
    return f.required or not (f.optional or f.omitempty)


def definition(key: str, v3: bool) -> dict[str, Any]:
    """The definition of one named type (struct or special)."""
    info = kube_types.type_info(key)
    if info is None:
        return {"type": "object"}
    if info.kind == "special":
        return _special(info.special or "", v3)
    fields = info.json_fields()
    out: dict[str, Any] = {"type": "object"}
    if fields:
        out["properties"] = {f.json: field_schema(f, v3) for f in fields}
    required = [f.json for f in fields if is_required(f)]
    if required:
        out["required"] = required
    return out


def references(key: str) -> list[str]:
    """The definition keys ``key``'s fields name directly."""
    info = kube_types.type_info(key)
    if info is None or info.kind != "struct":
        return []
    out: list[str] = []
    for f in info.json_fields():
        out.extend(_named_in(f.type))
    return out


def _named_in(ref: TypeRef) -> list[str]:
    key = named(ref)
    if key is not None:
        return [key]
    ref = kube_types.resolve(ref)
    if isinstance(ref, dict) and "slice" in ref:
        return _named_in(ref["slice"])
    if isinstance(ref, dict) and "map" in ref:
        return _named_in(ref["map"]["value"])
    return []


def closure(roots: list[str]) -> list[str]:
    """Every definition key reachable from ``roots``, roots first, each once."""
    seen: dict[str, None] = {}
    stack = list(reversed(roots))
    while stack:
        key = stack.pop()
        if key in seen:
            continue
        seen[key] = None
        stack.extend(reversed(references(key)))
    return list(seen)


def definitions(roots: list[str], v3: bool,
                kinds: dict[str, list[dict[str, str]]]) -> dict[str, Any]:
    """Named definitions of ``roots`` and everything they reach; ``kinds`` gives the
    group/version/kinds each type key is served as (``x-kubernetes-group-version-kind``)."""
    out: dict[str, Any] = {}
    for key in closure(roots):
        schema = definition(key, v3)  # Patch, not in the table, is a plain object
        gvks = kinds.get(key)
        if gvks:
            schema["x-kubernetes-group-version-kind"] = gvks
            kind = gvks[0]["kind"]
            if key.startswith("k8s.io/api/") and not kind.endswith("List"):
                schema["description"] = f"{kind}, as the cni-csi-mini simulated cluster serves it."
        out[definition_name(key)] = schema
    return dict(sorted(out.items()))
