"""Reaching a target (or staging) path the CO names without ever following a symlink,
and telling whether what is there may be used.

The driver mounts as root onto paths a request names, so every step is taken
through directory file descriptors opened with O_NOFOLLOW: a symlink anywhere on
the way is refused (FAILED_PRECONDITION) instead of being followed somewhere else,
and the checked inode is the one later mounted on.  Missing parent directories are
created (0750), as the reference driver does.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from enum import Enum

from csi_driver.errors import FailedPrecondition, InvalidArgument
from csi_driver.state import mountinfo

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
PARENT_MODE = 0o750
NAME_LIMIT = 255  # bytes in one path component (NAME_MAX)


def normalised_path(value: str, name: str) -> str:
    """A path field as the driver uses it: absolute, normalised (no empty, '.' or '..'
    component, no trailing slash: the path os.path.normpath leaves as it is), no NUL,
    no component over NAME_MAX bytes.  Anything else → INVALID_ARGUMENT, before any
    file is looked at."""
    if "\0" in value:
        raise InvalidArgument(f"{name} must not contain a NUL byte")
    if not value.startswith("/"):
        raise InvalidArgument(f"{name} {value!r} must be an absolute path")
    for part in value.split("/")[1:] if value != "/" else ():
        if part in ("", ".", ".."):
            raise InvalidArgument(f"{name} {value!r} must be normalised (no empty, '.' or "
                                  "'..' components, no trailing slash)")
        if len(part.encode("utf-8", "surrogateescape")) > NAME_LIMIT:
            raise InvalidArgument(f"{name} has a component longer than {NAME_LIMIT} bytes")
    return value


class Found(Enum):
    MISSING = "missing"
    EMPTY_DIR = "an empty directory"
    EMPTY_FILE = "an empty file"
    OTHER = "other"


def _open_dir(name: str, dir_fd: int, shown: str, create: bool) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FailedPrecondition(f"{shown} is a symlink or not a directory") from None
        raise
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, PARENT_MODE, dir_fd=dir_fd)
    return _open_dir(name, dir_fd, shown, create=False)


@contextlib.contextmanager
def parent_dir(path: str, create: bool = True) -> Iterator[tuple[int, str]]:
    """(fd of the directory holding ``path``, the last component of ``path``).

    ``path`` is absolute and normalised (validated at the edge).  Raises
    FAILED_PRECONDITION when a component on the way is a symlink or not a directory,
    FileNotFoundError when one is missing and ``create`` is False."""
    if path == "/":
        raise FailedPrecondition("the root directory cannot be a target")
    parts = path.rstrip("/").split("/")[1:]
    fd = os.open("/", _DIR_FLAGS)
    try:
        shown = ""
        for part in parts[:-1]:
            shown += "/" + part
            next_fd = _open_dir(part, fd, shown, create)
            os.close(fd)
            fd = next_fd
        yield fd, parts[-1]
    finally:
        os.close(fd)


def inspect(dir_fd: int, name: str, path: str) -> Found:
    """What is at ``name`` (no symlink followed).  A mount point, a symlink, a special
    file, or anything with contents is OTHER."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return Found.MISSING
    if mountinfo.is_mount_point(path):
        return Found.OTHER
    if stat.S_ISREG(st.st_mode):
        return Found.EMPTY_FILE if st.st_size == 0 else Found.OTHER
    if stat.S_ISDIR(st.st_mode):
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            return Found.OTHER if os.listdir(fd) else Found.EMPTY_DIR
        finally:
            os.close(fd)
    return Found.OTHER


def describe(dir_fd: int, name: str, path: str) -> str:
    """Why what is at ``path`` may not be used, for an error message."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return f"{path!r} does not exist"
    if mountinfo.is_mount_point(path):
        return f"{path!r} is already a mount point"
    if stat.S_ISLNK(st.st_mode):
        return f"{path!r} is a symlink"
    if stat.S_ISDIR(st.st_mode):
        return f"{path!r} is a directory that is not empty"
    if stat.S_ISREG(st.st_mode):
        return f"{path!r} is a file that is not empty"
    return f"{path!r} is not a plain file or directory"


def create(dir_fd: int, name: str, is_file: bool) -> None:
    """Create the empty target: a file (block volume) or a directory (filesystem)."""
    if is_file:
        os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o640, dir_fd=dir_fd))
    else:
        os.mkdir(name, PARENT_MODE, dir_fd=dir_fd)


def remove_if_empty(dir_fd: int, name: str, path: str) -> bool:
    """Remove the empty file or directory the driver created; leave anything else."""
    found = inspect(dir_fd, name, path)
    if found is Found.EMPTY_DIR:
        os.rmdir(name, dir_fd=dir_fd)
    elif found is Found.EMPTY_FILE:
        os.unlink(name, dir_fd=dir_fd)
    else:
        return False
    return True
