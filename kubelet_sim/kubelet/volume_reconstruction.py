"""What a restarted kubelet learns from its disk: the ``vol_data.json`` files beside every
staging path, block map and pod volume tell which volumes are staged and which pods use
them (the kubelet's volume reconstruction)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kubelet_sim.kubelet.paths import (
    CSI_PLUGIN_NAME,
    VOL_DATA_FILE,
    KubeletPaths,
    escape_qualified_name,
    load_volume_data,
)

VolumeKey = tuple[str, str]  # (driver, volume handle)


@dataclass
class Reconstructed:
    device_mounts: dict[VolumeKey, Path] = field(default_factory=dict)  # staged volumes
    users: dict[VolumeKey, set[str]] = field(default_factory=dict)  # pod UIDs per volume
    pod_volumes: int = 0  # how many pod volumes were found


def reconstruct_from_disk(paths: KubeletPaths) -> Reconstructed:
    """Staged volumes and their users, from the files under the kubelet root."""
    out = Reconstructed()
    for data_file in sorted(paths.csi_plugin_dir.glob(f"*/*/{VOL_DATA_FILE}")):
        if data_file.parent.parent.name == paths.volume_devices_dir.name:
            continue
        data = load_volume_data(data_file.parent)
        key = (data["driverName"], data["volumeHandle"])
        out.device_mounts.setdefault(key, data_file.parent / "globalmount")
    for data_file in sorted(paths.volume_devices_dir.glob(f"*/data/{VOL_DATA_FILE}")):
        data = load_volume_data(data_file.parent)
        spec_name = data_file.parent.parent.name
        key = (data["driverName"], data["volumeHandle"])
        out.device_mounts.setdefault(key, paths.block_staging_path(spec_name))
        for link in paths.pods_dir.glob(f"*/volumeDevices/*/{spec_name}"):
            out.users.setdefault(key, set()).add(link.parents[2].name)
            out.pod_volumes += 1
    csi_dir = escape_qualified_name(CSI_PLUGIN_NAME)  # (a configMap key may be vol_data.json)
    for data_file in sorted(paths.pods_dir.glob(f"*/volumes/{csi_dir}/*/{VOL_DATA_FILE}")):
        data = load_volume_data(data_file.parent)
        key = (data["driverName"], data["volumeHandle"])
        out.users.setdefault(key, set()).add(data_file.parents[3].name)
        out.pod_volumes += 1
    return out
