"""Working inside a sandbox's network namespace without the plugin ever entering it.

A forked child (no exec) enters the namespace with setns(2), opens a netlink socket
there and hands it back over a unix socket pair; the plugin then speaks netlink to
the sandbox through that socket. Writes under /proc/sys/net resolve in the namespace
of the writing process, so the child stays until the command ends and writes the
sandbox's sysctls when asked. No thread of the plugin switches namespace.

Python 3.11 has no os.setns; the child calls libc's setns through ``_ctypes`` (the
``ctypes`` package would cost several ms to import), in the child only.
"""

from __future__ import annotations

import _socket
import posix
from struct import pack, unpack_from

from cni_plugin.dataplane.netlink_wire import Socket

CLONE_NEWNET = 0x40000000
_OK, _FAILED = b"K", b"E"


def write_sysctl(path: str, value: str) -> None:
    """Write /proc/sys/`path` (e.g. "net/ipv4/ip_forward") in this process's namespaces."""
    fd = posix.open(f"/proc/sys/{path}", posix.O_WRONLY | posix.O_CLOEXEC)
    try:
        posix.write(fd, value.encode())
    finally:
        posix.close(fd)


def write_sysctl_best_effort(path: str, value: str) -> None:
    """write_sysctl, errors ignored, as the reference ignores them (accept_ra and the like)."""
    try:  # noqa: SIM105 - contextlib is not worth its import here
        write_sysctl(path, value)
    except OSError:
        pass


def read_sysctl(path: str) -> str:
    fd = posix.open(f"/proc/sys/{path}", posix.O_RDONLY | posix.O_CLOEXEC)
    try:
        return posix.read(fd, 256).decode().strip()
    finally:
        posix.close(fd)


def ensure_sysctl(path: str, value: str) -> None:
    """Write the sysctl only if it differs (a write of the same value still needs rights)."""
    if read_sysctl(path) != value:
        write_sysctl(path, value)


def _setns(fd: int, nstype: int) -> None:
    import _ctypes

    class Libc:
        _handle = _ctypes.dlopen(None, 2)  # type: ignore[arg-type]  # RTLD_NOW: our own libc

    class Function(_ctypes.CFuncPtr):  # returns an int, takes ints
        _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO

    if Function(("setns", Libc))(fd, nstype) != 0:  # type: ignore[arg-type]
        error = _ctypes.get_errno()
        raise OSError(error, posix.strerror(error))


def _child(netns: str, conn: _socket.socket) -> int:
    """Runs in the forked child: enter, hand over a netlink socket, serve sysctl writes."""
    null = posix.open("/dev/null", posix.O_RDWR)
    for fd in (0, 1, 2):  # the runtime waits for EOF on the plugin's stdout
        posix.dup2(null, fd)
    try:
        ns_fd = posix.open(netns, posix.O_RDONLY | posix.O_CLOEXEC)
        _setns(ns_fd, CLONE_NEWNET)
        sock = Socket()
    except OSError as e:
        conn.send(_FAILED + pack("=i", e.errno or 0))
        return 1
    conn.sendmsg([_OK], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, pack("=i", sock.fileno()))])
    sock.close()
    while request := conn.recv(1 << 16):
        for line in request.decode().split("\n"):
            path, _, value = line.partition("=")
            try:  # noqa: SIM105 - best effort, as the reference ignores these failures
                write_sysctl(path, value)
            except OSError:
                pass
        conn.send(_OK)
    return 0


class NetnsAgent:
    """The child serving one network namespace. It starts at once; ``netlink`` (its
    socket in the namespace) waits for it, so whatever runs before overlaps its start."""

    def __init__(self, netns: str) -> None:
        ours, theirs = _socket.socketpair(_socket.AF_UNIX,
                                          _socket.SOCK_SEQPACKET | _socket.SOCK_CLOEXEC)
        pid = posix.fork()
        if pid == 0:  # the child never returns into the plugin
            status = 1
            try:
                ours.close()
                status = _child(netns, theirs)
            finally:
                posix._exit(status)
        theirs.close()
        self._pid = pid
        self._conn = ours
        self._netlink: Socket | None = None

    @property
    def netlink(self) -> Socket:
        """The netlink socket in the namespace; OSError if the child could not enter it."""
        if self._netlink is None:
            message, ancillary, _, _ = self._conn.recvmsg(16, _socket.CMSG_SPACE(4))
            if message[:1] != _OK or not ancillary:
                self.close()
                error = unpack_from("=i", message, 1)[0] if len(message) >= 5 else 0
                raise OSError(error, posix.strerror(error) if error else
                              "the netns helper process failed")
            self._netlink = Socket(fileno=unpack_from("=i", ancillary[0][2])[0])
        return self._netlink

    def write_sysctls(self, values: dict[str, str]) -> None:
        """Write /proc/sys paths in the namespace; failures are ignored (best effort)."""
        self.netlink  # noqa: B018 - the handover comes first on the connection
        if values:
            self._conn.send("\n".join(f"{k}={v}" for k, v in values.items()).encode())
            self._conn.recv(16)

    def close(self) -> None:
        """Stop the child, whatever it is doing (it holds nothing of the plugin's)."""
        if self._pid:
            if self._netlink is not None:
                self._netlink.close()
            self._conn.close()
            posix.kill(self._pid, 9)
            posix.waitpid(self._pid, 0)
            self._pid = 0
