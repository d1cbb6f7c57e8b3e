"""The Kubernetes type table: every field of the built-in kinds, as facts.

``kube_types.json`` beside this module holds, for k8s.io/api, k8s.io/apimachinery and
k8s.io/apiextensions-apiserver's ``apiextensions/v1`` (CustomResourceDefinition) at v0.35.7,
each Go type the built-in kinds are made of: its fields' JSON names, their
types, whether Go holds them by pointer (presence matters) or inlines them into the
parent's JSON, their protobuf field numbers, and the markers the API machinery reads —
``patchStrategy``/``patchMergeKey`` (strategic merge patch), ``listType``/``listMapKeys``/
``mapType``/``structType`` (server-side apply), ``+optional``/``+required``.

One table serves everything that needs the schema (the protobuf converter, strategic
merge patch, server-side apply, OpenAPI, type validation), so they cannot disagree.

Type references (``TypeRef``) are a scalar name (``"string"``, ``"int32"``, ``"bool"``,
``"[]byte"``, ...), a type key (``"k8s.io/api/core/v1.PodSpec"``), ``{"slice": TypeRef}``
or ``{"map": {"key": TypeRef, "value": TypeRef}}``. The special types Kubernetes encodes
its own way keep their keys and are marked ``special``: Quantity, Time, MicroTime,
Duration, IntOrString, RawExtension, FieldsV1, and apiextensions' JSON (any JSON value)
and its unions JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

TypeRef = Any  # str | {"slice": TypeRef} | {"map": {"key": TypeRef, "value": TypeRef}}

SCALARS = frozenset({"string", "bool", "int", "int32", "int64", "uint32", "uint64", "float32",
                     "float64", "byte", "uint8", "uint16", "int8", "int16", "[]byte"})


@dataclass(frozen=True)
class Field:
    """One field of a struct type, by its JSON name ("" for an inlined member)."""

    json: str
    go: str
    type: TypeRef
    pointer: bool = False
    omitempty: bool = False
    inline: bool = False
    proto_number: int | None = None
    proto_name: str | None = None
    patch_strategy: str | None = None
    patch_merge_key: str | None = None
    list_type: str | None = None
    list_map_keys: tuple[str, ...] | None = None
    map_type: str | None = None
    struct_type: str | None = None
    optional: bool = False
    required: bool = False

    @property
    def patch_strategies(self) -> tuple[str, ...]:
        """``merge``, ``retainKeys`` or both (the tag may name several, comma-separated)."""
        return tuple(s for s in (self.patch_strategy or "").split(",") if s)


@dataclass(frozen=True)
class TypeInfo:
    """A named type: ``struct`` (with fields), ``alias`` (a Go named type over a slice, map
    or scalar) or ``special`` (encoded Kubernetes' own way)."""

    key: str
    kind: str
    fields: tuple[Field, ...] = ()
    underlying: TypeRef = None
    special: str | None = None
    proto: str | None = None  # the protobuf message's full name, where there is one
    nullable: bool = False  # an alias whose protobuf form is a message wrapping ``items``

    def field(self, json_name: str) -> Field | None:
        """The field named ``json_name``, looking into inlined members too."""
        return _field_index(self.key).get(json_name)

    def json_fields(self) -> list[Field]:
        """Every field as it appears in the JSON object, inlined members flattened."""
        return list(_field_index(self.key).values())


def _field(raw: dict[str, Any]) -> Field:
    proto = raw.get("proto") or {}
    keys = raw.get("listMapKeys")
    return Field(
        json=raw.get("json") or "", go=raw["go"], type=raw["type"],
        pointer=bool(raw.get("pointer")), omitempty=bool(raw.get("omitempty")),
        inline=bool(raw.get("inline")), proto_number=proto.get("number"),
        proto_name=proto.get("name"), patch_strategy=raw.get("patchStrategy"),
        patch_merge_key=raw.get("patchMergeKey"), list_type=raw.get("listType"),
        list_map_keys=tuple(keys) if keys else None, map_type=raw.get("mapType"),
        struct_type=raw.get("structType"), optional=bool(raw.get("optional")),
        required=bool(raw.get("required")))


@cache
def _table() -> dict[str, Any]:
    text = resources.files("kubelet_sim.api").joinpath("kube_types.json").read_text()
    table: dict[str, Any] = json.loads(text)
    return table


@cache
def type_info(key: str) -> TypeInfo | None:
    """The named type ``key`` (e.g. ``k8s.io/api/core/v1.PodSpec``), None if unknown."""
    raw = _table()["types"].get(key)
    if raw is None:
        return None
    return TypeInfo(key=key, kind=raw["kind"],
                    fields=tuple(_field(f) for f in raw.get("fields", ())),
                    underlying=raw.get("underlying"), special=raw.get("special"),
                    proto=raw.get("proto"), nullable=bool(raw.get("nullable")))


@cache
def _field_index(key: str) -> dict[str, Field]:
    info = type_info(key)
    out: dict[str, Field] = {}
    if info is None:
        return out
    for f in info.fields:
        if f.inline:
            inner = resolve(f.type)
            if isinstance(inner, str) and type_info(inner) is not None:
                out.update(_field_index(inner))
        else:
            out[f.json] = f
    return out


@cache
def message_type(full_name: str) -> str | None:
    """The type key of the protobuf message ``full_name``
    (``k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON`` →
    ``k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1.JSON``), None if unknown."""
    return _by_message().get(full_name)


@cache
def _by_message() -> dict[str, str]:
    return {raw["proto"]: key for key, raw in _table()["types"].items() if raw.get("proto")}


def kind_type(api_version: str, kind: str) -> str | None:
    """The type key of a served kind (``"v1"``, ``"Pod"`` → ``k8s.io/api/core/v1.Pod``)."""
    found: str | None = _table()["kinds"].get(f"{api_version}/{kind}")
    return found


def kinds() -> dict[str, str]:
    """``<apiVersion>/<Kind>`` → type key, for every kind in the table."""
    table: dict[str, str] = _table()["kinds"]
    return dict(table)


def resolve(ref: TypeRef) -> TypeRef:
    """``ref`` with aliases followed to what they name (a special type stays itself)."""
    seen = 0
    while isinstance(ref, str) and ref not in SCALARS and seen < 16:
        info = type_info(ref)
        if info is None or info.kind != "alias":
            return ref
        ref = info.underlying
        seen += 1
    return ref


def struct_of(ref: TypeRef) -> TypeInfo | None:
    """The struct type ``ref`` names (after aliases), None for anything else."""
    ref = resolve(ref)
    if not isinstance(ref, str):
        return None
    info = type_info(ref)
    return info if info is not None and info.kind == "struct" else None


def special_of(ref: TypeRef) -> str | None:
    """``Quantity``, ``Time``, ... when ``ref`` is one of the specially encoded types."""
    ref = resolve(ref)
    if not isinstance(ref, str):
        return None
    info = type_info(ref)
    return info.special if info is not None else None
