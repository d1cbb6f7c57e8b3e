"""Run the whole test session in a private mount namespace (as root).

Drivers started by the tests bind- and loop-mount onto temp paths; inside a
private namespace nothing they mount can reach the host's mount table, and
whatever a failed test leaves mounted vanishes with the session.  Entered once,
before any thread or child exists, so every process the tests start inherits it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def current() -> int:
    return os.stat("/proc/self/ns/mnt").st_ino


def enter_private() -> bool:
    """Leave the host's mount namespace for a private one; False when not root or the
    kernel refuses (then tests that mount skip or run as before)."""
    if os.geteuid() != 0:
        return False
    if is_private():
        return True
    libc = _libc()
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    # Mounts made from now on stay here, and the host's never propagate in.
    if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    os.environ["CSI_MINI_TEST_MNTNS"] = str(current())
    return True


def is_private() -> bool:
    """Whether this process runs in the namespace ``enter_private`` made."""
    return os.environ.get("CSI_MINI_TEST_MNTNS") == str(current())
