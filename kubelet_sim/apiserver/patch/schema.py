"""The shape of a kind's JSON as patch and apply need it, read from the type table
(:mod:`kubelet_sim.api.kube_types`).

A :class:`Node` is one position in an object: a struct (named fields), a list, a map, a
scalar, or *untyped* (a custom resource without a schema, a ``RawExtension``: maps of
free keys, lists atomic — structured-merge-diff's ``deduced`` type). Each node carries the
markers of the field that holds it, since Kubernetes puts them on fields:
``patchStrategy``/``patchMergeKey`` for strategic merge patch; ``listType``/
``listMapKeys``/``mapType`` for server-side apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from kubelet_sim.api import kube_types
from kubelet_sim.api.kube_types import Field, TypeRef

STRUCT, LIST, MAP, SCALAR, UNTYPED = "struct", "list", "map", "scalar", "untyped"

# Types whose Go declaration carries ``+structType=atomic`` (read from k8s.io/api and
# apimachinery v0.35.7; the type table records markers on fields only): apply owns them
# whole and a change anywhere inside conflicts as one field.
ATOMIC_STRUCTS = frozenset({
    "k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelector",
    "k8s.io/apimachinery/pkg/apis/meta/v1.OwnerReference",
    *(f"k8s.io/api/core/v1.{name}" for name in (
        "ConfigMapKeySelector", "EndpointAddress", "EndpointPort", "FileKeySelector",
        "LocalObjectReference", "NodeSelector", "NodeSelectorTerm", "ObjectFieldSelector",
        "ObjectReference", "ResourceFieldSelector", "ScopeSelector", "SecretKeySelector",
        "SecretReference", "TopologySelectorTerm", "TypedLocalObjectReference")),
    "k8s.io/api/autoscaling/v1.CrossVersionObjectReference",
    "k8s.io/api/discovery/v1.EndpointPort",
    "k8s.io/api/networking/v1.ServiceBackendPort",
    "k8s.io/api/rbac/v1.RoleRef", "k8s.io/api/rbac/v1.Subject",
})
_UNTYPED_SPECIALS = frozenset({"RawExtension", "FieldsV1", "JSON", "JSONSchemaPropsOrArray",
                               "JSONSchemaPropsOrBool", "JSONSchemaPropsOrStringArray"})


@dataclass(frozen=True)
class Node:
    """A type (``ref``; None for untyped) as held by one field (``field``; None at the
    root, for list items and map values)."""

    ref: TypeRef
    field: Field | None = None

    # -- what it is -------------------------------------------------------------------
    @property
    def shape(self) -> str:
        return _shape(_key(self.ref))

    @property
    def untyped(self) -> bool:
        return self.shape == UNTYPED

    def fields(self) -> dict[str, Node]:
        """A struct's fields by JSON name (inlined members flattened)."""
        info = kube_types.struct_of(self.ref)
        if info is None:
            return {}
        return _struct_fields(info.key)

    def child(self, name: str) -> Node | None:
        """The node under key ``name``: a struct's field (None when it has none), a map's
        value, anything under an untyped node."""
        shape = self.shape
        if shape == STRUCT:
            return self.fields().get(name)
        if shape == MAP:
            return self.elem()
        if shape == UNTYPED:
            return UNTYPED_NODE
        return None

    def elem(self) -> Node:
        """A list's item or a map's value."""
        ref = kube_types.resolve(self.ref)
        if isinstance(ref, dict) and "slice" in ref:
            return Node(ref["slice"])
        if isinstance(ref, dict) and "map" in ref:
            return Node(ref["map"]["value"])
        return UNTYPED_NODE

    # -- strategic merge patch --------------------------------------------------------
    @property
    def patch_strategies(self) -> tuple[str, ...]:
        return self.field.patch_strategies if self.field else ()

    @property
    def merge_key(self) -> str:
        return (self.field.patch_merge_key or "") if self.field else ""

    # -- server-side apply ------------------------------------------------------------
    @property
    def list_type(self) -> str:
        """``atomic``, ``set`` or ``map``: the field's ``listType``; without one, a list
        with the merge strategy is associative by its merge key (a set for scalars), as
        the OpenAPI → structured-merge-diff conversion reads it; else atomic."""
        if self.untyped or self.field is None:
            return "atomic"
        if self.field.list_type:
            return self.field.list_type
        if "merge" in self.patch_strategies:
            return "map" if self.merge_key else "set"
        return "atomic"

    @property
    def list_keys(self) -> tuple[str, ...]:
        if self.field is None:
            return ()
        if self.field.list_map_keys:
            return self.field.list_map_keys
        return (self.merge_key,) if self.merge_key else ()

    @property
    def atomic(self) -> bool:
        """A map or struct that apply treats as one value."""
        shape = self.shape
        if shape == MAP:
            return bool(self.field and self.field.map_type == "atomic")
        if shape == STRUCT:
            key = _key(self.ref)
            return key in ATOMIC_STRUCTS or bool(self.field and
                                                 self.field.struct_type == "atomic")
        return False


UNTYPED_NODE = Node(None)


@cache
def _struct_fields(key: str) -> dict[str, Node]:
    info = kube_types.type_info(key)
    return {f.json: Node(f.type, f) for f in info.json_fields()} if info else {}


def _key(ref: TypeRef) -> TypeRef:
    return kube_types.resolve(ref)


def _shape(ref: TypeRef) -> str:
    if ref is None:
        return UNTYPED
    if isinstance(ref, dict):
        return LIST if "slice" in ref else MAP if "map" in ref else UNTYPED
    if ref in kube_types.SCALARS:
        return SCALAR
    special = kube_types.special_of(ref)
    if special is not None:
        return UNTYPED if special in _UNTYPED_SPECIALS else SCALAR
    return STRUCT if kube_types.struct_of(ref) is not None else UNTYPED


@cache
def kind_node(api_version: str, kind: str) -> Node | None:
    """The root node of a kind the type table knows, None for the others (custom
    resources, the simulator's snapshot kinds)."""
    key = kube_types.kind_type(api_version, kind)
    return Node(key) if key is not None else None


@dataclass(frozen=True, eq=False)
class OpenAPINode(Node):
    """A node of a CustomResourceDefinition's structural schema (``openAPIV3Schema``):
    ``properties`` make a struct, ``additionalProperties`` a map, ``items`` a list;
    ``x-kubernetes-list-type``/``-list-map-keys``/``-map-type`` say how apply merges
    them. A custom resource's ``metadata`` is ObjectMeta, whatever the schema says."""

    schema: Any = None
    root: bool = False

    @property
    def shape(self) -> str:
        s = self.schema if isinstance(self.schema, dict) else {}
        kind = s.get("type")
        if kind == "array":
            return LIST
        if kind == "object" and isinstance(s.get("properties"), dict):
            return STRUCT
        if kind == "object" and isinstance(s.get("additionalProperties"), dict):
            return MAP
        if kind in ("string", "integer", "number", "boolean"):
            return SCALAR
        if s.get("x-kubernetes-int-or-string"):
            return SCALAR
        return UNTYPED

    def fields(self) -> dict[str, Node]:
        properties = (self.schema or {}).get("properties") or {}
        out: dict[str, Node] = {name: OpenAPINode(None, None, sub)
                                for name, sub in properties.items()}
        if self.root:
            out["metadata"] = Node(OBJECT_META)
        return out

    def child(self, name: str) -> Node | None:
        if self.shape == STRUCT and name not in self.fields() and \
                (self.schema or {}).get("x-kubernetes-preserve-unknown-fields"):
            return UNTYPED_NODE
        return super().child(name)

    def elem(self) -> Node:
        s = self.schema or {}
        for sub in (s.get("items"), s.get("additionalProperties")):
            if isinstance(sub, dict):
                return OpenAPINode(None, None, sub)
        return UNTYPED_NODE

    @property
    def list_type(self) -> str:
        return str((self.schema or {}).get("x-kubernetes-list-type") or "atomic")

    @property
    def list_keys(self) -> tuple[str, ...]:
        return tuple((self.schema or {}).get("x-kubernetes-list-map-keys") or ())

    @property
    def atomic(self) -> bool:
        s = self.schema or {}
        return s.get("x-kubernetes-map-type") == "atomic"


OBJECT_META = "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"


def custom_resource_node(open_api_v3_schema: Any) -> Node:
    """The root node of a custom resource whose definition has this structural schema
    (the hook for CustomResourceDefinitions: untyped, deduced, without one)."""
    if not isinstance(open_api_v3_schema, dict):
        return UNTYPED_NODE
    return OpenAPINode(None, None, open_api_v3_schema, root=True)


def has_schema(api_version: str, kind: str) -> bool:
    """Whether ``kind`` is a built-in type (strategic merge patch needs its schema)."""
    return kind_node(api_version, kind) is not None
