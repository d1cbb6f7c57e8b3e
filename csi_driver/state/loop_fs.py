"""Filesystem volumes with a real size (``--fs-backend loop``): each is a sparse ext4
image, formatted at CreateVolume and loop-mounted at NodeStage.  Writing past its
size gives ENOSPC, NodeExpandVolume grows it online, statvfs gives its numbers.

Loop devices are set up here with the kernel's ioctls (LOOP_CTL_GET_FREE,
LOOP_CONFIGURE with LO_FLAGS_AUTOCLEAR), so a device frees itself when its mount
goes away; only mkfs.ext4 and resize2fs run as helper processes.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import os
import shutil
import struct
import subprocess

from csi_driver.state import mountinfo, private_files

LOOP_CONTROL = "/dev/loop-control"
LOOP_SET_FD = 0x4C00
LOOP_CLR_FD = 0x4C01
LOOP_SET_STATUS64 = 0x4C04
LOOP_SET_CAPACITY = 0x4C07
LOOP_CONFIGURE = 0x4C0A
LOOP_CTL_GET_FREE = 0x4C82
LO_FLAGS_AUTOCLEAR = 4
MIN_BYTES = 1 << 20  # smaller filesystem volumes stay directories (ext4 needs room)
FS_TYPE = "ext4"
_TOOL_DIRS = "/usr/sbin:/sbin:/usr/bin:/bin"
_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class LoopError(OSError):
    """A loop device, mkfs or resize step failed."""


class BackendUnavailable(Exception):
    """``--fs-backend loop`` was asked for where it cannot work."""


def _find(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":" + _TOOL_DIRS)


def tool(name: str) -> str:
    """The path of an e2fsprogs tool (the sbin dirs are searched even off PATH)."""
    return _find(name) or name


def unavailable_reason() -> str:
    """Why this process cannot use the loop backend ("" when it can)."""
    if os.geteuid() != 0:
        return "loop devices need root"
    if not os.path.exists(LOOP_CONTROL):
        return f"{LOOP_CONTROL} is missing"
    for name in ("mkfs.ext4", "resize2fs", "e2fsck"):
        if _find(name) is None:
            return f"{name} is not installed (Debian package e2fsprogs)"
    return ""


CAP_SYS_RESOURCE = 24


def grows_online() -> bool:
    """Whether the kernel lets this process grow a mounted ext4 (it asks for
    CAP_SYS_RESOURCE; some sandboxes drop it)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    except OSError:
        pass
    return False


def resolve(setting: str) -> tuple[str, str]:
    """``--fs-backend`` → ("loop" or "dir", why "auto" chose "dir").  "auto" takes loop
    only where everything it promises works, online growth included; an explicit
    "loop" that cannot work at all → BackendUnavailable."""
    if setting == "dir":
        return "dir", ""
    reason = unavailable_reason()
    if reason:
        if setting == "loop":
            raise BackendUnavailable(f"--fs-backend loop is not possible here: {reason}")
        return "dir", reason
    if setting == "auto" and not grows_online():
        return "dir", ("a mounted filesystem cannot grow here (no CAP_SYS_RESOURCE); "
                       "--fs-backend loop grows it only while it is not published")
    return "loop", ""


def run(*argv: str) -> None:
    done = subprocess.run([tool(argv[0]), *argv[1:]], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise LoopError(errno.EIO, f"{argv[0]} failed: {done.stderr.strip() or done.stdout}")


def make_filesystem(image: str, size: int) -> None:
    """A sparse ``size``-byte file holding an empty ext4 filesystem (no reserved blocks:
    the whole size is the user's)."""
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC,
                 private_files.FILE_MODE)
    try:
        os.ftruncate(fd, size)
    finally:
        os.close(fd)
    run("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1",
         image)


def filesystem_bytes(image: str) -> int:
    """The size the ext4 filesystem in ``image`` spans, from its superblock."""
    with open(image, "rb") as f:
        f.seek(1024)
        sb = f.read(1024)
    if len(sb) < 1024 or struct.unpack_from("<H", sb, 0x38)[0] != 0xEF53:
        raise LoopError(errno.EINVAL, f"{image} holds no ext4 filesystem")
    blocks = struct.unpack_from("<I", sb, 0x04)[0]
    if struct.unpack_from("<I", sb, 0x60)[0] & 0x80:  # INCOMPAT_64BIT
        blocks |= struct.unpack_from("<I", sb, 0x150)[0] << 32
    block_size: int = 1024 << struct.unpack_from("<I", sb, 0x18)[0]
    return int(blocks) * block_size


def _configure(loop_fd: int, image_fd: int) -> None:
    info = struct.pack("=5Q4I64s64s32s2Q", 0, 0, 0, 0, 0, 0, 0, 0, LO_FLAGS_AUTOCLEAR,
                       b"", b"", b"", 0, 0)
    try:
        fcntl.ioctl(loop_fd, LOOP_CONFIGURE, struct.pack("=II", image_fd, 0) + info
                    + bytes(64))
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTTY):  # older kernels: two steps
            raise
        fcntl.ioctl(loop_fd, LOOP_SET_FD, image_fd)
        try:
            fcntl.ioctl(loop_fd, LOOP_SET_STATUS64, info)
        except OSError:
            fcntl.ioctl(loop_fd, LOOP_CLR_FD, 0)
            raise


def attach(image: str) -> tuple[int, str]:
    """An open loop device backed by ``image`` (it detaches itself once nothing holds
    it open or mounted) and its path."""
    image_fd = os.open(image, os.O_RDWR | os.O_CLOEXEC)
    try:
        control = os.open(LOOP_CONTROL, os.O_RDWR | os.O_CLOEXEC)
        try:
            for _ in range(32):  # another process may take the free device first
                device = f"/dev/loop{fcntl.ioctl(control, LOOP_CTL_GET_FREE)}"
                loop_fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
                try:
                    _configure(loop_fd, image_fd)
                    return loop_fd, device
                except OSError as exc:
                    os.close(loop_fd)
                    if exc.errno != errno.EBUSY:
                        raise
            raise LoopError(errno.EBUSY, "no free loop device")
        finally:
            os.close(control)
    finally:
        os.close(image_fd)


def mount(image: str, dir_fd: int, name: str) -> None:
    """Loop-mount ``image`` onto the directory ``name`` in ``dir_fd`` (reached through a
    descriptor: no symlink is followed)."""
    loop_fd, device = attach(image)
    try:
        target = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            if _libc.mount(device.encode(), f"/proc/self/fd/{target}".encode(),
                           FS_TYPE.encode(), 0, None) != 0:
                err = ctypes.get_errno()
                raise LoopError(err, f"mount {device}: {os.strerror(err)}")
        finally:
            os.close(target)
    finally:
        os.close(loop_fd)  # the mount holds the device now; autoclear frees it after


def backing_file(device: str) -> str:
    name = os.path.basename(device)
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return ""


def device_at(path: str) -> str:
    """The loop device mounted on top at ``path`` ("" when none)."""
    mounts = mountinfo.mounts_at(path)
    if mounts and mounts[-1].source.startswith("/dev/loop"):
        return mounts[-1].source
    return ""


def mounted_at(image: str, path: str) -> bool:
    """Whether ``image`` is the filesystem mounted on top at ``path``."""
    device = device_at(path)
    return bool(device) and backing_file(device) == os.path.realpath(image)


def grow(path: str) -> None:
    """Make the filesystem mounted at ``path`` fill its (grown) image, online."""
    device = device_at(path)
    if not device:
        raise LoopError(errno.ENOENT, f"no loop device is mounted at {path}")
    fd = os.open(device, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, LOOP_SET_CAPACITY, 0)  # the device takes the file's new size
    finally:
        os.close(fd)
    run("resize2fs", device)


def unmount(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        if _libc.umount2(os.fsencode(path), 8) != 0:  # UMOUNT_NOFOLLOW
            err = ctypes.get_errno()
            raise LoopError(err, f"unmount {path}: {os.strerror(err)}")
