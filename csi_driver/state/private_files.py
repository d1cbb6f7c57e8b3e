"""The driver's files are private: directories 0700, files 0600, whatever the umask.

``main`` also sets the umask to 077 before anything is created; these helpers make
the modes hold for servers built in-process (tests, embedding) and for state dirs
made by an older version."""

from __future__ import annotations

import os

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_dir(path: str) -> None:
    """Create ``path`` (and parents) 0700, or tighten an existing one to 0700."""
    os.makedirs(path, DIR_MODE, exist_ok=True)
    if os.stat(path).st_mode & 0o777 != DIR_MODE:
        os.chmod(path, DIR_MODE)


def make_file(path: str) -> None:
    """Create the empty file ``path`` 0600 if missing, or tighten an existing one."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        if os.fstat(fd).st_mode & 0o777 != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
