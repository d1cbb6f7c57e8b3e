"""JSON objects ↔ Kubernetes protobuf messages, by walking the message descriptors.

The descriptors (k8s_protos, compiled from k8s.io/api's generated.proto) give the wire
shape; the type table (:mod:`kubelet_sim.api.kube_types`) gives what the JSON looks like:
each field's JSON name, whether Go inlines the member into the parent's JSON object
(``Volume.volumeSource``), and whether it is a pointer or ``omitempty``, which decides
the JSON of a zero value read from protobuf: gogo-generated Go writes non-pointer scalars
even when zero, and Go's JSON leaves those out only where the field is ``omitempty``;
pointers keep their zero values (they were set).

The special types take their Kubernetes forms (:mod:`.special`); ``RawExtension`` and
``FieldsV1`` hold JSON text; Go slice types with a message of their own (authentication
``ExtraValue``, meta ``Verbs``: ``{repeated string items = 1}``) are bare JSON arrays.
"""

from __future__ import annotations

import base64
import importlib
import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from kubelet_sim.api import kube_types

from . import special

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
DURATION = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
FIELDS_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"

# the generated modules, imported on first use (core/v1 alone costs ~15 ms)
_MODULES = ("runtime_pb2", "runtime_schema_pb2", "resource_pb2", "intstr_pb2", "meta_v1_pb2",
            "core_v1_pb2", "storage_v1_pb2", "coordination_v1_pb2", "networking_v1_pb2",
            "events_v1_pb2", "policy_v1_pb2", "authentication_v1_pb2", "authorization_v1_pb2",
            "apps_v1_pb2", "batch_v1_pb2", "discovery_v1_pb2", "autoscaling_v1_pb2")

_OMIT = object()  # a value read from protobuf that Go's JSON would leave out


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    for module in _MODULES:
        importlib.import_module(f"k8s_protos.{module}")
    return descriptor_pool.Default()


@cache
def message_class(full_name: str) -> type[Message] | None:
    """The generated class of the message ``full_name``, None when the schema has none."""
    try:
        descriptor = _pool().FindMessageTypeByName(full_name)
    except KeyError:
        return None
    return message_factory.GetMessageClass(descriptor)


def kind_message(api_version: str, kind: str) -> type[Message] | None:
    """The message of a kind (``"v1"``, ``"Pod"``), None when it has no protobuf form
    (custom resources, kinds outside the schema)."""
    key = kube_types.kind_type(api_version, kind)
    info = kube_types.type_info(key) if key else None
    if info is None or info.proto is None:
        return None
    return message_class(info.proto)


def _type_key(descriptor: Descriptor) -> str:
    """``k8s.io.api.core.v1.PodSpec`` → the table's ``k8s.io/api/core/v1.PodSpec``."""
    parts = descriptor.file.package.split(".")
    return f"{parts[0]}.{parts[1]}/{'/'.join(parts[2:])}.{descriptor.name}"


@dataclass(frozen=True, slots=True)
class _Entry:
    json: str  # "" for an inlined member
    name: str  # the protobuf field's name (its Python attribute)
    keep_zero: bool  # a zero value read from protobuf stays in the JSON
    repeated: bool
    is_map: bool
    message: str | None  # the message full name (a map: its value's), None for scalars
    scalar: int  # the FieldDescriptor type of a scalar (or of a map's scalar value)


def _entry(field: FieldDescriptor, table: kube_types.Field | None) -> _Entry:
    json_name = table.json if table is not None else field.name
    keep_zero = table is not None and (table.pointer or not table.omitempty)
    target = field
    entry_type = field.message_type
    is_map = entry_type is not None and entry_type.GetOptions().map_entry
    if entry_type is not None and is_map:
        target = entry_type.fields_by_name["value"]
    message = target.message_type.full_name if target.message_type is not None else None
    return _Entry(json_name, field.name, keep_zero,
                  field.is_repeated and not is_map, is_map,
                  message, target.type)


@dataclass(frozen=True, slots=True)
class _Plan:
    by_json: dict[str, _Entry]  # the JSON members this message holds itself
    by_name: dict[str, _Entry]  # every field, by protobuf name
    inline: tuple[str, ...]  # fields whose members sit at the parent's level in JSON


@cache
def _plan(full_name: str) -> _Plan:
    descriptor = _pool().FindMessageTypeByName(full_name)
    info = kube_types.type_info(_type_key(descriptor))
    by_number = {f.proto_number: f for f in info.fields} if info is not None else {}
    entries = [_entry(field, by_number.get(field.number)) for field in descriptor.fields]
    inline = tuple(e.name for e in entries if not e.json)
    return _Plan({e.json: e for e in entries if e.json}, {e.name: e for e in entries}, inline)


@cache
def _list_wrapper(full_name: str) -> bool:
    """A Go slice type with a message of its own (``{repeated items = 1}``)."""
    descriptor = _pool().FindMessageTypeByName(full_name)
    info = kube_types.type_info(_type_key(descriptor))
    return info is not None and info.kind == "alias" and info.nullable


# -- JSON → protobuf -----------------------------------------------------------------------

def _scalar(kind: int, value: Any) -> Any:
    if kind == FieldDescriptor.TYPE_BYTES:
        return base64.b64decode(value)
    if kind == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise ValueError(f"expected a string, not {value!r}")
        return value
    if kind == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise ValueError(f"expected a boolean, not {value!r}")
        return value
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return float(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"expected an integer, not {value!r}")
    return int(value)


def _fill_value(target: Message, full_name: str, value: Any) -> None:
    if full_name == QUANTITY:
        target.string = special.quantity_text(value)  # type: ignore[attr-defined]
    elif full_name == TIME:
        target.seconds = special.parse_time(value)[0]  # type: ignore[attr-defined]
        target.nanos = 0  # type: ignore[attr-defined]  # as Go: JSON keeps whole seconds
    elif full_name == MICRO_TIME:
        seconds, nanos = special.parse_time(value)
        target.seconds = seconds  # type: ignore[attr-defined]
        target.nanos = nanos - nanos % 1000  # type: ignore[attr-defined]
    elif full_name == DURATION:
        target.duration = special.parse_duration(value)  # type: ignore[attr-defined]
    elif full_name == INT_OR_STRING:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"an int or a string, not {value!r}")
        is_text = isinstance(value, str)
        target.type = 1 if is_text else 0  # type: ignore[attr-defined]
        target.intVal = 0 if is_text else value  # type: ignore[attr-defined]
        target.strVal = value if is_text else ""  # type: ignore[attr-defined]
    elif full_name == RAW_EXTENSION:
        target.raw = json.dumps(value, separators=(",", ":")).encode()  # type: ignore[attr-defined]
    elif full_name == FIELDS_V1:
        target.Raw = json.dumps(value, separators=(",", ":")).encode()  # type: ignore[attr-defined]
    elif _list_wrapper(full_name):
        if not isinstance(value, list):
            raise ValueError(f"expected a list, not {value!r}")
        target.items.extend(value)  # type: ignore[attr-defined]
    else:
        if not isinstance(value, dict):
            raise ValueError(f"expected an object, not {value!r}")
        fill(target, value)
    target.SetInParent()


def fill(message: Message, doc: dict[str, Any]) -> None:
    """Set ``message``'s fields from the JSON object ``doc`` (fields it lacks stay unset;
    members the schema does not know are left out)."""
    plan = _plan(message.DESCRIPTOR.full_name)
    for name in plan.inline:
        member = getattr(message, name)
        fill(member, doc)
        member.SetInParent()  # gogo writes an embedded struct even when empty
    by_json = plan.by_json
    for key, value in doc.items():
        e = by_json.get(key)
        if e is None or value is None:
            continue
        if e.is_map:
            if not isinstance(value, dict):
                raise ValueError(f"{key}: expected an object, not {value!r}")
            target = getattr(message, e.name)
            for item_key, item in value.items():
                if item is None:
                    continue
                if e.message is not None:
                    _fill_value(target[item_key], e.message, item)
                else:
                    target[item_key] = _scalar(e.scalar, item)
        elif e.repeated:
            if not isinstance(value, list):
                raise ValueError(f"{key}: expected a list, not {value!r}")
            target = getattr(message, e.name)
            if e.message is not None:
                for item in value:
                    _fill_value(target.add(), e.message, item)
            else:
                target.extend([_scalar(e.scalar, item) for item in value])
        elif e.message is not None:
            _fill_value(getattr(message, e.name), e.message, value)
        else:
            setattr(message, e.name, _scalar(e.scalar, value))


# -- protobuf → JSON -----------------------------------------------------------------------

def _read_scalar(kind: int, value: Any) -> Any:
    return base64.b64encode(value).decode() if kind == FieldDescriptor.TYPE_BYTES else value


def _read_value(source: Message, full_name: str) -> Any:
    if full_name == QUANTITY:
        return source.string or "0"  # type: ignore[attr-defined]
    if full_name in (TIME, MICRO_TIME):
        if not source.HasField("seconds"):
            return _OMIT  # the zero time: Go writes it as null
        if full_name == TIME:
            return special.format_time(source.seconds)  # type: ignore[attr-defined]
        return special.format_micro_time(source.seconds,  # type: ignore[attr-defined]
                                         source.nanos)  # type: ignore[attr-defined]
    if full_name == DURATION:
        return special.format_duration(source.duration)  # type: ignore[attr-defined]
    if full_name == INT_OR_STRING:
        if source.type == 1:  # type: ignore[attr-defined]
            return source.strVal  # type: ignore[attr-defined]
        return source.intVal  # type: ignore[attr-defined]
    if full_name in (RAW_EXTENSION, FIELDS_V1):
        raw = source.raw if full_name == RAW_EXTENSION else source.Raw  # type: ignore[attr-defined]
        return _raw_json(raw) if raw else _OMIT
    if _list_wrapper(full_name):
        return list(source.items)  # type: ignore[attr-defined]
    return read(source)  # Go writes a struct even when empty (omitempty or not)


def _raw_json(raw: bytes) -> Any:
    """The JSON an embedded object's bytes hold: JSON text, or an enveloped protobuf."""
    from .envelope import MAGIC, decode  # the envelope builds on this module

    if raw.startswith(MAGIC):
        return decode(raw)
    return json.loads(raw)


def read(message: Message) -> dict[str, Any]:
    """``message`` as its JSON object (Go's JSON of the object gogo decodes it into)."""
    by_name = _plan(message.DESCRIPTOR.full_name).by_name
    out: dict[str, Any] = {}
    for field, value in message.ListFields():  # the set fields only
        e = by_name[field.name]
        if not e.json:  # an inlined member
            out.update(read(value))
        elif e.is_map:
            if e.message is not None:
                values = {k: _read_value(v, e.message) for k, v in value.items()}
                out[e.json] = {k: v for k, v in values.items() if v is not _OMIT}
            else:
                out[e.json] = {k: _read_scalar(e.scalar, v) for k, v in value.items()}
        elif e.repeated:
            if e.message is not None:
                items = [_read_value(v, e.message) for v in value]
                out[e.json] = [v for v in items if v is not _OMIT]
            else:
                out[e.json] = [_read_scalar(e.scalar, v) for v in value]
        elif e.message is not None:
            found = _read_value(value, e.message)
            if found is not _OMIT:
                out[e.json] = found
        elif value or e.keep_zero:
            out[e.json] = _read_scalar(e.scalar, value)
    return out
