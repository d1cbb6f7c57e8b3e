"""Making the state files private never drops this process's POSIX locks on them.

Closing any descriptor of a file drops every fcntl lock the process holds on it; SQLite
locks state.db and its -shm that way. A driver process that lost them let another driver
on the same state dir reset the -shm under its mapping (the process died of SIGBUS at
start-up when a cluster started several drivers at once).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from csi_driver.state import private_files

PROBE = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except OSError:
    sys.exit(3)
"""


def locked_by_another_process(path: Path) -> bool:
    probe = subprocess.run([sys.executable, "-c", PROBE, str(path)], check=False)
    return probe.returncode == 3


def test_tightening_an_existing_locked_file_keeps_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"")
    path.chmod(0o644)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)
        assert locked_by_another_process(path)
        private_files.make_file(str(path))
        private_files.tighten_file(str(path))
        assert path.stat().st_mode & 0o777 == 0o600
        assert locked_by_another_process(path)
    finally:
        os.close(fd)


def test_a_missing_file_is_created_private_and_tighten_leaves_missing_ones_alone(
        tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        private_files.make_file(str(tmp_path / "new.db"))
        private_files.tighten_file(str(tmp_path / "absent-shm"))
    finally:
        os.umask(old)
    assert (tmp_path / "new.db").stat().st_mode & 0o777 == 0o600
    assert not (tmp_path / "absent-shm").exists()
