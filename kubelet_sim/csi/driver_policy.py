"""What a CSIDriver object tells the kubelet's CSI volume plugin, and the plugin's rules for it.

The kubelet reads the CSIDriver of a volume's driver (none is allowed: Kubernetes' defaults
then apply, and only persistent volumes are accepted) and decides from it:

- ``volumeLifecycleModes``: SetUp of an inline (Ephemeral) volume, or of a PV (Persistent),
  fails unless the driver lists that mode, with the plugin's sentence
  (``volume mode "Ephemeral" not supported by driver X (only supports ["Persistent"])``).
- ``fsGroupPolicy``: whether the kubelet itself applies the pod's ``fsGroup`` to the
  published directory (``None`` never; ``File`` always; ``ReadWriteOnceWithFSType`` only
  for a volume with an fsType and a ReadWriteOnce access mode, or an inline volume). A
  driver with the VOLUME_MOUNT_GROUP node capability gets the fsGroup as
  ``volume_mount_group`` in NodeStage/NodePublish instead, whatever the policy, and the
  kubelet then changes no ownership.
- ``seLinuxMount``: with it, a PV whose only access mode is ReadWriteOncePod is staged and
  published with the mount option ``context="<file label>"`` when the containers that use
  it run with SELinux options (the SELinuxMountReadWriteOncePod gate, on by default in
  1.35; the SELinuxMount gate that extends it to every access mode is off by default). A
  pod whose ``seLinuxChangePolicy`` is ``Recursive`` opts out.
- ``attachRequired``, ``podInfoOnMount`` and ``nodeAllocatableUpdatePeriodSeconds``
  are read as they are.

The emulated node behaves as a host with SELinux enabled: the file label comes from the
process options as go-selinux's InitLabels derives it (user and level from the options,
``object_r`` and ``container_file_t`` from the container contexts of the host).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

PERSISTENT = "Persistent"
EPHEMERAL = "Ephemeral"
READ_WRITE_ONCE_WITH_FS_TYPE = "ReadWriteOnceWithFSType"
FILE = "File"
NONE = "None"

# Feature gates of the 1.35 kubelet this simulator follows (their defaults).
SELINUX_MOUNT_READ_WRITE_ONCE_POD = True
SELINUX_MOUNT = False
SELINUX_CHANGE_POLICY = True

# The file context of the host's container policy (lxc_contexts' "file" entry).
_FILE_ROLE = "object_r"
_FILE_TYPE = "container_file_t"
_DEFAULT_USER = "system_u"


class VolumeOperationError(Exception):
    """A kubelet volume operation failed before (or after) its CSI call; the message is the
    plugin's. Reported as the operation's failure and retried on the kubelet's next pass."""


@dataclass(frozen=True)
class DriverPolicy:
    """The fields of one CSIDriver object (``exists`` False: there is none)."""

    exists: bool = False
    attach_required: bool = True
    pod_info_on_mount: bool = False
    fs_group_policy: str = READ_WRITE_ONCE_WITH_FS_TYPE
    se_linux_mount: bool = False
    lifecycle_modes: tuple[str, ...] = (PERSISTENT,)
    node_allocatable_update_period_seconds: int = 0  # 0: no periodic update

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any] | None) -> DriverPolicy:
        """From a CSIDriver ``spec`` (None: no CSIDriver object)."""
        if spec is None:
            return cls()
        return cls(
            exists=True,
            attach_required=spec.get("attachRequired", True) is not False,
            pod_info_on_mount=bool(spec.get("podInfoOnMount")),
            fs_group_policy=str(spec.get("fsGroupPolicy") or READ_WRITE_ONCE_WITH_FS_TYPE),
            se_linux_mount=bool(spec.get("seLinuxMount")),
            lifecycle_modes=tuple(str(m) for m in spec.get("volumeLifecycleModes")
                                  or (PERSISTENT,)),
            node_allocatable_update_period_seconds=int(
                spec.get("nodeAllocatableUpdatePeriodSeconds") or 0),
        )


def lifecycle_mode_error(driver: str, policy: DriverPolicy, mode: str) -> str | None:
    """Why the plugin refuses a volume of lifecycle ``mode`` (None: it accepts it)."""
    if not policy.exists:
        if mode == PERSISTENT:
            return None
        return f'volume mode "{mode}" not supported by driver {driver} (no CSIDriver object)'
    if mode in policy.lifecycle_modes:
        return None
    listed = "[" + " ".join(f'"{m}"' for m in policy.lifecycle_modes) + "]"  # Go's %q of a list
    return f'volume mode "{mode}" not supported by driver {driver} (only supports {listed})'


def check_lifecycle_mode(driver: str, policy: DriverPolicy, mode: str) -> None:
    """SetUp's first check: VolumeOperationError with the kubelet's message when refused."""
    why = lifecycle_mode_error(driver, policy, mode)
    if why is not None:
        raise VolumeOperationError(
            f"kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: {why}")


def kubelet_applies_fs_group(*, fs_group: int | None, policy: str, read_only: bool,
                             fs_type: str, access_modes: Iterable[str], inline: bool) -> bool:
    """The plugin's supportsFSGroup: whether the kubelet changes ownership itself (when the
    driver does not take the group through VOLUME_MOUNT_GROUP)."""
    if fs_group is None or policy == NONE or read_only:
        return False
    if policy == FILE:
        return True
    if not fs_type:
        return False
    if inline:
        return True  # an inline volume is always published ReadWriteOnce
    return "ReadWriteOnce" in tuple(access_modes)


def volume_supports_selinux_mount(access_modes: Iterable[str], *, persistent: bool) -> bool:
    """VolumeSupportsSELinuxMount: a PV, and (without the SELinuxMount gate) one whose only
    access mode is ReadWriteOncePod."""
    if not SELINUX_MOUNT_READ_WRITE_ONCE_POD or not persistent:
        return False
    if SELINUX_MOUNT:
        return True
    modes = tuple(access_modes)
    return modes == ("ReadWriteOncePod",)


def selinux_file_label(options: Mapping[str, Any] | None,
                       rng: random.Random | None = None) -> str:
    """The file label of a process running with ``options`` (a pod's seLinuxOptions); "" for
    none. The process type and role do not carry over to files; a missing level is a fresh
    random MCS pair, as InitLabels allocates one."""
    if not options or not any(options.get(k) for k in ("user", "role", "type", "level")):
        return ""
    user = str(options.get("user") or _DEFAULT_USER)
    level = str(options.get("level") or "")
    if not level:
        pick = rng or random.SystemRandom()
        first, second = sorted(pick.sample(range(1024), 2))
        level = f"s0:c{first},c{second}"
    return f"{user}:{_FILE_ROLE}:{_FILE_TYPE}:{level}"


def selinux_mount_option(label: str) -> str:
    """The mount option the kubelet adds: the label quoted, as it may hold a comma."""
    return f'context="{label}"'


def effective_selinux_options(pod_spec: Mapping[str, Any],
                              volume_name: str) -> list[Mapping[str, Any] | None]:
    """The SELinux options of every container that mounts or maps ``volume_name``: its own
    ``seLinuxOptions``, else the pod's."""
    pod_options = (pod_spec.get("securityContext") or {}).get("seLinuxOptions")
    out: list[Mapping[str, Any] | None] = []
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for container in pod_spec.get(key) or []:
            uses = [*(container.get("volumeMounts") or []),
                    *(container.get("volumeDevices") or [])]
            if not any(u.get("name") == volume_name for u in uses):
                continue
            own = (container.get("securityContext") or {}).get("seLinuxOptions")
            out.append(own if own is not None else pod_options)
    return out


def selinux_mount_label(pod_spec: Mapping[str, Any], volume_name: str, *,
                        policy: DriverPolicy, access_modes: Iterable[str],
                        persistent: bool) -> str:
    """The label to mount the volume with ("" for none), as the kubelet's desired state of
    the world works it out; ValueError when containers ask for different labels of a
    volume that supports SELinux mounts."""
    if not SELINUX_MOUNT_READ_WRITE_ONCE_POD or not policy.se_linux_mount:
        return ""
    labels = {selinux_file_label(o) for o in effective_selinux_options(pod_spec, volume_name)}
    labels.discard("")
    if not labels:
        return ""
    supported = volume_supports_selinux_mount(access_modes, persistent=persistent)
    if len(labels) > 1:
        if supported:
            raise ValueError("conflicting SELinux labels of volume "
                             f"{volume_name}: {', '.join(sorted(labels))}")
        return ""
    if not supported:
        return ""
    change_policy = (pod_spec.get("securityContext") or {}).get("seLinuxChangePolicy")
    if SELINUX_CHANGE_POLICY and change_policy == "Recursive":
        return ""
    return labels.pop()
