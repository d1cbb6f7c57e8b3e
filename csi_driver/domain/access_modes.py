"""Access-mode rules of CSI v1.12 (values match csi.v1 VolumeCapability.AccessMode.Mode)."""

from __future__ import annotations

import functools
from enum import IntEnum

from csi_driver.errors import InvalidArgument
from csi_driver.state.records import VolumeCapability


class AccessMode(IntEnum):
    UNKNOWN = 0
    SINGLE_NODE_WRITER = 1
    SINGLE_NODE_READER_ONLY = 2
    MULTI_NODE_READER_ONLY = 3
    MULTI_NODE_SINGLE_WRITER = 4
    MULTI_NODE_MULTI_WRITER = 5
    SINGLE_NODE_SINGLE_WRITER = 6
    SINGLE_NODE_MULTI_WRITER = 7


SINGLE_NODE = frozenset(
    {
        AccessMode.SINGLE_NODE_WRITER,
        AccessMode.SINGLE_NODE_READER_ONLY,
        AccessMode.SINGLE_NODE_SINGLE_WRITER,
        AccessMode.SINGLE_NODE_MULTI_WRITER,
    }
)
READER_ONLY = frozenset({AccessMode.SINGLE_NODE_READER_ONLY, AccessMode.MULTI_NODE_READER_ONLY})
SINGLE_NODE_MULTI_WRITER_MODES = frozenset(
    {AccessMode.SINGLE_NODE_SINGLE_WRITER, AccessMode.SINGLE_NODE_MULTI_WRITER}
)


@functools.cache
def supported_modes(single_node_multi_writer: bool) -> frozenset[AccessMode]:
    """Every mode except UNKNOWN; the two SINGLE_NODE_*_WRITER modes need their capability."""
    modes = {m for m in AccessMode if m is not AccessMode.UNKNOWN}
    if not single_node_multi_writer:
        modes -= SINGLE_NODE_MULTI_WRITER_MODES
    return frozenset(modes)


def is_single_node(mode: int) -> bool:
    return mode in SINGLE_NODE


def is_reader_only(mode: int) -> bool:
    return mode in READER_ONLY


def unsupported_reason(cap: VolumeCapability, single_node_multi_writer: bool) -> str:
    """Why this capability cannot be served, or "" when it can."""
    if cap.access_mode not in supported_modes(single_node_multi_writer):
        try:
            name = AccessMode(cap.access_mode).name
        except ValueError:
            name = str(cap.access_mode)
        return f"access mode {name} is not supported"
    if cap.access_type not in ("mount", "block"):
        return f"access type {cap.access_type!r} is not supported"
    if cap.access_type == "block" and cap.fs_type:
        return "a block capability has no fs_type"
    return ""


def require_supported(cap: VolumeCapability, single_node_multi_writer: bool) -> None:
    reason = unsupported_reason(cap, single_node_multi_writer)
    if reason:
        raise InvalidArgument(reason)


def access_type_of(caps: tuple[VolumeCapability, ...]) -> str:
    """The one access type a set of capabilities asks for; mixing block and mount is invalid."""
    kinds = {c.access_type for c in caps}
    if len(kinds) != 1:
        raise InvalidArgument("volume capabilities must not mix block and mount access")
    return kinds.pop()


def require_readonly_when_reader_only(cap: VolumeCapability, readonly: bool) -> None:
    """A reader-only mode may only be published read-only."""
    if is_reader_only(cap.access_mode) and not readonly:
        raise InvalidArgument(
            f"access mode {AccessMode(cap.access_mode).name} requires a readonly publish"
        )
