"""One `up` per state dir: an exclusive ``flock`` on ``DIR/up.lock``, held for the life
of the process (the kernel drops it when the process dies, kill -9 included), with the
holder's PID written inside so a refused second `up` can say who has the dir."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

LOCK_NAME = "up.lock"


class StateDirInUse(RuntimeError):
    """Another live process holds the state dir."""


class StateDirLock:
    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    @classmethod
    def acquire(cls, state_dir: Path) -> StateDirLock:
        """Take the dir's lock or raise :class:`StateDirInUse` naming the holder. Nothing
        in the dir is touched when the lock is refused."""
        path = state_dir / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise StateDirInUse(f"{state_dir} is in use by PID {holder}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd, path)

    def release(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = -1
