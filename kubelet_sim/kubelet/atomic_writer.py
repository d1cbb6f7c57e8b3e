"""The kubelet's atomic writer: how the files of a configMap, secret, downwardAPI or
projected volume are written so that a reader never sees half an update.

Layout inside the volume directory (as the kubelet's ``AtomicWriter`` makes it):

- ``..<UTC timestamp>.<random>``: one directory holding the whole payload (files with
  their modes, parent directories 0755);
- ``..data``: a symlink to that directory, replaced by ``rename(2)`` of ``..data_tmp``,
  the one atomic step of an update;
- one symlink per top-level name of the payload, ``<name> -> ..data/<name>``.

A payload equal to what ``..data`` holds (bytes and modes) is not written again. After
the switch, user-visible links no longer in the payload and the old timestamped
directory are removed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath

DATA_DIR_NAME = "..data"
DATA_DIR_TMP_NAME = "..data_tmp"
MAX_PATH_LENGTH = 4096
MAX_FILE_NAME_LENGTH = 255


@dataclass(frozen=True)
class FileProjection:
    data: bytes
    mode: int


Payload = dict[str, FileProjection]


def validate_payload_path(path: str) -> str:
    """The kubelet's rules for a payload path: relative, no ``..`` element, not starting
    with ``..``, within length limits; returns it cleaned."""
    if not path:
        raise ValueError("invalid path: must not be empty")
    if len(path) > MAX_PATH_LENGTH:
        raise ValueError(f"invalid path: must be less than or equal to {MAX_PATH_LENGTH} "
                         "characters")
    if path.startswith("/"):
        raise ValueError("invalid path: must be relative path")
    parts = PurePosixPath(path).parts
    if ".." in parts:
        raise ValueError("invalid path: must not contain '..'")
    if path.startswith(".."):
        raise ValueError("invalid path: must not start with '..'")
    for part in parts:
        if len(part) > MAX_FILE_NAME_LENGTH:
            raise ValueError("invalid path: path components must be less than or equal "
                             f"to {MAX_FILE_NAME_LENGTH} characters")
    return str(PurePosixPath(path))


def write_payload(target_dir: Path, payload: Payload, now: datetime) -> bool:
    """Make ``target_dir`` show exactly ``payload``; False when it already did."""
    cleaned = {validate_payload_path(path): projection for path, projection in payload.items()}
    data_link = target_dir / DATA_DIR_NAME
    old_ts = os.readlink(data_link) if data_link.is_symlink() else ""
    if old_ts and _holds(target_dir / old_ts, cleaned):
        return False
    new_ts = Path(tempfile.mkdtemp(prefix=now.strftime("..%Y_%m_%d_%H_%M_%S."),
                                   dir=target_dir))
    os.chmod(new_ts, 0o755)
    for path, projection in cleaned.items():
        file = new_ts / path
        _make_parents(file.parent, new_ts)
        file.write_bytes(projection.data)
        os.chmod(file, projection.mode)
    tmp_link = target_dir / DATA_DIR_TMP_NAME
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    tmp_link.symlink_to(new_ts.name)
    os.replace(tmp_link, data_link)
    wanted = {PurePosixPath(path).parts[0] for path in cleaned}
    for name in sorted(wanted):
        link = target_dir / name
        if not link.is_symlink():
            link.symlink_to(f"{DATA_DIR_NAME}/{name}")
    for entry in target_dir.iterdir():
        if entry.name.startswith("..") or entry.name in wanted:
            continue
        if entry.is_symlink():
            entry.unlink()
    if old_ts:
        shutil.rmtree(target_dir / old_ts, ignore_errors=True)
    return True


def read_payload(target_dir: Path) -> Payload:
    """What ``..data`` holds now (empty when nothing was written)."""
    data_link = target_dir / DATA_DIR_NAME
    if not data_link.is_symlink():
        return {}
    return read_payload_dir(target_dir / os.readlink(data_link))


def _holds(directory: Path, payload: Payload) -> bool:
    try:
        return read_payload_dir(directory) == payload
    except OSError:
        return False


def read_payload_dir(root: Path) -> Payload:
    """Every file under ``root`` with its bytes and permission bits."""
    found: Payload = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            file = Path(dirpath) / name
            found[str(file.relative_to(root))] = FileProjection(
                file.read_bytes(), stat.S_IMODE(file.stat().st_mode))
    return found


def _make_parents(directory: Path, root: Path) -> None:
    missing: list[Path] = []
    while directory != root and not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for made in reversed(missing):
        made.mkdir(mode=0o755)
        os.chmod(made, 0o755)
