"""Run the whole test session in private mount and network namespaces (as root).

Drivers started by the tests bind- and loop-mount onto temp paths, and CNI plugins
make bridges, veths, routes and iptables rules: inside private namespaces nothing
they do can reach the host's mount table or network, and whatever a failed test
leaves behind vanishes with the session.  Entered once, before any thread or child
exists, so every process the tests start inherits them.  The new network namespace
has only ``lo``, brought up here (tests talk to servers on 127.0.0.1).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
MS_REC = 0x4000
MS_PRIVATE = 1 << 18


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _loopback_up() -> None:
    import fcntl
    import socket
    import struct

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", IFF_UP))


def current() -> int:
    return os.stat("/proc/self/ns/mnt").st_ino


def enter_private() -> bool:
    """Leave the host's mount and network namespaces for private ones; False when not
    root or the kernel refuses (then tests that mount skip or run as before)."""
    if os.geteuid() != 0:
        return False
    if is_private():
        return True
    libc = _libc()
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        return False
    _loopback_up()
    # Mounts made from now on stay here, and the host's never propagate in.
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    os.environ["CSI_MINI_TEST_MNTNS"] = str(current())
    return True


def is_private() -> bool:
    """Whether this process runs in the namespace ``enter_private`` made."""
    return os.environ.get("CSI_MINI_TEST_MNTNS") == str(current())
