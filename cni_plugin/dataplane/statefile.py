"""A JSON state file changed only under an exclusive flock and replaced atomically.

Every change is written to a temp file, fsynced, renamed over the old one and
the directory fsynced, so a plugin killed at any point leaves either the old
or the new state, never a torn one.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cni_plugin.errors import ERR_IO_FAILURE, CNIError


def atomic_write(path: str, data: bytes) -> None:
    directory = os.path.dirname(path) or "."
    tmp = f"{path}.tmp.{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


class StateFile:
    def __init__(self, directory: str, name: str = "state.json") -> None:
        self.directory = directory
        self.path = os.path.join(directory, name)
        self.lock_path = os.path.join(directory, "lock")

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                data = json.load(f)
        except FileNotFoundError:
            return {}
        except ValueError as e:
            raise CNIError(ERR_IO_FAILURE, f"corrupt dataplane state {self.path}: {e}") from e
        return data if isinstance(data, dict) else {}

    @contextmanager
    def _locked(self, shared: bool) -> Iterator[None]:
        try:
            os.makedirs(self.directory, mode=0o755, exist_ok=True)
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise CNIError(ERR_IO_FAILURE,
                           f"cannot open dataplane state in {self.directory}: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing drops the lock

    @contextmanager
    def transaction(self) -> Iterator[dict[str, Any]]:
        """The state to change in place; written back (atomically) when the block succeeds."""
        with self._locked(shared=False):
            state = self._read()
            before = json.dumps(state, sort_keys=True)
            yield state
            after = json.dumps(state, sort_keys=True)
            if after != before:
                atomic_write(self.path, after.encode())

    def snapshot(self) -> dict[str, Any]:
        with self._locked(shared=True):
            return self._read()
