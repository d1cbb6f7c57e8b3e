"""A JSON state file changed only under an exclusive flock and replaced atomically.

Every change is written to a temp file, fsynced, renamed over the old one and
the directory fsynced, so a plugin killed at any point leaves either the old
or the new state, never a torn one.
"""

from __future__ import annotations

import fcntl

from cni_plugin import posix_shim as posix_shim
from cni_spec.errors import ERR_IO_FAILURE, CNIError
from cni_spec.gojson import dumps_compact, loads

TYPE_CHECKING = False
if TYPE_CHECKING:
    from types import TracebackType
    from typing import Any

    from cni_plugin.dataplane.shards import ShardedState


def atomic_write(path: str, data: bytes) -> None:
    directory = posix_shim.dirname(path) or "."
    tmp = f"{path}.tmp.{posix_shim.getpid()}"
    fd = posix_shim.open_fd(
        tmp, posix_shim.O_WRONLY | posix_shim.O_CREAT | posix_shim.O_TRUNC, 0o600)
    try:
        posix_shim.write(fd, data)
        posix_shim.fsync(fd)
    finally:
        posix_shim.close(fd)
    posix_shim.replace(tmp, path)
    fsync_directory(directory)


def fsync_directory(directory: str) -> None:
    """Make the directory's entries (a rename, a new or removed name) durable."""
    fd = posix_shim.open_fd(directory, posix_shim.O_RDONLY | posix_shim.O_DIRECTORY)
    try:
        posix_shim.fsync(fd)
    finally:
        posix_shim.close(fd)


class Lock:
    """flock on the state's lock file, held while the `with` block runs."""

    def __init__(self, state: StateFile | ShardedState, shared: bool) -> None:
        self.state = state
        self.shared = shared
        self.fd = -1

    def __enter__(self) -> None:
        try:
            posix_shim.makedirs(self.state.directory, mode=0o755, exist_ok=True)
            self.fd = posix_shim.open_fd(
                self.state.lock_path, posix_shim.O_RDWR | posix_shim.O_CREAT, 0o600)
        except OSError as e:
            raise CNIError(ERR_IO_FAILURE,
                           f"cannot open dataplane state in {self.state.directory}: {e}") from e
        fcntl.flock(self.fd, fcntl.LOCK_SH if self.shared else fcntl.LOCK_EX)

    def __exit__(self, *exc: object) -> None:
        posix_shim.close(self.fd)  # closing drops the lock


class LockedTransaction:
    """Read under the exclusive lock on entry, write back when the block succeeds."""

    def __init__(self, state: StateFile | ShardedState) -> None:
        self.lock = Lock(state, shared=False)
        self.data: dict[str, Any] = {}

    def read(self) -> dict[str, Any]:
        raise NotImplementedError

    def write(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> dict[str, Any]:
        self.lock.__enter__()
        try:
            self.data = self.read()
        except BaseException:
            self.lock.__exit__()
            raise
        return self.data

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            if exc_type is None:
                self.write()
        finally:
            self.lock.__exit__()


class _Transaction(LockedTransaction):
    def __init__(self, state: StateFile) -> None:
        super().__init__(state)
        self.state = state
        self.before = ""

    def read(self) -> dict[str, Any]:
        # the text as read stands for the state before (the file holds what
        # dumps_compact wrote): one encoding per transaction, not two
        self.before, data = self.state.read_text_unlocked()
        return data

    def write(self) -> None:
        after = dumps_compact(self.data)
        if after != self.before:
            atomic_write(self.state.path, after.encode())


class StateFile:
    def __init__(self, directory: str, name: str = "state.json") -> None:
        self.directory = directory
        self.path = posix_shim.join(directory, name)
        self.lock_path = posix_shim.join(directory, "lock")

    def read_unlocked(self) -> dict[str, Any]:
        return self.read_text_unlocked()[1]

    def read_text_unlocked(self) -> tuple[str, dict[str, Any]]:
        """The file's text and the state it holds ("{}" and {} when there is none)."""
        try:
            with open(self.path, "rb") as f:
                raw = f.read()
            data = loads(raw)
        except FileNotFoundError:
            return "{}", {}
        except ValueError as e:
            raise CNIError(ERR_IO_FAILURE, f"corrupt dataplane state {self.path}: {e}") from e
        if not isinstance(data, dict):
            return "", {}
        return raw.decode(), data

    def transaction(self) -> _Transaction:
        """`with state.transaction() as data:` change data in place; it is written back
        (atomically) when the block succeeds, and dropped when it raises."""
        return _Transaction(self)

    def snapshot(self) -> dict[str, Any]:
        with Lock(self, shared=True):
            return self.read_unlocked()
