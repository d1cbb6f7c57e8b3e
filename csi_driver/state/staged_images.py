"""The node's side of filesystem volumes that are ext4 images (``--fs-backend loop``):
NodeStage mounts the image at the staging path, publishes bind-mount the staging
path, NodeUnstage unmounts it, NodeExpandVolume grows the filesystem.

Growing: online (resize2fs on the mounted filesystem) where the kernel allows it
(CAP_SYS_RESOURCE); otherwise offline, which needs the filesystem unmounted: done
at once when the volume is only staged, or at its next stage when it is published.
"""

from __future__ import annotations

import os
import subprocess

from csi_driver.errors import FailedPrecondition
from csi_driver.state import loop_fs, target_paths
from csi_driver.state.target_paths import Found


def needs_growth(image: str) -> bool:
    return loop_fs.filesystem_bytes(image) < os.path.getsize(image)


def _grow_offline(image: str) -> None:
    # resize2fs insists on a freshly checked filesystem; e2fsck exits 1 or 2 when it
    # fixed something (e.g. replayed the journal of a copied live image), 4+ on failure.
    check = subprocess.run([loop_fs.tool("e2fsck"), "-f", "-p", image], capture_output=True,
                           text=True, check=False)
    if check.returncode >= 4:
        raise loop_fs.LoopError(5, f"e2fsck failed: {check.stdout.strip()}")
    loop_fs.run("resize2fs", image)


def mount(image: str, staging: str) -> None:
    """Mount ``image`` at ``staging``: an existing empty directory (the CO creates it)
    reached without symlinks, else FAILED_PRECONDITION.  A filesystem smaller than its
    image (expanded or restored bigger meanwhile) is grown first."""
    try:
        with target_paths.parent_dir(staging, create=False) as (dir_fd, name):
            found = target_paths.inspect(dir_fd, name, staging)
            if found is not Found.EMPTY_DIR:
                raise FailedPrecondition(
                    "staging_target_path cannot be used: "
                    + target_paths.describe(dir_fd, name, staging)
                )
            if needs_growth(image):
                _grow_offline(image)
            loop_fs.mount(image, dir_fd, name)
    except FileNotFoundError:
        raise FailedPrecondition(
            f"staging_target_path {staging!r} does not exist (the CO creates it)"
        ) from None


def is_mounted(image: str, staging: str) -> bool:
    return loop_fs.mounted_at(image, staging)


def unmount(image: str, staging: str) -> None:
    """Unmount our image from ``staging``; anything else mounted there stays."""
    while loop_fs.mounted_at(image, staging):
        loop_fs.unmount(staging)


def grow(image: str, staging: str, published: bool) -> None:
    """Make the filesystem fill its image (NodeExpandVolume)."""
    if not needs_growth(image):
        return
    if loop_fs.grows_online():
        loop_fs.grow(staging)
        return
    if published:
        raise FailedPrecondition(
            "the filesystem cannot grow while published here (the kernel denies online "
            "resizing without CAP_SYS_RESOURCE); it grows when it is next staged"
        )
    unmount(image, staging)
    mount(image, staging)  # grows it before mounting again


def usage(staging: str) -> tuple[int, int, int, int, int, int]:
    """(total, used, available) bytes and inodes of the filesystem mounted at ``staging``."""
    st = os.statvfs(staging)
    total = st.f_blocks * st.f_frsize
    return (total, total - st.f_bfree * st.f_frsize, st.f_bavail * st.f_frsize,
            st.f_files, st.f_files - st.f_ffree, st.f_favail)
