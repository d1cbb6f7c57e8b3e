"""The driver's configuration: one frozen dataclass, validated once at start."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from csi_driver.errors import InvalidArgument

TOPOLOGY_NODE_KEY = "topology.csi-mini.example.com/node"
DEFAULT_DRIVER_NAME = "csi-mini.example.com"
_DRIVER_NAME_RE = re.compile(r"^[a-zA-Z][A-Za-z0-9\-._]{0,61}[a-zA-Z0-9]$")
_SIZE_RE = re.compile(r"^(\d+)\s*(Ki|Mi|Gi|Ti|Pi)?$")
_UNITS = {None: 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50}
MODES = ("all", "controller", "node")
EXPANSION_MODES = ("online", "offline", "none")
MOUNT_METHODS = ("auto", "bind", "symlink")
# process: an answered mutation survives kill -9 of any driver process (the commit is in
# the kernel before the answer); host: it also survives a host crash or power loss (each
# commit and each new volume's directory entry wait for the disk).
DURABILITY_MODES = ("process", "host")
# loop: a filesystem volume is a sparse ext4 image loop-mounted at stage; dir: a plain
# directory; auto: loop where the process may (root and mkfs.ext4), else dir.
FS_BACKENDS = ("auto", "loop", "dir")


def parse_size(text: str) -> int:
    """Bytes from ``123``, ``10Gi`` or ``1Ti``."""
    match = _SIZE_RE.match(text.strip())
    if not match:
        raise ValueError(f"invalid size {text!r}: use bytes or a Ki/Mi/Gi/Ti suffix")
    return int(match.group(1)) * _UNITS[match.group(2)]


def default_state_dir() -> str:
    if os.geteuid() == 0:
        return "/var/lib/csi-mini"
    return os.path.join(os.path.expanduser("~"), ".local", "state", "csi-mini")


@dataclass(frozen=True)
class Config:
    endpoint: str
    node_id: str
    state_dir: str
    driver_name: str = DEFAULT_DRIVER_NAME
    vendor_version: str = "0.1.0"
    mode: str = "all"
    socket_mode: int = 0o600
    attach_required: bool = True
    topology: bool = True
    topology_segments: tuple[tuple[str, str], ...] = ()
    expansion: str = "online"
    node_expansion: bool = True
    snapshots: bool = True
    group_snapshots: bool = True
    snapshot_metadata: bool = True
    modify_volume: bool = True
    mutable_parameters: tuple[str, ...] = ("iops",)
    volume_condition: bool = True
    single_node_multi_writer: bool = True
    # VOLUME_MOUNT_GROUP: the CO passes the pod's fsGroup as volume_mount_group and leaves
    # ownership to the driver (the kubelet then changes none itself)
    volume_mount_group: bool = False
    max_volumes_per_node: int = 64
    capacity: tuple[tuple[str, int], ...] = (("default", 1 << 40),)
    max_volume_size: int = 1 << 40
    secrets: tuple[tuple[str, str], ...] = ()
    mount_method: str = "auto"
    durability: str = "process"
    # node-driver-registrar role: serve pluginregistration on <dir>/<driver>-reg.sock
    registration_dir: str = ""
    # DeleteVolume of a volume that still has snapshots → FAILED_PRECONDITION (off: the
    # snapshots are independent copies and stay, as in csi-driver-host-path)
    snapshots_block_delete: bool = False
    # data left without a record (a crash mid-create) is removed every this many
    # seconds, once nothing in it changed for orphan_min_age seconds
    orphan_sweep_interval: float = 300.0
    orphan_min_age: float = 60.0
    # NodePublish targets must lie below one of these (absolute, normalised); () = anywhere
    allowed_target_roots: tuple[str, ...] = ()
    fs_backend: str = "auto"
    # fault injection: rules loaded at start (YAML/JSON file) and a unix socket through
    # which `python -m csi_driver faults` adds, lists and clears them at run time
    faults: str = ""
    fault_control: str = ""
    # Prometheus metrics at http://HOST:PORT/metrics ("" = none)
    metrics_address: str = ""

    @property
    def serves_controller(self) -> bool:
        return self.mode in ("all", "controller")

    @property
    def serves_node(self) -> bool:
        return self.mode in ("all", "node")

    @property
    def node_topology(self) -> dict[str, str]:
        """The segments this node reports (empty when topology is off)."""
        if not self.topology:
            return {}
        segments = {TOPOLOGY_NODE_KEY: self.node_id}
        segments.update(dict(self.topology_segments))
        return segments

    @property
    def pools(self) -> dict[str, int]:
        return dict(self.capacity)

    @property
    def default_pool(self) -> str:
        return self.capacity[0][0]

    def validate(self) -> Config:
        """Raise ``InvalidArgument`` naming the first bad setting; return self."""
        if not _DRIVER_NAME_RE.match(self.driver_name):
            raise InvalidArgument(
                f"driver name {self.driver_name!r} must be ≤63 chars, start with a letter "
                "and hold only letters, digits, '-', '.' and '_'"
            )
        if not self.vendor_version:
            raise InvalidArgument("vendor version must not be empty")
        if not self.node_id or len(self.node_id.encode()) > 256:
            raise InvalidArgument("node id must be 1..256 bytes")
        if self.mode not in MODES:
            raise InvalidArgument(f"mode must be one of {', '.join(MODES)}")
        if self.expansion not in EXPANSION_MODES:
            raise InvalidArgument(f"expansion must be one of {', '.join(EXPANSION_MODES)}")
        if self.mount_method not in MOUNT_METHODS:
            raise InvalidArgument(f"mount method must be one of {', '.join(MOUNT_METHODS)}")
        if self.durability not in DURABILITY_MODES:
            raise InvalidArgument(f"durability must be one of {', '.join(DURABILITY_MODES)}")
        if self.max_volumes_per_node < 0:
            raise InvalidArgument("max volumes per node must be ≥ 0")
        if not self.capacity:
            raise InvalidArgument("at least one capacity pool is needed")
        for pool, size in self.capacity:
            if not pool or size <= 0:
                raise InvalidArgument(f"capacity pool {pool!r} needs a name and a positive size")
        if len({pool for pool, _ in self.capacity}) != len(self.capacity):
            raise InvalidArgument("capacity pool names must be unique")
        if self.max_volume_size <= 0:
            raise InvalidArgument("max volume size must be positive")
        if not os.path.isabs(self.state_dir):
            raise InvalidArgument("state dir must be an absolute path")
        if self.orphan_sweep_interval <= 0:
            raise InvalidArgument("orphan sweep interval must be positive")
        if self.orphan_min_age < 0:
            raise InvalidArgument("orphan min age must be ≥ 0")
        for root in self.allowed_target_roots:
            if not os.path.isabs(root) or os.path.normpath(root) != root:
                raise InvalidArgument(
                    f"allowed target root {root!r} must be an absolute, normalised path"
                )
        if self.fs_backend not in FS_BACKENDS:
            raise InvalidArgument(f"fs backend must be one of {', '.join(FS_BACKENDS)}")
        for key, _ in self.topology_segments:
            if not key or key == TOPOLOGY_NODE_KEY:
                raise InvalidArgument(f"topology segment key {key!r} is empty or reserved")
        return self
