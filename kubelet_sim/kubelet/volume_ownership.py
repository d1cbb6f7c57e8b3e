"""The kubelet's SetVolumeOwnership: the pod's fsGroup applied to a published volume.

Every file and directory under the volume (none followed through a symlink; a symlink gets
the group but keeps its mode, as chmod would reach its target) gets the group ``fsGroup``
and the permission bits the kubelet adds: rw for the group (r only for a read-only
volume), and on directories also x and the setgid bit, so new files inherit the group.
With ``fsGroupChangePolicy: OnRootMismatch`` nothing is walked when the volume's root
already has that group, those bits and setgid; ``Always`` (the default) walks every time.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kubelet_sim.csi.driver_policy import VolumeOperationError, kubelet_applies_fs_group
from kubelet_sim.csi.volume_spec import CsiVolume

ON_ROOT_MISMATCH = "OnRootMismatch"
_RW = 0o660
_RO = 0o440
_EXEC = 0o110


@dataclass(frozen=True)
class OwnershipChange:
    """What one SetVolumeOwnership did: the paths it changed (0 when skipped)."""

    path: Path
    fs_group: int
    changed: int
    skipped: bool


def needs_change(root: Path, fs_group: int, read_only: bool) -> bool:
    """The OnRootMismatch test on the volume's root."""
    info = root.stat()
    if info.st_gid != fs_group or not stat.S_ISDIR(info.st_mode):
        return True
    wanted = (_RO if read_only else _RW) | _EXEC
    perms = stat.S_IMODE(info.st_mode)
    return (perms & wanted) != wanted or not perms & stat.S_ISGID


def set_volume_ownership(root: Path, fs_group: int, *, change_policy: str = "",
                         read_only: bool = False) -> OwnershipChange:
    """Apply ``fs_group`` under ``root``; OSError when a change is refused."""
    if change_policy == ON_ROOT_MISMATCH and not needs_change(root, fs_group, read_only):
        return OwnershipChange(root, fs_group, 0, skipped=True)
    changed = 0
    for path in _walk(root):
        _change(path, fs_group, read_only)
        changed += 1
    return OwnershipChange(root, fs_group, changed, skipped=False)


def _walk(root: Path) -> list[Path]:
    out = [root]
    if root.is_symlink() or not root.is_dir():
        return out
    for dirpath, dirnames, filenames in os.walk(root):  # os.walk follows no symlinked dir
        out.extend(Path(dirpath) / name for name in [*dirnames, *filenames])
    return out


def _change(path: Path, fs_group: int, read_only: bool) -> None:
    info = path.lstat()
    os.lchown(path, -1, fs_group)
    if stat.S_ISLNK(info.st_mode):
        return
    mask = _RO if read_only else _RW
    if stat.S_ISDIR(info.st_mode):
        mask |= _EXEC | stat.S_ISGID
    os.chmod(path, stat.S_IMODE(info.st_mode) | mask)


def apply_fs_group(volume: CsiVolume, target: Path) -> OwnershipChange | None:
    """SetUp's last step for a driver without VOLUME_MOUNT_GROUP: the pod's fsGroup applied
    to the published ``target`` when the driver's fsGroupPolicy lets the kubelet do it
    (None when it does not); VolumeOperationError with the kubelet's sentence on failure."""
    if not kubelet_applies_fs_group(
            fs_group=volume.fs_group, policy=volume.policy.fs_group_policy,
            read_only=volume.read_only, fs_type=volume.fs_type,
            access_modes=volume.access_modes, inline=volume.ephemeral):
        return None
    assert volume.fs_group is not None
    try:
        return set_volume_ownership(target, volume.fs_group,
                                    change_policy=volume.fs_group_change_policy,
                                    read_only=volume.read_only)
    except OSError as err:
        raise VolumeOperationError(
            f"applyFSGroup failed for vol {volume.volume_handle or volume.spec_name}: "
            f"{err}") from None
