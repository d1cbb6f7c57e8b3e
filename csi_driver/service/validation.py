"""Request checks and proto → domain conversions shared by the servicers.

Size limits follow the spec's table: strings 128 bytes, maps 4 KiB, node_id 256
bytes; path fields override the general limit (we accept up to PATH_MAX).  No string
field may hold a NUL byte.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from csi_driver.domain.volumes import CapacityRange
from csi_driver.errors import InvalidArgument
from csi_driver.state.records import Topology, VolumeCapability
from csi_driver.state.target_paths import normalised_path
from csi_protos import csi_pb2

STRING_LIMIT = 128
MAP_LIMIT = 4096
NODE_ID_LIMIT = 256
PATH_LIMIT = 4096
PATH_FIELDS = frozenset({"target_path", "staging_target_path", "volume_path", "staging_path"})
_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def _limit_for(name: str) -> int:
    if name in PATH_FIELDS:
        return PATH_LIMIT
    if name == "node_id":
        return NODE_ID_LIMIT
    return STRING_LIMIT


def _check_text(text: str, name: str, limit: int | None) -> None:
    if "\0" in text:
        raise InvalidArgument(f"{name} contains a NUL byte")
    if limit is not None and len(text.encode()) > limit:
        raise InvalidArgument(f"{name} exceeds the {limit}-byte limit")


def check_string_fields(message: Message, where: str = "") -> None:
    """Walk every set field, nested, repeated and map ones included: a string above its
    size limit, a map above 4 KiB, or a NUL byte anywhere (no id, name, path or key
    may hold one) → INVALID_ARGUMENT.  Messages name the field, never its value (it
    may be a secret)."""
    for fd, value in message.ListFields():
        name = f"{where}{fd.name}"
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            total = 0
            for key, item in value.items():
                _check_text(key, f"a key of {name}", None)
                _check_text(str(item), f"the value of a {name} entry", None)
                total += len(key.encode()) + len(str(item).encode())
            if total > MAP_LIMIT:
                raise InvalidArgument(f"{name} exceeds the {MAP_LIMIT}-byte map limit")
        elif fd.type == _STRING:
            limit = _limit_for(fd.name)
            items = value if fd.is_repeated else [value]
            for item in items:
                _check_text(item, name, limit)
        elif fd.type == _MESSAGE:
            items = value if fd.is_repeated else [value]
            for item in items:
                check_string_fields(item, name + ".")


def require_path(value: str, name: str) -> str:
    require(value, name)
    return normalised_path(value, name)


def require(value: object, name: str) -> None:
    if not value:
        raise InvalidArgument(f"{name} is required")


def capability(cap: csi_pb2.VolumeCapability, name: str = "volume_capability") -> VolumeCapability:
    """A present, complete capability as a domain value (missing parts → INVALID_ARGUMENT)."""
    if not cap.HasField("access_mode"):
        raise InvalidArgument(f"{name}.access_mode is required")
    kind = cap.WhichOneof("access_type")
    if kind is None:
        raise InvalidArgument(f"{name}.access_type (mount or block) is required")
    mode = cap.access_mode.mode
    if mode == csi_pb2.VolumeCapability.AccessMode.UNKNOWN:
        raise InvalidArgument(f"{name}.access_mode.mode must not be UNKNOWN")
    if kind == "mount":
        return VolumeCapability(
            "mount",
            mode,
            cap.mount.fs_type,
            tuple(cap.mount.mount_flags),
            cap.mount.volume_mount_group,
        )
    return VolumeCapability("block", mode)


def required_capability(
    request: Message, field: str = "volume_capability"
) -> VolumeCapability:
    if not request.HasField(field):
        raise InvalidArgument(f"{field} is required")
    return capability(getattr(request, field), field)


def capabilities(caps: object, field: str = "volume_capabilities") -> tuple[VolumeCapability, ...]:
    items = list(caps)  # type: ignore[call-overload]
    if not items:
        raise InvalidArgument(f"{field} is required")
    return tuple(capability(c, f"{field}[{i}]") for i, c in enumerate(items))


def capacity_range(request: Message) -> CapacityRange:
    if not request.HasField("capacity_range"):
        return CapacityRange()
    rng = request.capacity_range  # type: ignore[attr-defined]
    result = CapacityRange(rng.required_bytes, rng.limit_bytes)
    result.check()
    return result


def topologies(items: object) -> tuple[Topology, ...]:
    return tuple(dict(t.segments) for t in items)  # type: ignore[attr-defined]


def to_capability(cap: VolumeCapability) -> csi_pb2.VolumeCapability:
    message = csi_pb2.VolumeCapability(
        access_mode=csi_pb2.VolumeCapability.AccessMode(mode=cap.access_mode)  # type: ignore[arg-type]
    )
    if cap.access_type == "block":
        message.block.SetInParent()
    else:
        message.mount.fs_type = cap.fs_type
        message.mount.mount_flags.extend(cap.mount_flags)
        message.mount.volume_mount_group = cap.volume_mount_group
    return message
