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
    """Create the empty file ``path`` 0600 if missing, or tighten an existing one.

    An existing file is changed by path only, never opened: closing any descriptor of a
    file drops every POSIX lock this process holds on it, and SQLite's locks on state.db
    and its -shm are such locks. Dropped, another driver process sharing the state dir
    takes itself for the only user, resets the -shm and this process's mapping of it
    faults (SIGBUS)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        tighten_file(path)
        return
    try:
        os.fchmod(fd, FILE_MODE)  # whatever the umask
    finally:
        os.close(fd)  # a file this call made: nobody holds a lock on it yet


def tighten_file(path: str) -> None:
    """Make an existing file 0600, by path (see make_file); a missing one is left alone."""
    try:
        mode = os.stat(path).st_mode & 0o777
    except FileNotFoundError:
        return
    if mode != FILE_MODE:
        os.chmod(path, FILE_MODE)
