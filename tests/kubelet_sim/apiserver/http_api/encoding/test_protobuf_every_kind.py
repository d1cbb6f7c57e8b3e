"""Every kind in the schema, with random content in every field: what the server reads from
a client's protobuf writes back to the same JSON (the converter's two directions agree on
each message, map, list, inline member and special type)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from k8s_protos import runtime_pb2
from kubelet_sim.api import kube_types
from kubelet_sim.apiserver.http.encoding import apiextensions, envelope, protobuf


def _special(message: Any, rng: random.Random, depth: int = 0) -> bool:
    """Give a specially encoded message a value valid in its JSON form; False for others."""
    name = message.DESCRIPTOR.full_name
    if name.startswith(apiextensions.PACKAGE):
        return _json_union(message, rng, depth)
    if name == protobuf.QUANTITY:
        message.string = rng.choice(["1", "100m", "2Gi", "0.5"])
    elif name == protobuf.TIME:
        message.seconds = rng.randrange(1, 2_000_000_000)
    elif name == protobuf.MICRO_TIME:
        message.seconds = rng.randrange(1, 2_000_000_000)
        message.nanos = rng.randrange(1_000_000) * 1000
    elif name == protobuf.DURATION:
        message.duration = rng.randrange(1, 10**13)
    elif name == protobuf.INT_OR_STRING:
        if rng.random() < 0.5:
            message.type, message.intVal = 0, rng.randrange(1, 65536)
        else:
            message.type, message.strVal = 1, "http"
    elif name == protobuf.RAW_EXTENSION:
        message.raw = json.dumps({"k": rng.random()}).encode()
    elif name == protobuf.FIELDS_V1:
        message.Raw = b'{"f:metadata":{}}'
    else:
        return False
    return True


def _json_union(message: Any, rng: random.Random, depth: int) -> bool:
    """apiextensions' JSON (a JSON text) and its unions (one side set, never neither: an
    empty one reads as JSON null, which Go's JSON decoder turns back into no value)."""
    name = message.DESCRIPTOR.full_name
    if name == apiextensions.JSON_VALUE:
        message.raw = json.dumps(rng.choice([1, 2.5, "text", True, [1, "a"], {"k": None}]),
                                 separators=(",", ":")).encode()
    elif name in (apiextensions.OR_ARRAY, apiextensions.OR_BOOL,
                  apiextensions.OR_STRING_ARRAY):
        if name == apiextensions.OR_BOOL and rng.random() < 0.5:
            message.allows = rng.random() < 0.5
        elif name == apiextensions.OR_STRING_ARRAY and rng.random() < 0.5:
            message.property.extend(["a", "b"])
        elif name == apiextensions.OR_ARRAY and rng.random() < 0.5:
            for _ in range(2):
                _fill_random(message.jSONSchemas.add(), rng, depth + 1)
        else:
            message.schema.SetInParent()
            _fill_random(message.schema, rng, depth + 1)
    else:
        return False
    return True


SCALARS: dict[int, Any] = {
    FieldDescriptor.TYPE_STRING: lambda r: r.choice(["a", "value", "x-y"]),
    FieldDescriptor.TYPE_BOOL: lambda r: r.random() < 0.5,
    FieldDescriptor.TYPE_INT32: lambda r: r.randrange(-5, 1000),
    FieldDescriptor.TYPE_INT64: lambda r: r.randrange(-5, 10**12),
    FieldDescriptor.TYPE_BYTES: lambda r: bytes(r.randrange(256) for _ in range(5)),
    FieldDescriptor.TYPE_DOUBLE: lambda r: r.choice([0.5, 1.0, 2.25]),
}


def _fill_random(message: Any, rng: random.Random, depth: int) -> None:
    if _special(message, rng, depth):
        return
    descriptor: Descriptor = message.DESCRIPTOR
    for field in descriptor.fields:
        if rng.random() < 0.4 or (field.message_type is not None and depth > 4):
            continue
        target = getattr(message, field.name)
        entry = field.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value_field = entry.fields_by_name["value"]
            for key in ("k1", "k2"):
                if value_field.message_type is not None:
                    _fill_random(target[key], rng, depth + 1)
                else:
                    target[key] = SCALARS[value_field.type](rng)
        elif field.is_repeated:
            for _ in range(2):
                if field.message_type is not None:
                    _fill_random(target.add(), rng, depth + 1)
                else:
                    target.append(SCALARS[field.type](rng))
        elif field.message_type is not None:
            target.SetInParent()
            _fill_random(target, rng, depth + 1)
        else:
            setattr(message, field.name, SCALARS[field.type](rng))


# every kind of the type table with a protobuf message (meta/v1 Table has none)
KINDS = sorted(k for k in kube_types.kinds() if envelope.message_of(*k.rsplit("/", 1)))


def test_all_but_the_table_kind_have_a_protobuf_message() -> None:
    assert set(kube_types.kinds()) - set(KINDS) == {"meta.k8s.io/v1/Table"}


@pytest.mark.parametrize("kind", KINDS)
def test_a_random_message_of_each_kind_reads_back_to_the_same_json(kind: str) -> None:
    api_version, name = kind.rsplit("/", 1)
    cls = envelope.message_of(api_version, name)
    assert cls is not None
    rng = random.Random(kind)
    for _ in range(3):
        message = cls()
        _fill_random(message, rng, 0)
        sent = runtime_pb2.Unknown(raw=message.SerializeToString())
        sent.typeMeta.apiVersion, sent.typeMeta.kind = api_version, name
        as_json = envelope.decode(envelope.MAGIC + sent.SerializeToString())
        again = envelope.encode(as_json)
        assert again is not None
        assert envelope.decode(again) == as_json
