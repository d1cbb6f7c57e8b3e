"""This process's mount table, read from /proc/self/mountinfo.

The kernel writes each mount point as raw bytes with four characters escaped as
three-digit octal (space ``\\040``, tab ``\\011``, newline ``\\012``, backslash
``\\134``); everything else, non-ASCII included, is left as it is.  So the file is
read as bytes, split on spaces, unescaped, and decoded as file names are
(``os.fsdecode``), which round-trips any name ``os.stat`` accepts.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

_OCTAL = re.compile(rb"\\([0-7]{3})")
MOUNTINFO = "/proc/self/mountinfo"


@dataclass(frozen=True)
class MountEntry:
    mount_id: int
    parent_id: int
    root: str  # the path inside the mounted filesystem that appears at mount_point
    mount_point: str
    fs_type: str
    source: str


def unescape(field: bytes) -> str:
    return os.fsdecode(_OCTAL.sub(lambda m: bytes([int(m.group(1), 8)]), field))


def parse(text: bytes) -> list[MountEntry]:
    """Entries in mount order (a later entry at the same point is stacked on top)."""
    entries = []
    for line in text.splitlines():
        fields = line.split(b" ")
        try:
            sep = fields.index(b"-", 6)  # optional fields end at a lone "-"
            entries.append(MountEntry(
                mount_id=int(fields[0]),
                parent_id=int(fields[1]),
                root=unescape(fields[3]),
                mount_point=unescape(fields[4]),
                fs_type=unescape(fields[sep + 1]),
                source=unescape(fields[sep + 2]),
            ))
        except (ValueError, IndexError):
            continue  # not a mountinfo line
    return entries


def read(path: str = MOUNTINFO) -> list[MountEntry]:
    with open(path, "rb") as f:
        return parse(f.read())


def mounts_at(path: str, entries: list[MountEntry] | None = None) -> list[MountEntry]:
    """The mounts whose mount point is exactly ``path`` (an absolute, symlink-free path),
    bottom first."""
    return [e for e in (read() if entries is None else entries) if e.mount_point == path]


def is_mount_point(path: str) -> bool:
    return bool(mounts_at(path))
