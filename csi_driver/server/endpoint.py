"""The CSI endpoint: ``unix:///abs/path`` or a bare absolute path; stale sockets replaced."""

from __future__ import annotations

import os
import stat

UNIX_PREFIX = "unix://"


class EndpointError(ValueError):
    """The endpoint cannot be used; the message says why."""


def socket_path(endpoint: str) -> str:
    path = endpoint[len(UNIX_PREFIX):] if endpoint.startswith(UNIX_PREFIX) else endpoint
    if "://" in path or not path:
        raise EndpointError(f"unsupported endpoint {endpoint!r}: use unix:///abs/path")
    if not os.path.isabs(path):
        raise EndpointError(f"endpoint path {path!r} must be absolute")
    if len(path.encode()) > 107:
        raise EndpointError(f"socket path {path!r} is longer than the 107-byte unix limit")
    return path


def prepare(path: str) -> None:
    """Remove a stale socket at ``path``; refuse anything else that is there."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise EndpointError(f"socket directory {parent!r} does not exist") from None
        return
    if stat.S_ISSOCK(st.st_mode):
        os.unlink(path)
        return
    raise EndpointError(f"{path!r} exists and is not a socket; refusing to replace it")


def remove(path: str) -> None:
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
    except FileNotFoundError:
        pass
