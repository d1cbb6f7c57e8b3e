"""The on-disk lease store, byte-compatible with the reference host-local's.

Layout of ``<dataDir>/<network>/`` (shared with the reference plugin):

- ``<ip>``: one lease; content ``<containerID>\\r\\n<ifname>`` (very old
  versions wrote ``<containerID>`` alone), mode 0644, never overwritten;
- ``last_reserved_ip.<range set index>``: the last address leased there;
- ``lock``: flock()ed exclusively around every read-modify-write.

A lease is written to a temporary file, fsynced, then hard-linked to its
address name: link() fails if the name exists (the O_EXCL guarantee) and a
lease is never visible half-written, so a plugin killed mid-ADD leaves either
a whole lease that DEL finds by container id, or only a temporary file that
the next locked operation removes. The directory is fsynced after each change.
"""

from __future__ import annotations

import fcntl

from cni_plugin import posix_shim as posix_shim
from cni_plugin.ipam.store import Lease, matching_leases

DEFAULT_DATA_DIR = "/var/lib/cni/networks"
LINE_BREAK = "\r\n"
LAST_IP_PREFIX = "last_reserved_ip."
LOCK_NAME = "lock"
TEMP_PREFIX = ".emu-tmp."


class StoreError(Exception):
    """The store cannot be used; str() is worded like Go's os errors."""


def os_error_text(op: str, path: str, exc: OSError) -> str:
    """``<op> <path>: <reason>`` with Go's lower-case errno text."""
    reason = exc.strerror or str(exc)
    return f"{op} {path}: {reason[:1].lower()}{reason[1:]}"


def network_dir(data_dir: str, network: str) -> str:
    # The network name is a path component; refuse anything that leaves dataDir.
    if not network or "/" in network or "\x00" in network or network in (".", ".."):
        raise StoreError(f"invalid network name {network!r}")
    return posix_shim.join(data_dir or DEFAULT_DATA_DIR, network)


def parse_lease_content(data: bytes) -> tuple[str, str | None]:
    text = data.decode("utf-8", "surrogateescape").strip()
    container_id, sep, ifname = text.partition(LINE_BREAK)
    return (container_id, ifname) if sep else (text, None)


class DiskStore:
    def __init__(self, network: str, data_dir: str) -> None:
        self.dir = network_dir(data_dir, network)
        try:
            posix_shim.makedirs(self.dir, 0o755, exist_ok=True)
        except OSError as exc:
            raise StoreError(os_error_text("mkdir", self.dir, exc)) from exc
        lock_path = posix_shim.join(self.dir, LOCK_NAME)
        try:
            self._lock_fd = posix_shim.open_fd(
                lock_path, posix_shim.O_CREAT | posix_shim.O_RDONLY | posix_shim.O_CLOEXEC, 0o750)
        except OSError as exc:
            raise StoreError(os_error_text("open", lock_path, exc)) from exc
        try:
            self._dir_fd = posix_shim.open_fd(
                self.dir, posix_shim.O_RDONLY | posix_shim.O_DIRECTORY | posix_shim.O_CLOEXEC)
        except OSError as exc:
            posix_shim.close(self._lock_fd)
            raise StoreError(os_error_text("open", self.dir, exc)) from exc

    def lock(self) -> None:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        # Temporary files are only made under the lock: any present now was
        # left by a killed plugin.
        for name in posix_shim.listdir(self.dir):
            if name.startswith(TEMP_PREFIX):
                self._unlink_quietly(name)

    def unlock(self) -> None:
        fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        posix_shim.close(self._dir_fd)
        posix_shim.close(self._lock_fd)  # also drops the flock

    def __enter__(self) -> DiskStore:
        self.lock()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.unlock()

    def reserve(self, container_id: str, ifname: str, ip: str, range_id: str) -> bool:
        content = (container_id.strip() + LINE_BREAK + ifname).encode()
        temp = self._write_temp(f"{TEMP_PREFIX}{posix_shim.getpid()}.lease", content)
        try:
            posix_shim.link(temp, posix_shim.join(self.dir, ip))
        except FileExistsError:
            return False
        except OSError as exc:
            raise StoreError(os_error_text("open", posix_shim.join(self.dir, ip), exc)) from exc
        finally:
            posix_shim.unlink(temp)
        last = self._write_temp(f"{TEMP_PREFIX}{posix_shim.getpid()}.last", ip.encode())
        posix_shim.replace(last, posix_shim.join(self.dir, LAST_IP_PREFIX + range_id))
        posix_shim.fsync(self._dir_fd)
        return True

    def last_reserved_ip(self, range_id: str) -> str | None:
        try:
            with open(posix_shim.join(self.dir, LAST_IP_PREFIX + range_id), "rb") as f:
                return f.read().decode("ascii", "replace")
        except OSError:
            return None

    def leases(self) -> list[Lease]:
        found: list[Lease] = []
        for entry in sorted(posix_shim.scandir(self.dir), key=lambda e: e.name):
            name = entry.name
            if name == LOCK_NAME or name.startswith((LAST_IP_PREFIX, TEMP_PREFIX)):
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                with open(entry.path, "rb") as f:
                    container_id, ifname = parse_lease_content(f.read())
            except OSError:
                continue  # released meanwhile by a process that does not lock
            found.append(Lease(name, container_id, ifname))
        return found

    def release(self, ip: str) -> None:
        self._unlink_quietly(ip)
        posix_shim.fsync(self._dir_fd)

    def release_by_id(self, container_id: str, ifname: str) -> list[str]:
        released = [lease.ip for lease in matching_leases(self.leases(), container_id, ifname)]
        for ip in released:
            self._unlink_quietly(ip)
        if released:
            posix_shim.fsync(self._dir_fd)
        return released

    def is_writable(self) -> bool:
        return posix_shim.access(self.dir, posix_shim.W_OK | posix_shim.X_OK)

    def _write_temp(self, name: str, content: bytes) -> str:
        path = posix_shim.join(self.dir, name)
        try:
            fd = posix_shim.open_fd(
                path,
                posix_shim.O_WRONLY | posix_shim.O_CREAT | posix_shim.O_TRUNC
                | posix_shim.O_CLOEXEC,
                0o644)
        except OSError as exc:
            raise StoreError(os_error_text("open", path, exc)) from exc
        try:
            posix_shim.write(fd, content)
            posix_shim.fsync(fd)
        except OSError as exc:
            posix_shim.close(fd)
            self._unlink_quietly(name)
            raise StoreError(os_error_text("write", path, exc)) from exc
        posix_shim.close(fd)
        return path

    def _unlink_quietly(self, name: str) -> None:
        try:  # noqa: SIM105 - contextlib would cost start-up time on every exec
            posix_shim.unlink(posix_shim.join(self.dir, name))
        except FileNotFoundError:
            pass
