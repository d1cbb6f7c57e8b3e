"""The bytes behind volumes and snapshots: a directory per filesystem volume and a
sparse file per block volume, under ``<state dir>/volumes`` and ``.../snapshots``."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from csi_driver.errors import InvalidArgument
from csi_driver.state import loop_fs, private_files

COPY_CHUNK = 1 << 20
# The one rule for ids that become file names: the driver's own ids (UUIDs) and the
# CO's inline-volume handles (Kubernetes: csi-<sha256>) pass; "..", "/", NUL, an empty
# or a hidden name never reach the file system.
_DATA_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def data_name(ident: str, what: str = "volume_id") -> str:
    """``ident`` as a file name that stays inside its directory, else INVALID_ARGUMENT."""
    if not _DATA_NAME.fullmatch(ident):
        raise InvalidArgument(
            f"{what} {ident!r} cannot name data here: use 1-128 letters, digits, '.', '_'"
            " or '-', starting with a letter or digit"
        )
    return ident


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
    out_fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                     private_files.FILE_MODE)
    with open(src, "rb") as fin, open(out_fd, "wb") as fout:
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


BLOCK_SUFFIX = ".img"  # a block volume: a sparse file
FS_IMAGE_SUFFIX = ".ext4"  # a filesystem volume on the loop backend: an ext4 image
# A filesystem volume on the dir backend is a plain directory (no suffix).


def is_fs_image(path: str) -> bool:
    return path.endswith(FS_IMAGE_SUFFIX)


class VolumeData:
    """Creates, copies, resizes and removes the data of volumes and snapshots.

    Which layout a filesystem volume has is read off the disk (an ``.ext4`` image or
    a directory), so every process sharing the state dir agrees, and a copy (clone,
    snapshot, restore) keeps its source's layout."""

    def __init__(self, state_dir: str, background_removal: bool = False,
                 wait_for_disk: bool = False, fs_images: bool = False) -> None:
        """``background_removal``: delete volume data on a worker thread, off the caller's
        path (the server uses it; the record is already durably gone by then).
        ``wait_for_disk``: a new volume's or snapshot's directory entry is fsynced before
        its record commits (``--durability host``), so a host crash cannot leave a
        record without its data.
        ``fs_images``: new filesystem volumes are ext4 images (``--fs-backend loop``)."""
        self.wait_for_disk = wait_for_disk
        self.fs_images = fs_images
        self._reaper = ThreadPoolExecutor(1, "csi-reaper") if background_removal else None
        self.volumes_dir = os.path.join(state_dir, "volumes")
        self.snapshots_dir = os.path.join(state_dir, "snapshots")
        private_files.make_dir(self.volumes_dir)
        private_files.make_dir(self.snapshots_dir)

    @staticmethod
    def _entry(directory: str, name: str, access_type: str) -> str:
        base = os.path.join(directory, name)
        if access_type == "block":
            return base + BLOCK_SUFFIX
        image = base + FS_IMAGE_SUFFIX
        return image if os.path.exists(image) else base

    def volume_path(self, volume_id: str, access_type: str) -> str:
        """The volume's data: a block file, an ext4 image or a directory."""
        return self._entry(self.volumes_dir, data_name(volume_id), access_type)

    def snapshot_path(self, snapshot_id: str, access_type: str) -> str:
        return self._entry(self.snapshots_dir, data_name(snapshot_id, "snapshot_id"),
                           access_type)

    def exists(self, volume_id: str, access_type: str) -> bool:
        return os.path.exists(self.volume_path(volume_id, access_type))

    def makes_fs_image(self, access_type: str, capacity_bytes: int) -> bool:
        """Whether a new volume of this kind and size is an ext4 image (formatting it
        takes a helper process: callers keep that off the event loop)."""
        return self.fs_images and access_type == "mount" and capacity_bytes >= loop_fs.MIN_BYTES

    def create_volume(self, volume_id: str, access_type: str, capacity_bytes: int,
                      sync: bool = True, directory: bool = False) -> None:
        """``sync=False``: the caller runs ``sync_volumes_dir`` itself (once for many).
        ``directory``: a filesystem volume that is a directory whatever the backend (an
        inline ephemeral volume: it is never staged, so no image could be mounted)."""
        path = self.volume_path(volume_id, access_type)
        if not directory and self.makes_fs_image(access_type, capacity_bytes):
            if not is_fs_image(path):
                tmp = path + FS_IMAGE_SUFFIX + ".tmp"
                loop_fs.make_filesystem(tmp, capacity_bytes)
                os.replace(tmp, path + FS_IMAGE_SUFFIX)
        elif access_type == "block":
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, private_files.FILE_MODE)
            try:
                os.ftruncate(fd, max(capacity_bytes, os.fstat(fd).st_size))
            finally:
                os.close(fd)
        else:
            with contextlib.suppress(FileExistsError):
                os.mkdir(path, private_files.DIR_MODE)
        if sync:
            self.sync_volumes_dir()

    def sync_volumes_dir(self) -> None:
        """With ``wait_for_disk``, make new volume entries durable (else nothing to do)."""
        if self.wait_for_disk:
            sync_dir(self.volumes_dir)

    def _copy(self, src: str, dst_base: str, capacity_bytes: int) -> None:
        """Copy ``src`` to ``dst_base`` + its suffix: a file (block, ext4 image) sparsely,
        grown to ``capacity_bytes``; a directory tree whole."""
        if os.path.isfile(src):
            dst = dst_base + os.path.splitext(src)[1]
            if is_fs_image(src):
                os.sync()  # a filesystem mounted from it may hold data not yet in the file
            copy_sparse_file(src, dst, capacity_bytes, sync=self.wait_for_disk)
            if self.wait_for_disk:
                sync_dir(os.path.dirname(dst))
            return
        tmp = dst_base + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.copytree(src, tmp, symlinks=True)
        shutil.rmtree(dst_base, ignore_errors=True)
        os.replace(tmp, dst_base)
        if self.wait_for_disk:
            os.sync()  # every copied file and directory, then the rename

    def clone_volume(self, src_id: str, dst_id: str, access_type: str, capacity: int) -> None:
        self._copy(self.volume_path(src_id, access_type),
                   os.path.join(self.volumes_dir, data_name(dst_id)), capacity)

    def restore_snapshot(
        self, snapshot_id: str, volume_id: str, access_type: str, capacity: int
    ) -> None:
        self._copy(self.snapshot_path(snapshot_id, access_type),
                   os.path.join(self.volumes_dir, data_name(volume_id)), capacity)

    def take_snapshot(self, volume_id: str, snapshot_id: str, access_type: str) -> None:
        src = self.volume_path(volume_id, access_type)
        if not os.path.exists(src):
            self.create_volume(volume_id, access_type, 0)
        self._copy(src, os.path.join(self.snapshots_dir, data_name(snapshot_id, "snapshot_id")),
                   0)

    def resize_volume(self, volume_id: str, access_type: str, capacity_bytes: int) -> None:
        """Grow a block file or an ext4 image (its filesystem grows on the node)."""
        path = self.volume_path(volume_id, access_type)
        if os.path.isfile(path):
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
        if self._reaper is None:
            self._remove(path)
            return
        # Renamed away at once, removed later: an id used again meanwhile (an inline
        # ephemeral volume published anew) gets fresh data, never the doomed one.  A
        # crash before the removal leaves a ``.tmp`` entry, which the sweep takes.
        doomed = f"{path}.{uuid.uuid4().hex}.tmp"
        try:
            os.rename(path, doomed)
        except FileNotFoundError:
            return
        self._reaper.submit(self._remove, doomed)

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
                    ident = self._ident(entry)
                    if ident is not None and known(ident):
                        continue
                    changed = last_change(entry.path)
                    if changed is None or now - changed < min_age:
                        continue
                    self._remove(entry.path)
                    removed += 1
        return removed

    @staticmethod
    def _ident(entry: os.DirEntry[str]) -> str | None:
        """The id a data entry belongs to; None for a temporary copy (``.tmp``)."""
        name = entry.name
        if name.endswith(".tmp"):
            return None
        if entry.is_dir(follow_symlinks=False):
            return name  # a directory volume: ids may hold dots, so no suffix is cut
        for suffix in (BLOCK_SUFFIX, FS_IMAGE_SUFFIX):
            if name.endswith(suffix):
                return name.removesuffix(suffix)
        return name

    def usage(self, volume_id: str, access_type: str) -> Usage:
        return tree_usage(self.volume_path(volume_id, access_type))
