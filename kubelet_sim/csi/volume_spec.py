"""What the volume manager is told about a pod and a CSI volume (plain values, no API server).

The caller fills a `CsiVolume` from the PersistentVolume's ``spec.csi`` (or the pod's inline
``csi`` volume), the CSIDriver object (``podInfoOnMount``) and the VolumeAttachment's
``status.attachmentMetadata`` (the publish context). Secrets travel as references
({name, namespace}); the volume manager reads them when it makes the call that needs them,
as the kubelet does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from csi_protos import csi_pb2
from kubelet_sim.csi.driver_policy import DriverPolicy, selinux_mount_option
from kubelet_sim.csi.naming import ephemeral_volume_handle

AccessMode = csi_pb2.VolumeCapability.AccessMode
NodeRpc = csi_pb2.NodeServiceCapability.RPC

POD_INFO_PREFIX = "csi.storage.k8s.io/"
SecretRef = Mapping[str, str]  # a SecretReference: {"name", "namespace"}


class SecretLookup(Protocol):
    """Where the kubelet reads Secrets (the API server's role)."""

    async def get(self, ref: SecretRef | None) -> dict[str, str]:
        """The data of ``ref`` ({} for None); LookupError when it does not exist."""
        ...


@dataclass(frozen=True)
class PodInfo:
    """The pod whose volume is published: with ``podInfoOnMount`` the kubelet passes it
    to NodePublishVolume as the ``csi.storage.k8s.io/pod.*`` volume context keys."""

    name: str
    namespace: str
    uid: str
    service_account: str = "default"


@dataclass(frozen=True)
class CsiVolume:
    """One CSI volume as a pod on this node uses it.

    `spec_name` is the PV name, or the pod's volume name for an inline ephemeral volume
    (whose handle the kubelet derives from the pod UID and that name: leave
    `volume_handle` empty). `access_mode` is the Kubernetes mode (``ReadWriteOnce``, ...).
    """

    driver: str
    spec_name: str
    volume_handle: str = ""
    volume_attributes: Mapping[str, str] = field(default_factory=dict)
    publish_context: Mapping[str, str] = field(default_factory=dict)
    fs_type: str = ""
    access_mode: str = "ReadWriteOnce"
    read_only: bool = False
    mount_options: tuple[str, ...] = ()
    block: bool = False
    ephemeral: bool = False
    pod_info_on_mount: bool = False
    node_stage_secret_ref: SecretRef | None = None
    node_publish_secret_ref: SecretRef | None = None
    node_expand_secret_ref: SecretRef | None = None
    # From the CSIDriver object and the pod (see `driver_policy`): the driver's policy, every
    # access mode of the PV, the pod's fsGroup and its change policy, and the SELinux label
    # to mount with ("" for none).
    policy: DriverPolicy = field(default_factory=DriverPolicy)
    access_modes: tuple[str, ...] = ()
    fs_group: int | None = None
    fs_group_change_policy: str = ""
    selinux_mount_label: str = ""

    def __post_init__(self) -> None:
        if not self.driver or not self.spec_name:
            raise ValueError("a CSI volume needs a driver and a spec name")
        if self.ephemeral and self.block:
            raise ValueError("inline ephemeral CSI volumes are filesystem volumes")
        if not self.ephemeral and not self.volume_handle:
            raise ValueError("a persistent CSI volume needs its volume handle")

    def handle_for(self, pod_uid: str) -> str:
        """The volume id sent to the driver for this pod's use of the volume."""
        if self.ephemeral:
            return ephemeral_volume_handle(pod_uid, self.spec_name)
        return self.volume_handle

    @property
    def lifecycle_mode(self) -> str:
        return "Ephemeral" if self.ephemeral else "Persistent"


def pod_info_attributes(pod: PodInfo, *, ephemeral: bool) -> dict[str, str]:
    """The volume_context keys the kubelet adds when the CSIDriver asks for podInfoOnMount."""
    return {
        f"{POD_INFO_PREFIX}pod.name": pod.name,
        f"{POD_INFO_PREFIX}pod.namespace": pod.namespace,
        f"{POD_INFO_PREFIX}pod.uid": pod.uid,
        f"{POD_INFO_PREFIX}serviceAccount.name": pod.service_account,
        f"{POD_INFO_PREFIX}ephemeral": "true" if ephemeral else "false",
    }


def csi_access_mode(
    k8s_mode: str, *, single_node_multi_writer: bool,
) -> csi_pb2.VolumeCapability.AccessMode.Mode:
    """Kubernetes access mode → CSI access mode, as the kubelet maps it.

    When the node plugin advertises SINGLE_NODE_MULTI_WRITER, ReadWriteOnce becomes
    SINGLE_NODE_MULTI_WRITER and ReadWriteOncePod SINGLE_NODE_SINGLE_WRITER; otherwise both
    are SINGLE_NODE_WRITER.
    """
    if k8s_mode == "ReadOnlyMany":
        return AccessMode.MULTI_NODE_READER_ONLY
    if k8s_mode == "ReadWriteMany":
        return AccessMode.MULTI_NODE_MULTI_WRITER
    if k8s_mode == "ReadWriteOnce":
        return (AccessMode.SINGLE_NODE_MULTI_WRITER if single_node_multi_writer
                else AccessMode.SINGLE_NODE_WRITER)
    if k8s_mode == "ReadWriteOncePod":
        return (AccessMode.SINGLE_NODE_SINGLE_WRITER if single_node_multi_writer
                else AccessMode.SINGLE_NODE_WRITER)
    return AccessMode.UNKNOWN


def volume_capability(
    volume: CsiVolume, *, access_mode: str | None = None, single_node_multi_writer: bool,
    mount_group: bool = False, selinux: bool = False,
) -> csi_pb2.VolumeCapability:
    """The capability of a node call. ``mount_group`` (NodeStage/NodePublish to a driver
    with VOLUME_MOUNT_GROUP): the pod's fsGroup as ``volume_mount_group``; ``selinux``
    (NodeStage/NodePublish): the ``context=`` option of the volume's SELinux label last."""
    mode = csi_access_mode(access_mode or volume.access_mode,
                           single_node_multi_writer=single_node_multi_writer)
    capability = csi_pb2.VolumeCapability(access_mode=AccessMode(mode=mode))
    if volume.block:
        capability.block.SetInParent()
    else:
        capability.mount.fs_type = volume.fs_type
        capability.mount.mount_flags.extend(volume.mount_options)
        if selinux and volume.selinux_mount_label:
            capability.mount.mount_flags.append(selinux_mount_option(volume.selinux_mount_label))
        if mount_group and volume.fs_group is not None:
            capability.mount.volume_mount_group = str(volume.fs_group)
    return capability


class _Declared:
    """A `NodeCapabilities` flag: whether the plugin declared one RPC type."""

    def __init__(self, rpc: int) -> None:
        self.rpc = rpc

    def __get__(self, caps: NodeCapabilities, owner: type | None = None) -> bool:
        return self.rpc in caps.rpcs


@dataclass(frozen=True)
class NodeCapabilities:
    """The node plugin's NodeGetCapabilities answer, as the kubelet reads it."""

    rpcs: frozenset[csi_pb2.NodeServiceCapability.RPC.Type]

    @classmethod
    def from_response(cls, response: csi_pb2.NodeGetCapabilitiesResponse) -> NodeCapabilities:
        return cls(frozenset(c.rpc.type for c in response.capabilities if c.HasField("rpc")))

    stage_unstage = _Declared(NodeRpc.STAGE_UNSTAGE_VOLUME)
    expand = _Declared(NodeRpc.EXPAND_VOLUME)
    volume_stats = _Declared(NodeRpc.GET_VOLUME_STATS)
    single_node_multi_writer = _Declared(NodeRpc.SINGLE_NODE_MULTI_WRITER)
    volume_mount_group = _Declared(NodeRpc.VOLUME_MOUNT_GROUP)


@dataclass(frozen=True)
class VolumeStats:
    """NodeGetVolumeStats as the kubelet's metrics: bytes and inodes, and the condition."""

    capacity_bytes: int = 0
    used_bytes: int = 0
    available_bytes: int = 0
    inodes: int = 0
    inodes_used: int = 0
    inodes_free: int = 0
    abnormal: bool = False
    message: str = ""

    @classmethod
    def from_response(cls, response: csi_pb2.NodeGetVolumeStatsResponse) -> VolumeStats:
        values: dict[str, int] = {}
        for usage in response.usage:
            if usage.unit == csi_pb2.VolumeUsage.BYTES:
                values.update(capacity_bytes=usage.total, used_bytes=usage.used,
                              available_bytes=usage.available)
            elif usage.unit == csi_pb2.VolumeUsage.INODES:
                values.update(inodes=usage.total, inodes_used=usage.used,
                              inodes_free=usage.available)
        condition = response.volume_condition
        return cls(**values, abnormal=condition.abnormal, message=condition.message)
