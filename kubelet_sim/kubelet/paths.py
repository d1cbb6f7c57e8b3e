"""The kubelet's directory layout under one root directory (``/var/lib/kubelet`` on a real node).

Names follow the kubelet's CSI volume plugin (plugin name ``kubernetes.io/csi``, escaped
``kubernetes.io~csi`` in pod directories):

- staging (global mount) of a filesystem volume:
  ``plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount``, its
  ``vol_data.json`` one level up;
- publish target of a filesystem volume:
  ``pods/<podUID>/volumes/kubernetes.io~csi/<spec name>/mount``, ``vol_data.json`` beside
  ``mount``; the spec name is the PV name, or the pod's volume name for inline volumes;
- block volumes: ``plugins/kubernetes.io/csi/volumeDevices/{staging/<pv>, publish/<pv>/<podUID>,
  <pv>/dev, <pv>/data/vol_data.json}`` and the pod's device link
  ``pods/<podUID>/volumeDevices/kubernetes.io~csi/<pv>``;
- plugin registration sockets in ``plugins_registry/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

CSI_PLUGIN_NAME = "kubernetes.io/csi"
VOL_DATA_FILE = "vol_data.json"
DIR_MODE = 0o750


def escape_qualified_name(name: str) -> str:
    """The kubelet's escaping of a qualified name for use as one path element."""
    return name.replace("/", "~")


def volume_handle_digest(volume_handle: str) -> str:
    """Hex sha256 of the volume handle: the per-volume directory under the driver's dir."""
    return hashlib.sha256(volume_handle.encode()).hexdigest()


@dataclass(frozen=True)
class KubeletPaths:
    root: Path

    # -- top level -------------------------------------------------------------

    @property
    def plugins_dir(self) -> Path:
        return self.root / "plugins"

    @property
    def plugins_registry_dir(self) -> Path:
        return self.root / "plugins_registry"

    @property
    def pods_dir(self) -> Path:
        return self.root / "pods"

    @property
    def csi_plugin_dir(self) -> Path:
        return self.plugins_dir / CSI_PLUGIN_NAME

    def registration_socket(self, driver: str) -> Path:
        """Where node-driver-registrar serves the registration API for `driver`."""
        return self.plugins_registry_dir / f"{driver}-reg.sock"

    def driver_socket(self, driver: str) -> Path:
        """The conventional home of a CSI driver's own socket on the node."""
        return self.plugins_dir / driver / "csi.sock"

    # -- filesystem volumes ----------------------------------------------------

    def device_mount_path(self, driver: str, volume_handle: str) -> Path:
        """The staging path (NodeStage staging_target_path) of a filesystem volume."""
        return self.csi_plugin_dir / driver / volume_handle_digest(volume_handle) / "globalmount"

    def pod_volume_dir(self, pod_uid: str, spec_name: str) -> Path:
        """The per-pod volume directory holding ``mount`` and ``vol_data.json``."""
        return (
            self.pods_dir / pod_uid / "volumes" / escape_qualified_name(CSI_PLUGIN_NAME)
            / escape_qualified_name(spec_name)
        )

    def pod_mount_path(self, pod_uid: str, spec_name: str) -> Path:
        """The publish path (NodePublish target_path) of a filesystem volume for a pod."""
        return self.pod_volume_dir(pod_uid, spec_name) / "mount"

    # -- block volumes ---------------------------------------------------------

    @property
    def volume_devices_dir(self) -> Path:
        return self.csi_plugin_dir / "volumeDevices"

    def block_staging_path(self, spec_name: str) -> Path:
        return self.volume_devices_dir / "staging" / spec_name

    def block_publish_path(self, spec_name: str, pod_uid: str) -> Path:
        return self.volume_devices_dir / "publish" / spec_name / pod_uid

    def block_global_map_path(self, spec_name: str) -> Path:
        return self.volume_devices_dir / escape_qualified_name(spec_name) / "dev"

    def block_data_dir(self, spec_name: str) -> Path:
        return self.volume_devices_dir / escape_qualified_name(spec_name) / "data"

    def pod_device_map_path(self, pod_uid: str, spec_name: str) -> Path:
        """The pod's link to a block volume (what the runtime hands the container)."""
        return (
            self.pods_dir / pod_uid / "volumeDevices" / escape_qualified_name(CSI_PLUGIN_NAME)
            / spec_name
        )


# -- files the kubelet keeps beside its mount points ------------------------------------


def make_dirs(path: Path) -> None:
    """``mkdir -p`` with the kubelet's 0750 (umask-independent for what it creates)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
            os.chmod(directory, DIR_MODE)


def save_volume_data(directory: Path, data: dict[str, str]) -> Path:
    """Write ``vol_data.json`` atomically and durably (temp file, fsync, rename, fsync dir)."""
    target = directory / VOL_DATA_FILE
    tmp = directory / f".{VOL_DATA_FILE}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        # as Go's json.Encoder writes a map: sorted keys, compact, newline
        json.dump(data, out, sort_keys=True, separators=(",", ":"))
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, target)
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
    return target


def load_volume_data(directory: Path) -> dict[str, str]:
    """Read ``vol_data.json`` (FileNotFoundError when it is not there)."""
    with open(directory / VOL_DATA_FILE, encoding="utf-8") as src:
        data = json.load(src)
    if not isinstance(data, dict):
        raise ValueError(f"{directory / VOL_DATA_FILE}: not a JSON object")
    return {str(k): str(v) for k, v in data.items()}


def remove_mount_dir(mount_path: Path) -> None:
    """The kubelet's cleanup after unpublish/unstage: when `mount_path` is no longer a mount
    point, remove it if it is still there, then ``vol_data.json`` and the parent directory."""
    if os.path.ismount(mount_path):
        raise OSError(f"{mount_path} is still mounted")
    if mount_path.is_symlink() or mount_path.is_file():
        mount_path.unlink()
    elif mount_path.is_dir():
        mount_path.rmdir()
    with contextlib.suppress(FileNotFoundError):
        (mount_path.parent / VOL_DATA_FILE).unlink()
    with contextlib.suppress(OSError):  # absent, or still holding something else
        mount_path.parent.rmdir()


def remove_pod_dir(pod_dir: Path) -> bool:
    """The kubelet's cleanup of a pod it no longer runs (cleanupOrphanedPodDirs): the
    whole ``pods/<uid>`` tree, once nothing in it is a mount point or on another file
    system; links are removed, never followed. False (nothing removed) while anything
    is still mounted there."""
    try:
        device = pod_dir.lstat().st_dev
    except FileNotFoundError:
        return True
    for root, dirs, _files in os.walk(pod_dir):
        for name in dirs:
            child = Path(root) / name
            if os.path.ismount(child) or child.lstat().st_dev != device:
                return False
    for root, dirs, files in os.walk(pod_dir, topdown=False):
        for name in files:
            with contextlib.suppress(FileNotFoundError):
                (Path(root) / name).unlink()
        for name in dirs:
            child = Path(root) / name
            with contextlib.suppress(FileNotFoundError):
                if child.is_symlink():
                    child.unlink()
                else:
                    child.rmdir()
    with contextlib.suppress(FileNotFoundError):
        pod_dir.rmdir()
    return True


def link_block_device(paths: KubeletPaths, pod_uid: str, spec_name: str, published: Path) -> Path:
    """The kubelet's MapBlockVolume: a link per pod in the global map dir and in the pod;
    returns the pod's link."""
    links = (paths.block_global_map_path(spec_name) / pod_uid,
             paths.pod_device_map_path(pod_uid, spec_name))
    for link in links:
        make_dirs(link.parent)
        if os.path.lexists(link):
            link.unlink()
        link.symlink_to(published)
    return links[1]


def unlink_block_device(paths: KubeletPaths, pod_uid: str, spec_name: str) -> None:
    """Undo link_block_device; what is already gone is fine."""
    for link in (paths.block_global_map_path(spec_name) / pod_uid,
                 paths.pod_device_map_path(pod_uid, spec_name)):
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        with contextlib.suppress(OSError):
            link.parent.rmdir()
