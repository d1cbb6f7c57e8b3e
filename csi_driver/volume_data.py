"""The bytes behind volumes and snapshots: a directory per filesystem volume and a
sparse file per block volume, under ``<state dir>/volumes`` and ``.../snapshots``."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

COPY_CHUNK = 1 << 20


@dataclass(frozen=True)
class Usage:
    used_bytes: int
    used_inodes: int


def data_extents(fd: int, size: int) -> Iterator[tuple[int, int]]:
    """(offset, length) of every allocated range of a sparse file (SEEK_DATA/SEEK_HOLE)."""
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd, offset, os.SEEK_DATA)
        except OSError:  # ENXIO: no data past offset
            return
        if start >= size:
            return
        end = min(os.lseek(fd, start, os.SEEK_HOLE), size)
        yield start, end - start
        offset = end


def copy_sparse_file(src: str, dst: str, size: int | None = None, sync: bool = True) -> None:
    """Copy only the allocated extents, keep holes, fsync (``sync``), then atomically rename."""
    tmp = dst + ".tmp"
    with open(src, "rb") as fin, open(tmp, "wb") as fout:
        src_size = os.fstat(fin.fileno()).st_size
        for start, length in data_extents(fin.fileno(), src_size):
            fin.seek(start)
            fout.seek(start)
            remaining = length
            while remaining:
                chunk = fin.read(min(COPY_CHUNK, remaining))
                if not chunk:
                    break
                fout.write(chunk)
                remaining -= len(chunk)
        fout.truncate(max(src_size, size or 0))
        fout.flush()
        if sync:
            os.fsync(fout.fileno())
    os.replace(tmp, dst)


def sync_dir(path: str) -> None:
    """Make the entries of directory ``path`` (names created, renamed) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def tree_usage(path: str) -> Usage:
    """Bytes allocated and inodes used below ``path`` (the root counts as one inode)."""
    used = 0
    inodes = 0
    stack = [path]
    while stack:
        current = stack.pop()
        st = os.lstat(current)
        used += st.st_blocks * 512
        inodes += 1
        if os.path.isdir(current) and not os.path.islink(current):
            with os.scandir(current) as entries:
                for entry in entries:
                    stack.append(entry.path)
    return Usage(used, inodes)


def last_change(path: str) -> float | None:
    """The newest mtime or ctime below ``path`` (None if it changed under us).  ctime
    counts because a copy keeps its source's mtimes (copystat) but not its ctimes."""
    newest = 0.0
    stack = [path]
    try:
        while stack:
            current = stack.pop()
            st = os.lstat(current)
            newest = max(newest, st.st_mtime, st.st_ctime)
            if stat.S_ISDIR(st.st_mode):
                with os.scandir(current) as entries:
                    stack.extend(entry.path for entry in entries)
    except OSError:  # removed or replaced while we looked: busy, not an orphan
        return None
    return newest


class VolumeData:
    """Creates, copies, resizes and removes the data of volumes and snapshots."""

    def __init__(self, state_dir: str, background_removal: bool = False,
                 wait_for_disk: bool = False) -> None:
        """``background_removal``: delete volume data on a worker thread, off the caller's
        path (the server uses it; the record is already durably gone by then).
        ``wait_for_disk``: a new volume's or snapshot's directory entry is fsynced before
        its record commits (``--durability host``), so a host crash cannot leave a
        record without its data."""
        self.wait_for_disk = wait_for_disk
        self._reaper = ThreadPoolExecutor(1, "csi-reaper") if background_removal else None
        self.volumes_dir = os.path.join(state_dir, "volumes")
        self.snapshots_dir = os.path.join(state_dir, "snapshots")
        os.makedirs(self.volumes_dir, exist_ok=True)
        os.makedirs(self.snapshots_dir, exist_ok=True)

    def volume_path(self, volume_id: str, access_type: str) -> str:
        suffix = ".img" if access_type == "block" else ""
        return os.path.join(self.volumes_dir, volume_id + suffix)

    def snapshot_path(self, snapshot_id: str, access_type: str) -> str:
        suffix = ".img" if access_type == "block" else ""
        return os.path.join(self.snapshots_dir, snapshot_id + suffix)

    def exists(self, volume_id: str, access_type: str) -> bool:
        return os.path.exists(self.volume_path(volume_id, access_type))

    def create_volume(self, volume_id: str, access_type: str, capacity_bytes: int,
                      sync: bool = True) -> None:
        """``sync=False``: the caller runs ``sync_volumes_dir`` itself (once for many)."""
        path = self.volume_path(volume_id, access_type)
        if access_type == "block":
            with open(path, "ab") as f:
                f.truncate(max(capacity_bytes, os.fstat(f.fileno()).st_size))
        else:
            os.makedirs(path, exist_ok=True)
        if sync:
            self.sync_volumes_dir()

    def sync_volumes_dir(self) -> None:
        """With ``wait_for_disk``, make new volume entries durable (else nothing to do)."""
        if self.wait_for_disk:
            sync_dir(self.volumes_dir)

    def _copy(self, src: str, dst: str, access_type: str, capacity_bytes: int) -> None:
        if access_type == "block":
            copy_sparse_file(src, dst, capacity_bytes, sync=self.wait_for_disk)
            if self.wait_for_disk:
                sync_dir(os.path.dirname(dst))
            return
        tmp = dst + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp, symlinks=True)
        shutil.rmtree(dst, ignore_errors=True)
        os.replace(tmp, dst)
        if self.wait_for_disk:
            os.sync()  # every copied file and directory, then the rename

    def clone_volume(self, src_id: str, dst_id: str, access_type: str, capacity: int) -> None:
        self._copy(
            self.volume_path(src_id, access_type),
            self.volume_path(dst_id, access_type),
            access_type,
            capacity,
        )

    def restore_snapshot(
        self, snapshot_id: str, volume_id: str, access_type: str, capacity: int
    ) -> None:
        self._copy(
            self.snapshot_path(snapshot_id, access_type),
            self.volume_path(volume_id, access_type),
            access_type,
            capacity,
        )

    def take_snapshot(self, volume_id: str, snapshot_id: str, access_type: str) -> None:
        src = self.volume_path(volume_id, access_type)
        if not os.path.exists(src):
            self.create_volume(volume_id, access_type, 0)
        self._copy(src, self.snapshot_path(snapshot_id, access_type), access_type, 0)

    def resize_volume(self, volume_id: str, access_type: str, capacity_bytes: int) -> None:
        if access_type == "block":
            path = self.volume_path(volume_id, access_type)
            with open(path, "r+b") as f:
                if os.fstat(f.fileno()).st_size < capacity_bytes:
                    f.truncate(capacity_bytes)

    @staticmethod
    def _remove(path: str) -> None:
        with contextlib.suppress(OSError):
            os.rmdir(path)  # the common case: an empty volume directory
            return
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)

    def delete_volume(self, volume_id: str, access_type: str) -> None:
        path = self.volume_path(volume_id, access_type)
        if self._reaper is not None:
            self._reaper.submit(self._remove, path)
        else:
            self._remove(path)

    def close(self) -> None:
        if self._reaper is not None:
            self._reaper.shutdown(wait=True)

    def delete_snapshot(self, snapshot_id: str, access_type: str) -> None:
        self._remove(self.snapshot_path(snapshot_id, access_type))

    def sweep(self, has_volume: Callable[[str], bool], has_snapshot: Callable[[str], bool],
              min_age: float = 60.0, now: float | None = None) -> int:
        """Remove data left behind by a crash: entries with no record (and ``.tmp``
        copies) in which nothing changed for ``min_age`` seconds, so data another
        process is creating or copying right now is never touched."""
        removed = 0
        now = time.time() if now is None else now
        for directory, known in ((self.volumes_dir, has_volume),
                                 (self.snapshots_dir, has_snapshot)):
            with os.scandir(directory) as entries:
                for entry in entries:
                    ident = entry.name.removesuffix(".tmp").removesuffix(".img")
                    if known(ident) and not entry.name.endswith(".tmp"):
                        continue
                    changed = last_change(entry.path)
                    if changed is None or now - changed < min_age:
                        continue
                    self._remove(entry.path)
                    removed += 1
        return removed

    def usage(self, volume_id: str, access_type: str) -> Usage:
        return tree_usage(self.volume_path(volume_id, access_type))
