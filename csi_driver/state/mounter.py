"""Making volume data appear at a target path: a bind mount where this process may
mount (root), otherwise a symlink fallback.

The plugin creates the target (a directory for a filesystem volume, a file for a
block volume) and removes it at unpublish.  It only ever touches what it made:
a target that already exists is used only when it is an empty directory (or an
empty file, for block) that nothing is mounted on, and is left in place at
unpublish; anything else there is refused with FAILED_PRECONDITION, untouched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

from csi_driver.errors import FailedPrecondition
from csi_driver.state import mountinfo, target_paths
from csi_driver.state.target_paths import Found

log = logging.getLogger(__name__)
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
UMOUNT_NOFOLLOW = 8

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _fd_path(fd: int) -> bytes:
    return f"/proc/self/fd/{fd}".encode()


def bind(source: str, dir_fd: int, name: str, readonly: bool) -> None:
    """Bind ``source`` onto the inode ``name`` in ``dir_fd`` names (reached through a
    descriptor, so no symlink swapped in meanwhile is followed)."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        _check(_libc.mount(os.fsencode(source), _fd_path(fd), None, MS_BIND, None),
               "bind mount")
    finally:
        os.close(fd)
    if not readonly:
        return
    # The descriptor above names the covered inode; the new mount's root is reached
    # by looking the name up again.
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        result = _libc.mount(None, _fd_path(fd), None, MS_BIND | MS_REMOUNT | MS_RDONLY, None)
        if result != 0:
            err = ctypes.get_errno()
            _libc.umount2(_fd_path(fd), 0)
            raise OSError(err, f"read-only remount: {os.strerror(err)}")
    finally:
        os.close(fd)


def unmount(path: str) -> None:
    _check(_libc.umount2(os.fsencode(path), UMOUNT_NOFOLLOW), "unmount")


def same_inode(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def shows(source: str, target: str) -> bool:
    """Whether ``target`` is a mount point whose top mount shows ``source`` (a bind
    mount's root is the source's own inode)."""
    if not mountinfo.is_mount_point(target):
        return False
    try:
        return same_inode(os.stat(source), os.lstat(target))
    except OSError:
        return False


class Mounter:
    """``method`` is "bind" or "symlink"; ``choose`` picks it from the config's setting."""

    def __init__(self, method: str) -> None:
        self.method = method

    @staticmethod
    def choose(setting: str) -> Mounter:
        if setting == "auto":
            return Mounter("bind" if os.geteuid() == 0 else "symlink")
        return Mounter(setting)

    def publish(self, source: str, target: str, is_block: bool, readonly: bool) -> bool:
        """Make ``source`` appear at ``target``; True when the driver created ``target``.

        A missing target (and any missing parent) is created; an empty directory (an
        empty file for block) that is not a mount point is used as it is; anything
        else → FAILED_PRECONDITION with nothing changed."""
        with target_paths.parent_dir(target) as (dir_fd, name):
            found = target_paths.inspect(dir_fd, name, target)
            usable = Found.EMPTY_FILE if is_block else Found.EMPTY_DIR
            if found not in (Found.MISSING, usable):
                raise FailedPrecondition(
                    "target_path cannot be used: "
                    + target_paths.describe(dir_fd, name, target)
                    + ("" if found is not Found.EMPTY_DIR else " (a block volume needs a file)")
                )
            created = found is Found.MISSING
            if self.method == "symlink":
                if not created:  # the link takes the place of the empty dir or file
                    self._remove(dir_fd, name, is_block)
                os.symlink(source, name, dir_fd=dir_fd)
                return created
            if created:
                target_paths.create(dir_fd, name, is_block)
            try:
                bind(source, dir_fd, name, readonly)
            except OSError:
                if created:
                    target_paths.remove_if_empty(dir_fd, name, target)
                raise
            return created

    @staticmethod
    def _remove(dir_fd: int, name: str, is_block: bool) -> None:
        if is_block:
            os.unlink(name, dir_fd=dir_fd)
        else:
            os.rmdir(name, dir_fd=dir_fd)

    def is_published(self, source: str, target: str) -> bool:
        if self.method == "symlink":
            return os.path.islink(target) and os.readlink(target) == source
        return shows(source, target)

    def unpublish(self, source: str, target: str, is_block: bool, created: bool) -> None:
        """Undo ``publish``: unmount our mount (never another one stacked on it) and
        remove ``target`` only if the driver created it and it is empty again.  What
        is already gone is fine."""
        try:
            with target_paths.parent_dir(target, create=False) as (dir_fd, name):
                if self.method == "symlink":
                    self._unlink_symlink(dir_fd, name, source, is_block, created)
                    return
                while shows(source, target):  # stacked copies of our own mount, too
                    unmount(target)
                if mountinfo.is_mount_point(target):
                    log.warning("left %s: something else is mounted there", target)
                    return
                if created and not target_paths.remove_if_empty(dir_fd, name, target):
                    log.warning("left %s: it is no longer the empty target the driver made",
                                target)
        except FileNotFoundError:
            return

    @staticmethod
    def _unlink_symlink(dir_fd: int, name: str, source: str, is_block: bool,
                        created: bool) -> None:
        try:
            if os.readlink(name, dir_fd=dir_fd) != source:
                return
        except OSError:  # gone, or not a symlink: not ours to touch
            return
        os.unlink(name, dir_fd=dir_fd)
        if not created:  # put back the empty dir or file the link replaced
            target_paths.create(dir_fd, name, is_block)

    def restore(self, source: str, target: str, is_block: bool, readonly: bool) -> bool:
        """Re-establish a recorded publish (after a restart, or when the CO repeats it).
        True when something was redone.  Only a target that is still the empty dir or
        file the driver left is used again; anything else → FAILED_PRECONDITION."""
        if self.is_published(source, target):
            return False
        with target_paths.parent_dir(target, create=False) as (dir_fd, name):
            found = target_paths.inspect(dir_fd, name, target)
            if self.method == "symlink" or found is not (
                Found.EMPTY_FILE if is_block else Found.EMPTY_DIR
            ):
                raise FailedPrecondition(
                    "the recorded publish cannot be re-established: "
                    + target_paths.describe(dir_fd, name, target)
                )
            bind(source, dir_fd, name, readonly)
        return True
