"""How the linux dataplane words the kernel's refusals, as the reference plugins do."""

from __future__ import annotations

from cni_plugin.dataplane.netlink_wire import NetlinkError
from cni_spec.errors import CNIError, internal
from cni_spec.types import DefaultGatewayRoute, Route

EPERM = 1


def go_ipnet(route: Route) -> str:
    """A route's dst as the reference prints it in messages (Go's %v of a net.IPNet)."""
    import ipaddress  # only to word this error

    net = ipaddress.ip_interface(route.dst)
    if isinstance(route, DefaultGatewayRoute):
        mask = bytes(16) if net.version == 6 else bytes(10) + b"\xff\xff" + bytes(4)
    else:
        mask = net.netmask.packed
    return f"{{{net.ip} {mask.hex()}}}"


def fs_magic(path: str) -> int:
    """statfs(2) f_type, only needed to word an error (Python has no os.statfs)."""
    import ctypes
    import sys

    buf = ctypes.create_string_buffer(256)  # struct statfs; f_type is its first field
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.statfs(path.encode(), buf) != 0:
        return 0
    return int.from_bytes(buf.raw[:8], sys.byteorder)


def refused(what: str, e: OSError) -> CNIError:
    """The kernel's refusal, worded as the reference wraps it; without the capabilities
    the error says what the linux dataplane needs."""
    if e.errno == EPERM:
        from cni_plugin.dataplane.commands import NOT_PERMITTED

        return CNIError(999, f"{what}: operation not permitted", NOT_PERMITTED)
    text = e.reason if isinstance(e, NetlinkError) else (e.strerror or str(e))
    return internal(f"{what}: {text[:1].lower()}{text[1:]}")
