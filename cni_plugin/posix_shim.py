"""The few `os` services the exec path uses, taken from the builtin `posix` module.

Importing `os` costs every plugin start about 1 ms (it loads _collections_abc, stat,
posixpath and genericpath and builds os.environ): a seventh of the interpreter's own
start. The functions below are `posix`'s own, or path text handling with the rules
of posixpath (join, dirname, basename, normpath) and os.makedirs, so callers see the
same results and the same OSErrors; run_captured stands in for subprocess.run. The
installer, which is not on the exec path, uses `os` itself.
"""

from __future__ import annotations

import posix
import sys
from posix import (
    O_CLOEXEC,
    O_CREAT,
    O_DIRECTORY,
    O_RDONLY,
    O_RDWR,
    O_TRUNC,
    O_WRONLY,
    POSIX_SPAWN_DUP2,
    W_OK,
    X_OK,
    _exit,
    access,
    close,
    fsync,
    geteuid,
    getpid,
    link,
    listdir,
    mkdir,
    pipe,
    posix_spawn,
    read,
    readlink,
    replace,
    scandir,
    symlink,
    unlink,
    urandom,
    waitpid,
    waitstatus_to_exitcode,
    write,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import NoReturn

__all__ = [
    "O_CLOEXEC",
    "O_CREAT",
    "O_DIRECTORY",
    "O_RDONLY",
    "O_RDWR",
    "O_TRUNC",
    "O_WRONLY",
    "POSIX_SPAWN_DUP2",
    "W_OK",
    "X_OK",
    "_exit",
    "abspath",
    "access",
    "basename",
    "close",
    "device",
    "dirname",
    "environ_copy",
    "exists",
    "fsync",
    "getenv",
    "geteuid",
    "getpid",
    "isfile",
    "join",
    "link",
    "listdir",
    "makedirs",
    "mkdir",
    "normpath",
    "open_fd",
    "pipe",
    "posix_spawn",
    "read",
    "readlink",
    "replace",
    "run_captured",
    "run_then_exit",
    "scandir",
    "symlink",
    "unlink",
    "urandom",
    "waitpid",
    "waitstatus_to_exitcode",
    "write",
]

open_fd = posix.open  # os.open (a file descriptor), named so as not to shadow open()

_ENCODING = sys.getfilesystemencoding()
_ERRORS = sys.getfilesystemencodeerrors()
_S_IFMT, _S_IFREG, _S_IFDIR = 0o170000, 0o100000, 0o040000


def _decode(raw: bytes) -> str:
    return raw.decode(_ENCODING, _ERRORS)


# posix.environ is the environment the process started with; os.environ starts as its
# copy but follows later changes. Where `os` is loaded (a host calling a plugin
# in-process) it is the one to read; an exec'd plugin has not loaded it.


def getenv(name: str) -> str | None:
    """os.environ.get(name)."""
    os_module = sys.modules.get("os")
    if os_module is not None:
        value: str | None = os_module.environ.get(name)
        return value
    raw = posix.environ.get(name.encode(_ENCODING, _ERRORS))
    return None if raw is None else _decode(raw)


def environ_copy() -> dict[str, str]:
    """dict(os.environ)."""
    os_module = sys.modules.get("os")
    if os_module is not None:
        return dict(os_module.environ)
    return {_decode(key): _decode(value) for key, value in posix.environ.items()}


def join(first: str, *rest: str) -> str:
    path = first
    for part in rest:
        if part.startswith("/"):
            path = part
        elif not path or path.endswith("/"):
            path += part
        else:
            path += "/" + part
    return path


def _split(path: str) -> tuple[str, str]:
    cut = path.rfind("/") + 1
    head, tail = path[:cut], path[cut:]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, tail


def dirname(path: str) -> str:
    return _split(path)[0]


def basename(path: str) -> str:
    return path[path.rfind("/") + 1:]


def normpath(path: str) -> str:
    if not path:
        return "."
    # POSIX keeps exactly two leading slashes; one, or three and more, become one.
    leading = 2 if path.startswith("//") and not path.startswith("///") else \
        1 if path.startswith("/") else 0
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part != ".." or (not leading and not parts) or (parts and parts[-1] == ".."):
            parts.append(part)
        elif parts:
            parts.pop()
    return "/" * leading + "/".join(parts) or "."


def abspath(path: str) -> str:
    if not path.startswith("/"):
        path = join(posix.getcwd(), path)
    return normpath(path)


def _stat(path: str) -> posix.stat_result | None:
    try:
        return posix.stat(path)
    except (OSError, ValueError):
        return None


def _mode(path: str) -> int | None:
    st = _stat(path)
    return None if st is None else st.st_mode


def device(path: str) -> int | None:
    """st_dev of what `path` names (links followed); None if it cannot be stat'ed."""
    st = _stat(path)
    return None if st is None else st.st_dev


def exists(path: str) -> bool:
    return _mode(path) is not None


def isfile(path: str) -> bool:
    mode = _mode(path)
    return mode is not None and mode & _S_IFMT == _S_IFREG


def _isdir(path: str) -> bool:
    mode = _mode(path)
    return mode is not None and mode & _S_IFMT == _S_IFDIR


def makedirs(name: str, mode: int = 0o777, exist_ok: bool = False) -> None:
    """os.makedirs: missing parents are made with the default mode, then `name`."""
    head, tail = _split(name)
    if not tail:
        head, tail = _split(head)
    if head and tail and not exists(head):
        try:  # noqa: SIM105 - contextlib is what this module avoids importing
            makedirs(head, exist_ok=exist_ok)
        except FileExistsError:
            pass  # made meanwhile by another process
        if tail == ".":
            return
    try:
        mkdir(name, mode)
    except OSError:
        if not exist_ok or not _isdir(name):
            raise


def run_captured(argv: list[str], stdin_data: bytes,
                 env: Mapping[str, str]) -> tuple[int, bytes, bytes]:
    """Spawn argv[0] (a path) with pipes on 0, 1 and 2; (exit code, stdout, stderr).

    posix_spawn and select rather than subprocess, whose import alone costs
    more than a whole IPAM call.
    """
    import _signal
    import select

    in_r, in_w = pipe()
    out_r, out_w = pipe()
    err_r, err_w = pipe()
    try:
        pid = posix_spawn(argv[0], argv, dict(env), file_actions=[
            (POSIX_SPAWN_DUP2, in_r, 0), (POSIX_SPAWN_DUP2, out_w, 1),
            (POSIX_SPAWN_DUP2, err_w, 2)],
            # Python ignores these; the child gets the default back, as subprocess does.
            setsigdef=(_signal.SIGPIPE, _signal.SIGXFSZ))
    except OSError:
        for fd in (in_r, in_w, out_r, out_w, err_r, err_w):
            close(fd)
        raise
    for fd in (in_r, out_w, err_w):
        close(fd)
    pending = memoryview(stdin_data)
    chunks: dict[int, list[bytes]] = {out_r: [], err_r: []}
    readers = [out_r, err_r]
    writers = [in_w] if pending else []
    if not pending:
        close(in_w)
    try:
        while readers or writers:
            readable, writable, _ = select.select(readers, writers, [])
            if writable:
                try:
                    pending = pending[write(in_w, pending[:65536]):]
                except BrokenPipeError:
                    pending = pending[:0]
                if not pending:
                    close(in_w)
                    writers = []
            for fd in readable:
                data = read(fd, 65536)
                if data:
                    chunks[fd].append(data)
                else:
                    readers.remove(fd)
                    close(fd)
    finally:
        for fd in (*readers, *writers):
            close(fd)
        _, status = waitpid(pid, 0)
    return waitstatus_to_exitcode(status), b"".join(chunks[out_r]), b"".join(chunks[err_r])


def run_then_exit(main: Callable[[], object]) -> NoReturn:
    """Run a plugin's main() and end the process as its sys.exit() would, without the
    interpreter's teardown (freeing every module and object: a millisecond or two that a
    short-lived plugin does not need). Exit handlers run and stdout and stderr are
    flushed first; an exception other than SystemExit ends the process the usual way."""
    import atexit

    try:
        main()
        code: object = None
    except SystemExit as done:
        code = done.code
    atexit._run_exitfuncs()
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code & 0xFF
    else:
        sys.stderr.write(f"{code}\n")
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed by the reader: nothing more to deliver
            status = status or 120
    posix._exit(status)
