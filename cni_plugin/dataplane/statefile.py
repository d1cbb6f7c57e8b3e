"""A JSON state file changed only under an exclusive flock and replaced atomically.

Every change is written to a temp file, fsynced, renamed over the old one and
the directory fsynced, so a plugin killed at any point leaves either the old
or the new state, never a torn one.
"""

from __future__ import annotations

import fcntl

from cni_plugin import lightos
from cni_plugin.errors import ERR_IO_FAILURE, CNIError
from cni_plugin.gojson import dumps_compact, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any


def atomic_write(path: str, data: bytes) -> None:
    directory = lightos.dirname(path) or "."
    tmp = f"{path}.tmp.{lightos.getpid()}"
    fd = lightos.open_fd(tmp, lightos.O_WRONLY | lightos.O_CREAT | lightos.O_TRUNC, 0o600)
    try:
        lightos.write(fd, data)
        lightos.fsync(fd)
    finally:
        lightos.close(fd)
    lightos.replace(tmp, path)
    dir_fd = lightos.open_fd(directory, lightos.O_RDONLY | lightos.O_DIRECTORY)
    try:
        lightos.fsync(dir_fd)
    finally:
        lightos.close(dir_fd)


class _Lock:
    """flock on the state's lock file, held while the `with` block runs."""

    def __init__(self, state: StateFile, shared: bool) -> None:
        self.state = state
        self.shared = shared
        self.fd = -1

    def __enter__(self) -> None:
        try:
            lightos.makedirs(self.state.directory, mode=0o755, exist_ok=True)
            self.fd = lightos.open_fd(self.state.lock_path, lightos.O_RDWR | lightos.O_CREAT, 0o600)
        except OSError as e:
            raise CNIError(ERR_IO_FAILURE,
                           f"cannot open dataplane state in {self.state.directory}: {e}") from e
        fcntl.flock(self.fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        lightos.close(self.fd)  # closing drops the lock


class _Transaction:
    def __init__(self, state: StateFile) -> None:
        self.state = state
        self.lock = _Lock(state, shared=False)
        self.data: dict[str, Any] = {}
        self.before = ""

    def __enter__(self) -> dict[str, Any]:
        self.lock.__enter__()
        try:
            self.data = self.state.read_unlocked()
        except BaseException:
            self.lock.__exit__()
            raise
        self.before = dumps_compact(self.data)
        return self.data

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc_type is None:
                after = dumps_compact(self.data)
                if after != self.before:
                    atomic_write(self.state.path, after.encode())
        finally:
            self.lock.__exit__()


class StateFile:
    def __init__(self, directory: str, name: str = "state.json") -> None:
        self.directory = directory
        self.path = lightos.join(directory, name)
        self.lock_path = lightos.join(directory, "lock")

    def read_unlocked(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as f:
                data = loads(f.read())
        except FileNotFoundError:
            return {}
        except ValueError as e:
            raise CNIError(ERR_IO_FAILURE, f"corrupt dataplane state {self.path}: {e}") from e
        return data if isinstance(data, dict) else {}

    def transaction(self) -> _Transaction:
        """`with state.transaction() as data:` change data in place; it is written back
        (atomically) when the block succeeds, and dropped when it raises."""
        return _Transaction(self)

    def snapshot(self) -> dict[str, Any]:
        with _Lock(self, shared=True):
            return self.read_unlocked()
