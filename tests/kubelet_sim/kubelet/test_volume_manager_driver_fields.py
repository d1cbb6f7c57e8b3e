"""The CSIDriver fields as the volume manager honours them, argument by argument, against the
in-memory driver: fsGroupPolicy and VOLUME_MOUNT_GROUP, seLinuxMount's mount option, and
volumeLifecycleModes."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.driver_policy import DriverPolicy, VolumeOperationError
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.testing.fake_csi import DEFAULT_NODE_CAPS, FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace
from tests.kubelet_sim.kubelet.test_volume_manager import InstantClock

DRIVER = "fake.csi.example.com"
NodeRpc = csi_pb2.NodeServiceCapability.RPC
POD = PodInfo(name="web", namespace="default", uid="uid-a", service_account="builder")
GROUP = 2345
LABEL = "system_u:object_r:container_file_t:s0:c1,c2"
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group needs root")


class Node:
    def __init__(self, root: Path) -> None:
        self.driver = FakeCsiDriver(name=DRIVER)
        self.driver.add_volume("vol-1")
        self.client = FakeCsiClient(self.driver, trace=Trace(), node="node-1")
        self.paths = KubeletPaths(root)
        self.reports: list[str] = []
        self.manager = VolumeManager(node_name="node-1", paths=self.paths,
                                     client_for=lambda _name: self.client,
                                     clock=InstantClock(), max_attempts=1)

    async def mount(self, volume: CsiVolume) -> Path:
        return await self.manager.mount(POD, volume, failed=self.reports.append)

    def published_capability(self) -> csi_pb2.VolumeCapability:
        return self.driver.requests_of("NodePublishVolume")[-1].volume_capability

    def staged_capability(self) -> csi_pb2.VolumeCapability:
        return self.driver.requests_of("NodeStageVolume")[-1].volume_capability


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    yield Node(tmp_path / "kubelet")


def pv(**overrides: object) -> CsiVolume:
    fields: dict[str, object] = {
        "driver": DRIVER, "spec_name": "pvc-1234", "volume_handle": "vol-1",
        "fs_type": "ext4", "access_mode": "ReadWriteOnce",
        "access_modes": ("ReadWriteOnce",), "fs_group": GROUP,
        "policy": DriverPolicy(exists=True),
    }
    fields.update(overrides)
    return CsiVolume(**fields)  # type: ignore[arg-type]


def inline(policy: DriverPolicy, **overrides: object) -> CsiVolume:
    fields: dict[str, object] = {"driver": DRIVER, "spec_name": "scratch", "ephemeral": True,
                                 "policy": policy, "pod_info_on_mount": True}
    fields.update(overrides)
    return CsiVolume(**fields)  # type: ignore[arg-type]


def group_of(path: Path) -> int:
    return path.stat().st_gid


# -- fsGroupPolicy --------------------------------------------------------------------------


@needs_root
async def test_rwo_with_fs_type_policy_has_the_kubelet_chown_an_rwo_volume_with_fs_type(
    node: Node,
) -> None:
    target = await node.mount(pv())

    assert group_of(target) == GROUP
    mode = stat.S_IMODE(target.stat().st_mode)
    assert mode & 0o2070 == 0o2070  # group rwx and setgid on the directory
    assert node.published_capability().mount.volume_mount_group == ""
    assert node.staged_capability().mount.volume_mount_group == ""


@pytest.mark.parametrize("overrides", [
    {"fs_type": ""},  # ReadWriteOnceWithFSType needs an fsType
    {"access_mode": "ReadWriteMany", "access_modes": ("ReadWriteMany",)},
    {"access_mode": "ReadWriteOncePod", "access_modes": ("ReadWriteOncePod",)},
    {"read_only": True},
    {"fs_group": None},
    {"policy": DriverPolicy(exists=True, fs_group_policy="None")},
], ids=["no-fs-type", "rwx", "rwop", "read-only", "no-fs-group", "policy-none"])
async def test_the_kubelet_leaves_ownership_alone_where_the_policy_says_so(
    node: Node, overrides: dict[str, object],
) -> None:
    target = await node.mount(pv(**overrides))

    assert group_of(target) != GROUP


@needs_root
async def test_file_policy_chowns_whatever_the_fs_type_and_access_mode(node: Node) -> None:
    target = await node.mount(pv(fs_type="", access_mode="ReadWriteMany",
                                 access_modes=("ReadWriteMany",),
                                 policy=DriverPolicy(exists=True, fs_group_policy="File")))

    assert group_of(target) == GROUP


@needs_root
async def test_an_inline_volume_counts_as_read_write_once_for_the_default_policy(
    node: Node,
) -> None:
    policy = DriverPolicy(exists=True, lifecycle_modes=("Ephemeral",))

    target = await node.mount(inline(policy, fs_type="ext4", fs_group=GROUP))

    assert group_of(target) == GROUP


async def test_a_driver_with_volume_mount_group_gets_the_fs_group_in_stage_and_publish(
    node: Node,
) -> None:
    node.driver.node_capabilities = (*DEFAULT_NODE_CAPS, NodeRpc.VOLUME_MOUNT_GROUP)

    target = await node.mount(pv(policy=DriverPolicy(exists=True, fs_group_policy="File")))

    assert node.staged_capability().mount.volume_mount_group == str(GROUP)
    assert node.published_capability().mount.volume_mount_group == str(GROUP)
    assert group_of(target) != GROUP  # delegated: the kubelet changes nothing itself


async def test_volume_mount_group_is_passed_even_when_the_policy_is_none(node: Node) -> None:
    node.driver.node_capabilities = (*DEFAULT_NODE_CAPS, NodeRpc.VOLUME_MOUNT_GROUP)

    await node.mount(pv(policy=DriverPolicy(exists=True, fs_group_policy="None")))

    assert node.published_capability().mount.volume_mount_group == str(GROUP)


async def test_volume_mount_group_stays_empty_for_a_pod_without_fs_group(node: Node) -> None:
    node.driver.node_capabilities = (*DEFAULT_NODE_CAPS, NodeRpc.VOLUME_MOUNT_GROUP)

    await node.mount(pv(fs_group=None))

    assert node.published_capability().mount.volume_mount_group == ""


# -- seLinuxMount ---------------------------------------------------------------------------


async def test_a_selinux_label_is_the_last_mount_flag_of_stage_and_publish_not_of_expand(
    node: Node,
) -> None:
    volume = pv(access_mode="ReadWriteOncePod", access_modes=("ReadWriteOncePod",),
                mount_options=("noatime",), selinux_mount_label=LABEL)

    await node.mount(volume)
    await node.manager.expand(volume, 2 << 30, POD)

    flags = ["noatime", 'context="system_u:object_r:container_file_t:s0:c1,c2"']
    assert list(node.staged_capability().mount.mount_flags) == flags
    assert list(node.published_capability().mount.mount_flags) == flags
    expanded = node.driver.requests_of("NodeExpandVolume")[-1].volume_capability
    assert list(expanded.mount.mount_flags) == ["noatime"]


async def test_without_a_label_the_mount_flags_are_the_pvs_only(node: Node) -> None:
    await node.mount(pv(mount_options=("noatime",)))

    assert list(node.published_capability().mount.mount_flags) == ["noatime"]


# -- volumeLifecycleModes ---------------------------------------------------------------------


async def test_an_inline_volume_of_a_persistent_only_driver_is_refused_before_any_call(
    node: Node,
) -> None:
    with pytest.raises(VolumeOperationError) as refused:
        await node.mount(inline(DriverPolicy(exists=True)))

    message = ("kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: "
               f'volume mode "Ephemeral" not supported by driver {DRIVER} '
               '(only supports ["Persistent"])')
    assert str(refused.value) == message
    assert node.driver.calls == []
    assert node.reports == [f'MountVolume.SetUp failed for volume "scratch" : {message}']


async def test_an_inline_volume_without_a_csidriver_object_is_refused(node: Node) -> None:
    with pytest.raises(VolumeOperationError, match=r'driver fake\.csi\.example\.com '
                       r'\(no CSIDriver object\)$'):
        await node.mount(inline(DriverPolicy()))


async def test_a_pv_of_an_ephemeral_only_driver_is_staged_but_never_published(
    node: Node,
) -> None:
    policy = DriverPolicy(exists=True, lifecycle_modes=("Ephemeral",))

    with pytest.raises(VolumeOperationError, match=r'volume mode "Persistent" not supported '
                       r'by driver .* \(only supports \["Ephemeral"\]\)$'):
        await node.mount(pv(policy=policy))

    assert "NodePublishVolume" not in node.driver.calls


async def test_an_inline_volume_of_an_ephemeral_driver_is_published_with_pod_info(
    node: Node,
) -> None:
    policy = DriverPolicy(exists=True, lifecycle_modes=("Persistent", "Ephemeral"),
                          pod_info_on_mount=True)

    await node.mount(inline(policy, pod_info_on_mount=policy.pod_info_on_mount))

    assert node.driver.calls == ["NodeGetCapabilities", "NodePublishVolume"]
    assert dict(node.driver.requests_of("NodePublishVolume")[0].volume_context) == {
        "csi.storage.k8s.io/pod.name": "web",
        "csi.storage.k8s.io/pod.namespace": "default",
        "csi.storage.k8s.io/pod.uid": "uid-a",
        "csi.storage.k8s.io/serviceAccount.name": "builder",
        "csi.storage.k8s.io/ephemeral": "true",
    }
