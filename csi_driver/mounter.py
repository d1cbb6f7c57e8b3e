"""Making volume data appear at a target path: a bind mount where this process
may mount (root), otherwise a symlink fallback.  The plugin creates the target
(a directory for a filesystem volume, a file for a block volume) and removes it."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MNT_DETACH = 2

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def mount_points() -> set[str]:
    """Every mount point of this mount namespace (from /proc/self/mountinfo)."""
    points: set[str] = set()
    with open("/proc/self/mountinfo", encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4:
                points.add(fields[4].encode().decode("unicode_escape"))
    return points


def is_mount_point(path: str) -> bool:
    return os.path.realpath(path) in mount_points()


class Mounter:
    """``method`` is "bind" or "symlink"; ``choose`` picks it from the config's setting."""

    def __init__(self, method: str) -> None:
        self.method = method

    @staticmethod
    def choose(setting: str) -> Mounter:
        if setting == "auto":
            return Mounter("bind" if os.geteuid() == 0 else "symlink")
        return Mounter(setting)

    def publish(self, source: str, target: str, is_block: bool, readonly: bool) -> None:
        """Create ``target`` (and, like the reference driver, any missing parent) and
        make ``source`` appear there."""
        os.makedirs(os.path.dirname(target.rstrip("/")) or "/", exist_ok=True)
        if self.method == "symlink":
            if os.path.islink(target):
                os.unlink(target)
            elif os.path.isdir(target):
                os.rmdir(target)
            os.symlink(source, target)
            return
        self._create_target(target, is_block)
        try:
            self._bind(source, target, readonly)
        except OSError:
            self._remove_target(target)
            raise

    @staticmethod
    def _create_target(target: str, is_block: bool) -> None:
        if is_block:
            if not os.path.exists(target):
                with open(target, "ab"):
                    pass
        else:
            os.makedirs(target, exist_ok=True)

    @staticmethod
    def _bind(source: str, target: str, readonly: bool) -> None:
        _check(_libc.mount(source.encode(), target.encode(), None, MS_BIND, None), "bind mount")
        if readonly:
            flags = MS_BIND | MS_REMOUNT | MS_RDONLY
            result = _libc.mount(None, target.encode(), None, flags, None)
            if result != 0:
                _libc.umount2(target.encode(), MNT_DETACH)
                _check(result, "read-only remount")

    def is_published(self, source: str, target: str) -> bool:
        if self.method == "symlink":
            return os.path.islink(target) and os.readlink(target) == source
        return is_mount_point(target)

    def unpublish(self, target: str) -> None:
        """Undo ``publish`` and remove ``target``; what is already gone is fine."""
        if os.path.islink(target):
            os.unlink(target)
            return
        while os.path.lexists(target) and is_mount_point(target):
            _check(_libc.umount2(target.encode(), 0), "unmount")
        self._remove_target(target)

    @staticmethod
    def _remove_target(target: str) -> None:
        if os.path.isdir(target) and not os.path.islink(target):
            os.rmdir(target)
        elif os.path.lexists(target):
            os.unlink(target)

    def repair(self, source: str, target: str, is_block: bool, readonly: bool) -> bool:
        """Re-establish a recorded publish after a restart; True when something was redone."""
        if self.is_published(source, target):
            return False
        self.publish(source, target, is_block, readonly)
        return True
