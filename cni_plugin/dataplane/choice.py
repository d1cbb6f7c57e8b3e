"""Which dataplane serves a command when the network config has no "dataplane" key.

The rule (the README states it too):
- CNI_NETNS is a real network namespace (a file on nsfs, as `ip netns add` and container
  runtimes make them) and this process may enter it (CAP_SYS_ADMIN, which setns(2)
  needs): the linux dataplane, so `lo` and the veths are real, as a runtime expects.
- CNI_NETNS is any other existing path (a plain file, as in the README's hand-run
  example), or the process may not enter namespaces: the emulated dataplane.
- CNI_NETNS is empty (containerd's second DEL) or names nothing any more: where the
  attachment was made. The emulated dataplane if its state holds records of this
  attachment, else the linux one when the process may enter namespaces (the kernel
  dropped the links with the namespace; what is left is IPAM and firewall cleanup).

Two stat(2) calls and one read of /proc/self/status, through posix_shim (no `os` import).
"""

from __future__ import annotations

from cni_plugin import posix_shim as posix_shim

LINUX = "linux"
EMULATED = "emulated"

CAP_SYS_ADMIN = 21
OWN_NETNS = "/proc/self/ns/net"
PROC_STATUS = "/proc/self/status"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def netns_kind(path: str) -> str:
    """"nsfs" for a namespace file, "file" for any other existing path, "" if none.

    Every namespace file lives on the one nsfs superblock, so it shares its device
    number with our own /proc/self/ns/net (statfs's NSFS_MAGIC would say the same,
    but Python 3.11 has no os.statfs and ctypes costs a plugin start ~10 ms).
    """
    if not path:
        return ""
    device = posix_shim.device(path)
    if device is None:
        return ""
    return "nsfs" if device == posix_shim.device(OWN_NETNS) else "file"


def effective_capabilities() -> int | None:
    """CapEff of this process (None when /proc cannot tell)."""
    try:
        fd = posix_shim.open_fd(PROC_STATUS, posix_shim.O_RDONLY)
    except OSError:
        return None
    try:
        text = b""
        while chunk := posix_shim.read(fd, 4096):
            text += chunk
    except OSError:
        return None
    finally:
        posix_shim.close(fd)
    for line in text.split(b"\n"):
        if line.startswith(b"CapEff:"):
            return int(line[7:].strip(), 16)
    return None


def may_enter_namespaces() -> bool:
    """Whether setns(2) into a network namespace is allowed: CAP_SYS_ADMIN (root, or a
    process granted it); root without /proc to ask is trusted to have it."""
    caps = effective_capabilities()
    if caps is None:
        return posix_shim.geteuid() == 0
    return bool(caps >> CAP_SYS_ADMIN & 1)


def choose(netns: str, holds_records: Callable[[], bool]) -> str:
    """The dataplane for a command whose config names none (see the module's rule).

    holds_records: whether the emulated state holds records of this attachment; asked
    only when CNI_NETNS is empty or gone.
    """
    kind = netns_kind(netns)
    if kind == "nsfs":
        return LINUX if may_enter_namespaces() else EMULATED
    if kind == "file":
        return EMULATED
    if holds_records():
        return EMULATED
    return LINUX if may_enter_namespaces() else EMULATED
