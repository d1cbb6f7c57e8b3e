"""hostPath volumes on a simulated node: the path names a place in the node's own root
directory (``<state dir>/<node>/rootfs``), never on the machine running the simulator.

A path that would lead out of that root (through ``..`` or a symlink) fails the mount.
The ``type`` checks are the kubelet's, with its messages:
``DirectoryOrCreate`` makes a missing directory (0755), ``FileOrCreate`` a missing file
(0644, its parent directory must exist), and ``Directory``, ``File``, ``Socket``,
``CharDevice``, ``BlockDevice`` require that kind of thing; no type checks nothing.
Nothing is made under ``pods/<uid>/volumes`` for a hostPath volume.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath


class HostPathError(Exception):
    """The volume cannot be set up; the message is the kubelet's."""


def node_path(node_root: Path, path: str) -> Path:
    """Where ``path`` (absolute on the node) is under ``node_root``; HostPathError when
    it leads outside it."""
    if ".." in PurePosixPath(path).parts:
        raise HostPathError(f"invalid HostPath `{path}`: must not contain '..'")
    root = Path(os.path.realpath(node_root))
    candidate = root / path.lstrip("/")
    resolved = Path(os.path.realpath(candidate))
    if resolved != root and root not in resolved.parents:
        raise HostPathError(f"hostPath {path} resolves to {resolved}, outside the node's "
                            f"root directory {root}")
    return candidate


def check_type(target: Path, shown: str, path_type: str) -> None:
    """The kubelet's hostPath type check of ``target`` (``shown`` is the pod's path)."""
    if path_type == "":
        return
    if path_type == "DirectoryOrCreate":
        if not os.path.lexists(target):
            target.mkdir(mode=0o755, parents=True)
            os.chmod(target, 0o755)
            return
        path_type = "Directory"
    if path_type == "FileOrCreate":
        if not os.path.lexists(target):
            try:
                fd = os.open(target, os.O_CREAT | os.O_RDONLY, 0o644)
            except OSError as err:
                raise HostPathError(f"open {shown}: {(err.strerror or str(err)).lower()}") from None
            os.close(fd)
            return
        path_type = "File"
    checks = {
        "Directory": (stat.S_ISDIR, "a directory"),
        "File": (stat.S_ISREG, "a file"),
        "Socket": (stat.S_ISSOCK, "a socket file"),
        "CharDevice": (stat.S_ISCHR, "a character device"),
        "BlockDevice": (stat.S_ISBLK, "a block device"),
    }
    if path_type not in checks:
        raise HostPathError(f"{path_type} is an invalid volume type")
    is_kind, what = checks[path_type]
    try:
        mode = target.stat().st_mode
    except OSError:
        mode = 0
    if not is_kind(mode):
        raise HostPathError(f"hostPath type check failed: {shown} is not {what}")


def set_up_host_path(node_root: Path, source: dict[str, object]) -> Path:
    """Check a hostPath volume source; returns where it is on this machine."""
    path = str(source.get("path", ""))
    node_root.mkdir(parents=True, exist_ok=True)
    target = node_path(node_root, path)
    check_type(target, path, str(source.get("type") or ""))
    return target
