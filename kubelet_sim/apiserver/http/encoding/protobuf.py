"""JSON objects ↔ Kubernetes protobuf messages, by walking the message descriptors.

The descriptors (k8s_protos, compiled from k8s.io/api's generated.proto) give the wire
shape; the type table (:mod:`kubelet_sim.api.kube_types`) gives what the JSON looks like:
each field's JSON name, whether Go inlines the member into the parent's JSON object
(``Volume.volumeSource``), and whether it is a pointer or ``omitempty``, which decides
the JSON of a zero value read from protobuf: gogo-generated Go writes non-pointer scalars
even when zero, and Go's JSON leaves those out only where the field is ``omitempty``;
pointers keep their zero values (they were set).

The special types take their Kubernetes forms (:mod:`.special`); ``RawExtension`` and
``FieldsV1`` hold JSON text; apiextensions' ``JSON`` and ``JSONSchemaPropsOr*`` unions
(a CustomResourceDefinition's schema) take the forms of :mod:`.apiextensions`; a double
with an integral value is written as Go writes a float64 (``10``, not ``10.0``); Go slice
types with a message of their own (authentication ``ExtraValue``, meta ``Verbs``:
``{repeated string items = 1}``) are bare JSON arrays.
"""

from __future__ import annotations

import base64
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from k8s_protos.generate import MODULES
from kubelet_sim.api import kube_types

from . import apiextensions, special

QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.Time"
MICRO_TIME = "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime"
DURATION = "k8s.io.apimachinery.pkg.apis.meta.v1.Duration"
FIELDS_V1 = "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
RAW_EXTENSION = "k8s.io.apimachinery.pkg.runtime.RawExtension"

_OMIT = object()  # a value read from protobuf that Go's JSON would leave out


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    for module in MODULES.values():  # imported on first use: core/v1 alone costs ~15 ms
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
    found = kube_types.message_type(descriptor.full_name)
    if found is not None:
        return found
    parts = descriptor.file.package.split(".")
    return f"{parts[0]}.{parts[1]}/{'/'.join(parts[2:])}.{descriptor.name}"


Writer = Callable[[Message, Any], None]  # sets a message from its JSON value
Reader = Callable[[Message], Any]  # a message's JSON value (_OMIT: none)


# -- JSON → protobuf, one function per kind of value ---------------------------------------

def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, not {value!r}")
    return value


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected a boolean, not {value!r}")
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"expected an integer, not {value!r}")
    return int(value)


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"expected a number, not {value!r}")
    return float(value)


def _bytes(value: Any) -> bytes:
    return base64.b64decode(_string(value), validate=True)


def _to_wire(kind: int) -> Callable[[Any], Any]:
    if kind == FieldDescriptor.TYPE_BYTES:
        return _bytes
    if kind == FieldDescriptor.TYPE_STRING:
        return _string
    if kind == FieldDescriptor.TYPE_BOOL:
        return _bool
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return _float
    return _integer


def _write_quantity(target: Any, value: Any) -> None:
    target.string = special.quantity_text(value)


def _write_time(target: Any, value: Any) -> None:
    target.seconds = special.parse_time(_string(value))[0]
    target.nanos = 0  # as Go: its JSON keeps whole seconds


def _write_micro_time(target: Any, value: Any) -> None:
    seconds, nanos = special.parse_time(_string(value))
    target.seconds = seconds
    target.nanos = nanos - nanos % 1000


def _write_duration(target: Any, value: Any) -> None:
    target.duration = special.parse_duration(_string(value))


def _write_int_or_string(target: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"expected an integer or a string, not {value!r}")
    is_text = isinstance(value, str)  # gogo writes all three fields
    target.type = 1 if is_text else 0
    target.intVal = 0 if is_text else value
    target.strVal = value if is_text else ""


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _write_raw_extension(target: Any, value: Any) -> None:
    target.raw = _json_bytes(value)


def _write_fields_v1(target: Any, value: Any) -> None:
    target.Raw = _json_bytes(value)


def _write_items(target: Any, value: Any) -> None:
    if not isinstance(value, list):
        raise ValueError(f"expected a list, not {value!r}")
    target.SetInParent()
    target.items.extend([_string(v) for v in value])


def _write_struct(target: Message, value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"expected an object, not {value!r}")
    target.SetInParent()
    fill(target, value)


def _write_schema(target: Message, value: Any) -> None:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON schema object, not {value!r}")
    _write_struct(target, value)


_WRITERS: dict[str, Writer] = {
    QUANTITY: _write_quantity, TIME: _write_time, MICRO_TIME: _write_micro_time,
    DURATION: _write_duration, INT_OR_STRING: _write_int_or_string,
    RAW_EXTENSION: _write_raw_extension, FIELDS_V1: _write_fields_v1,
    apiextensions.JSON_VALUE: apiextensions.write_json,
    apiextensions.OR_ARRAY: lambda t, v: apiextensions.write_or_array(t, v, _write_schema),
    apiextensions.OR_BOOL: lambda t, v: apiextensions.write_or_bool(t, v, _write_schema),
    apiextensions.OR_STRING_ARRAY:
        lambda t, v: apiextensions.write_or_string_array(t, v, _write_schema),
}


# -- protobuf → JSON -----------------------------------------------------------------------

def _go_float(value: float) -> float | int:
    """A float64 as Go's JSON writes it: an integral value in plain notation has no
    fraction (``10``); Go turns to exponent notation from 1e21 on, as Python does."""
    return int(value) if value.is_integer() and abs(value) < 1e21 else value


def _from_wire(kind: int) -> Callable[[Any], Any] | None:
    if kind == FieldDescriptor.TYPE_BYTES:
        return lambda value: base64.b64encode(value).decode()
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return _go_float
    return None  # the value as it is


def _read_quantity(source: Any) -> Any:
    return source.string or "0"


def _read_time(source: Any) -> Any:
    if not source.HasField("seconds"):
        return _OMIT  # the zero time: Go writes it as null
    return special.format_time(source.seconds)


def _read_micro_time(source: Any) -> Any:
    if not source.HasField("seconds"):
        return _OMIT
    return special.format_micro_time(source.seconds, source.nanos)


def _read_duration(source: Any) -> Any:
    return special.format_duration(source.duration)


def _read_int_or_string(source: Any) -> Any:
    return source.strVal if source.type == 1 else source.intVal


def _raw_json(raw: bytes) -> Any:
    """The JSON an embedded object's bytes hold: JSON text, or an enveloped protobuf."""
    if not raw:
        return _OMIT
    from .envelope import MAGIC, decode  # the envelope builds on this module

    if raw.startswith(MAGIC):
        return decode(raw)
    return json.loads(raw)


def _read_raw_extension(source: Any) -> Any:
    return _raw_json(source.raw)


def _read_fields_v1(source: Any) -> Any:
    return _raw_json(source.Raw)


def _read_items(source: Any) -> Any:
    return list(source.items)


_READERS: dict[str, Reader] = {
    QUANTITY: _read_quantity, TIME: _read_time, MICRO_TIME: _read_micro_time,
    DURATION: _read_duration, INT_OR_STRING: _read_int_or_string,
    RAW_EXTENSION: _read_raw_extension, FIELDS_V1: _read_fields_v1,
    apiextensions.JSON_VALUE: apiextensions.read_json,
    apiextensions.OR_ARRAY: lambda s: apiextensions.read_or_array(s, read),
    apiextensions.OR_BOOL: lambda s: apiextensions.read_or_bool(s, read),
    apiextensions.OR_STRING_ARRAY: lambda s: apiextensions.read_or_string_array(s, read),
}


# -- the plan of each message --------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _Entry:
    json: str  # "" for an inlined member
    name: str  # the protobuf field's name (its Python attribute)
    keep_zero: bool  # a zero scalar read from protobuf stays in the JSON
    repeated: bool
    is_map: bool
    # a message value (a map: its values): how to write and read it; None for scalars
    write: Writer | None
    read: Reader | None
    # a scalar value (a map: its values): from JSON, and back (None: as it is)
    to_wire: Callable[[Any], Any]
    from_wire: Callable[[Any], Any] | None


def _entry(field: FieldDescriptor, table: kube_types.Field | None) -> _Entry:
    json_name = table.json if table is not None else field.name
    keep_zero = table is not None and (table.pointer or not table.omitempty)
    target = field
    entry_type = field.message_type
    is_map = entry_type is not None and entry_type.GetOptions().map_entry
    if entry_type is not None and is_map:
        target = entry_type.fields_by_name["value"]
    writer: Writer | None = None
    reader: Reader | None = None
    if target.message_type is not None:
        name = target.message_type.full_name
        if name in _WRITERS:
            writer, reader = _WRITERS[name], _READERS[name]
        elif _list_wrapper(name):
            writer, reader = _write_items, _read_items
        else:
            writer, reader = _write_struct, read
    return _Entry(json_name, field.name, keep_zero, field.is_repeated and not is_map, is_map,
                  writer, reader, _to_wire(target.type), _from_wire(target.type))


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


# -- walking a message ---------------------------------------------------------------------

def fill(message: Message, doc: dict[str, Any]) -> None:
    """Set ``message``'s fields from the JSON object ``doc`` (fields it lacks stay unset;
    members the schema does not know are left out)."""
    plan = _plan(message.DESCRIPTOR.full_name)
    for name in plan.inline:
        member = getattr(message, name)
        member.SetInParent()  # gogo writes an embedded struct even when empty
        fill(member, doc)
    by_json = plan.by_json
    for key, value in doc.items():
        e = by_json.get(key)
        if e is None or value is None:
            continue
        writer = e.write
        if e.is_map:
            if not isinstance(value, dict):
                raise ValueError(f"{key}: expected an object, not {value!r}")
            target = getattr(message, e.name)
            for item_key, item in value.items():
                if item is None:
                    continue
                if writer is not None:
                    writer(target[item_key], item)
                else:
                    target[item_key] = e.to_wire(item)
        elif e.repeated:
            if not isinstance(value, list):
                raise ValueError(f"{key}: expected a list, not {value!r}")
            target = getattr(message, e.name)
            if writer is not None:
                for item in value:
                    writer(target.add(), item)
            else:
                target.extend([e.to_wire(item) for item in value])
        elif writer is not None:
            writer(getattr(message, e.name), value)
        else:
            setattr(message, e.name, e.to_wire(value))


def read(message: Message) -> dict[str, Any]:
    """``message`` as its JSON object (Go's JSON of the object gogo decodes it into); Go
    writes a struct even when it is empty."""
    by_name = _plan(message.DESCRIPTOR.full_name).by_name
    out: dict[str, Any] = {}
    for field, value in message.ListFields():  # the set fields only
        e = by_name[field.name]
        reader, from_wire = e.read, e.from_wire
        if not e.json:  # an inlined member
            out.update(read(value))
        elif e.is_map:
            if reader is not None:
                values = {k: reader(v) for k, v in value.items()}
                out[e.json] = {k: v for k, v in values.items() if v is not _OMIT}
            else:
                out[e.json] = {k: from_wire(v) if from_wire else v for k, v in value.items()}
        elif e.repeated:
            if reader is not None:
                items = [reader(v) for v in value]
                out[e.json] = [v for v in items if v is not _OMIT]
            else:
                out[e.json] = [from_wire(v) for v in value] if from_wire else list(value)
        elif reader is not None:
            found = reader(value)
            if found is not _OMIT:
                out[e.json] = found
        elif value or e.keep_zero:
            out[e.json] = from_wire(value) if from_wire else value
    return out
