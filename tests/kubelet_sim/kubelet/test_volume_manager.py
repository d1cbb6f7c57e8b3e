"""The kubelet volume manager against the in-memory CSI driver: order of calls, paths, files."""

from __future__ import annotations

import asyncio
import hashlib
import json
import stat
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from google.protobuf.message import Message

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.secrets import ApiSecrets
from kubelet_sim.csi.client import CsiError
from kubelet_sim.csi.driver_policy import DriverPolicy
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.testing.fake_csi import FakeCsiClient, FakeCsiDriver
from kubelet_sim.utils.trace import Trace

DRIVER = "fake.csi.example.com"
NodeRpc = csi_pb2.NodeServiceCapability.RPC
Mode = csi_pb2.VolumeCapability.AccessMode
POD_A = PodInfo(name="web", namespace="default", uid="uid-a", service_account="builder")
POD_B = PodInfo(name="web-2", namespace="default", uid="uid-b")


class InstantClock:
    """A Clock whose sleeps return at once and are recorded (no real waits)."""

    def __init__(self) -> None:
        self.elapsed = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return datetime(2025, 1, 1, tzinfo=UTC) + timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        return self.elapsed

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds

    def sleep_sync(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds


class Node:
    """A volume manager on a temp kubelet root, wired to a fake driver."""

    def __init__(self, root: Path, driver: FakeCsiDriver) -> None:
        self.driver = driver
        self.trace = Trace()
        self.clock = InstantClock()
        self.client = FakeCsiClient(driver, trace=self.trace, node="node-1")
        self.paths = KubeletPaths(root)
        self.api = APIServer(bootstrap_namespaces=("default", "kube-system"))
        self.manager = VolumeManager(node_name="node-1", paths=self.paths,
                                     client_for=lambda _name: self.client, clock=self.clock,
                                     secrets=ApiSecrets(self.api))


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    driver = FakeCsiDriver(name=DRIVER)
    driver.add_volume("vol-1")
    yield Node(tmp_path / "kubelet", driver)


def pv(**overrides: object) -> CsiVolume:
    fields: dict[str, object] = {
        "driver": DRIVER, "spec_name": "pvc-1234", "volume_handle": "vol-1",
        "volume_attributes": {"storage.kubernetes.io/csiProvisionerIdentity": "x"},
        "publish_context": {"devicePath": "/dev/fake/vol-1"}, "fs_type": "ext4",
    }
    fields.update(overrides)
    return CsiVolume(**fields)  # type: ignore[arg-type]


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- MountDevice -------------------------------------------------------------------------


async def test_mount_device_asks_node_capabilities_then_stages_at_the_kubelet_staging_path(
    node: Node,
) -> None:
    staged = await node.manager.mount_device(pv())

    digest = hashlib.sha256(b"vol-1").hexdigest()
    expected = node.paths.root / "plugins/kubernetes.io/csi" / DRIVER / digest / "globalmount"
    assert staged == expected
    assert node.driver.calls == ["NodeGetCapabilities", "NodeStageVolume"]
    request = node.driver.requests_of("NodeStageVolume")[0]
    assert request.staging_target_path == str(expected)
    assert dict(request.publish_context) == {"devicePath": "/dev/fake/vol-1"}
    assert request.volume_capability.mount.fs_type == "ext4"
    assert mode_of(expected) == 0o750
    assert json.loads((expected.parent / "vol_data.json").read_text()) == {
        "driverName": DRIVER, "volumeHandle": "vol-1"}


async def test_mount_device_without_stage_unstage_capability_never_calls_node_stage(
    node: Node,
) -> None:
    node.driver.node_capabilities = (NodeRpc.GET_VOLUME_STATS,)

    assert await node.manager.mount_device(pv()) is None
    target = await node.manager.set_up(POD_A, pv())

    assert "NodeStageVolume" not in node.driver.calls
    assert node.driver.requests_of("NodePublishVolume")[0].staging_target_path == ""
    assert target.is_dir()
    # the kubelet still keeps vol_data.json for UnmountDevice
    staging = node.manager.staging_path(pv())
    assert (staging.parent / "vol_data.json").exists()


async def test_a_second_pod_on_the_node_does_not_stage_the_volume_again(node: Node) -> None:
    await node.manager.mount(POD_A, pv())
    await node.manager.mount(POD_B, pv())

    assert node.driver.calls.count("NodeStageVolume") == 1
    assert node.driver.calls.count("NodePublishVolume") == 2
    assert node.manager.users(pv()) == {"uid-a", "uid-b"}


# -- SetUp -------------------------------------------------------------------------------


async def test_set_up_asks_capabilities_then_publishes_with_the_staging_path(node: Node) -> None:
    await node.manager.mount_device(pv())
    target = await node.manager.set_up(POD_A, pv())

    expected = node.paths.root / "pods/uid-a/volumes/kubernetes.io~csi/pvc-1234/mount"
    assert target == expected
    assert node.driver.calls == ["NodeGetCapabilities", "NodeStageVolume",
                                 "NodeGetCapabilities", "NodePublishVolume"]
    request = node.driver.requests_of("NodePublishVolume")[0]
    assert request.target_path == str(expected)
    assert request.staging_target_path == str(node.manager.staging_path(pv()))
    assert dict(request.publish_context) == {"devicePath": "/dev/fake/vol-1"}
    assert mode_of(expected.parent) == 0o750
    assert json.loads((expected.parent / "vol_data.json").read_text()) == {
        "specVolumeID": "pvc-1234", "volumeHandle": "vol-1", "driverName": DRIVER,
        "nodeName": "node-1", "volumeLifecycleMode": "Persistent",
        "attachmentID": "csi-" + hashlib.sha256(f"vol-1{DRIVER}node-1".encode()).hexdigest(),
    }


async def test_the_kubelet_creates_the_parent_of_target_path_and_the_driver_the_target(
    node: Node,
) -> None:
    created_before_publish: list[bool] = []
    original = node.driver._NodePublishVolume

    def spy(req: csi_pb2.NodePublishVolumeRequest) -> Message:
        created_before_publish.append(Path(req.target_path).exists())
        assert Path(req.target_path).parent.is_dir()
        return original(req)

    node.driver._NodePublishVolume = spy  # type: ignore[method-assign]
    await node.manager.mount(POD_A, pv())

    assert created_before_publish == [False]


async def test_pod_info_on_mount_keys_are_merged_into_volume_context(node: Node) -> None:
    await node.manager.mount(POD_A, pv(pod_info_on_mount=True))

    context = dict(node.driver.requests_of("NodePublishVolume")[0].volume_context)
    assert context == {
        "storage.kubernetes.io/csiProvisionerIdentity": "x",
        "csi.storage.k8s.io/pod.name": "web",
        "csi.storage.k8s.io/pod.namespace": "default",
        "csi.storage.k8s.io/pod.uid": "uid-a",
        "csi.storage.k8s.io/serviceAccount.name": "builder",
        "csi.storage.k8s.io/ephemeral": "false",
    }
    stage_context = dict(node.driver.requests_of("NodeStageVolume")[0].volume_context)
    assert not any(k.startswith("csi.storage.k8s.io/") for k in stage_context)


async def test_without_pod_info_on_mount_volume_context_is_the_pv_attributes(node: Node) -> None:
    await node.manager.mount(POD_A, pv())

    context = dict(node.driver.requests_of("NodePublishVolume")[0].volume_context)
    assert context == {"storage.kubernetes.io/csiProvisionerIdentity": "x"}


async def test_inline_ephemeral_volume_gets_the_kubelet_handle_and_is_never_staged(
    node: Node,
) -> None:
    inline = CsiVolume(driver=DRIVER, spec_name="scratch", ephemeral=True,
                       volume_attributes={"size": "1Mi"}, pod_info_on_mount=True,
                       policy=DriverPolicy(exists=True, lifecycle_modes=("Ephemeral",)))

    target = await node.manager.mount(POD_A, inline)

    assert node.driver.calls == ["NodeGetCapabilities", "NodePublishVolume"]
    request = node.driver.requests_of("NodePublishVolume")[0]
    assert request.volume_id == "csi-" + hashlib.sha256(b"uid-ascratch").hexdigest()
    assert request.staging_target_path == ""
    assert request.volume_context["csi.storage.k8s.io/ephemeral"] == "true"
    assert request.volume_context["size"] == "1Mi"
    assert target == node.paths.root / "pods/uid-a/volumes/kubernetes.io~csi/scratch/mount"
    assert json.loads((target.parent / "vol_data.json").read_text())[
        "volumeLifecycleMode"] == "Ephemeral"

    assert await node.manager.unmount(POD_A, inline) is False
    assert node.driver.calls[-1] == "NodeUnpublishVolume"
    assert "NodeUnstageVolume" not in node.driver.calls


async def test_read_only_and_access_mode_are_passed_to_the_driver(node: Node) -> None:
    await node.manager.mount(POD_A, pv(read_only=True, access_mode="ReadOnlyMany"))

    request = node.driver.requests_of("NodePublishVolume")[0]
    assert request.readonly is True
    assert request.volume_capability.access_mode.mode == Mode.MULTI_NODE_READER_ONLY


@pytest.mark.parametrize(("k8s_mode", "with_snmw", "expected"), [
    ("ReadWriteOnce", False, Mode.SINGLE_NODE_WRITER),
    ("ReadWriteOnce", True, Mode.SINGLE_NODE_MULTI_WRITER),
    ("ReadWriteOncePod", False, Mode.SINGLE_NODE_WRITER),
    ("ReadWriteOncePod", True, Mode.SINGLE_NODE_SINGLE_WRITER),
    ("ReadWriteMany", True, Mode.MULTI_NODE_MULTI_WRITER),
])
async def test_access_mode_mapping_follows_the_single_node_multi_writer_capability(
    node: Node, k8s_mode: str, with_snmw: bool, expected: int,
) -> None:
    caps = [NodeRpc.STAGE_UNSTAGE_VOLUME]
    if with_snmw:
        caps.append(NodeRpc.SINGLE_NODE_MULTI_WRITER)
    node.driver.node_capabilities = tuple(caps)

    await node.manager.mount(POD_A, pv(access_mode=k8s_mode))

    assert node.driver.requests_of("NodeStageVolume")[0].volume_capability.access_mode.mode \
        == expected
    assert node.driver.requests_of("NodePublishVolume")[0].volume_capability.access_mode.mode \
        == expected


# -- TearDown / UnmountDevice ----------------------------------------------------------------


async def test_tear_down_unpublishes_and_removes_the_pod_volume_directory(node: Node) -> None:
    target = await node.manager.mount(POD_A, pv())

    await node.manager.tear_down(POD_A, pv())

    assert node.driver.calls[-1] == "NodeUnpublishVolume"
    assert node.driver.requests_of("NodeUnpublishVolume")[0].target_path == str(target)
    assert not target.parent.exists()
    assert node.manager.users(pv()) == frozenset()


async def test_unstage_happens_only_after_the_last_pod_on_the_node(node: Node) -> None:
    await node.manager.mount(POD_A, pv())
    await node.manager.mount(POD_B, pv())

    assert await node.manager.unmount(POD_A, pv()) is False
    assert "NodeUnstageVolume" not in node.driver.calls
    assert node.manager.staging_path(pv()).is_dir()

    assert await node.manager.unmount(POD_B, pv()) is True
    assert node.driver.calls[-2:] == ["NodeGetCapabilities", "NodeUnstageVolume"]
    staging = node.manager.staging_path(pv())
    assert node.driver.requests_of("NodeUnstageVolume")[0].staging_target_path == str(staging)
    assert not staging.parent.exists()


async def test_unmount_device_while_a_pod_uses_the_volume_does_nothing(node: Node) -> None:
    await node.manager.mount(POD_A, pv())
    calls = len(node.driver.calls)

    assert await node.manager.unmount_device(pv()) is False
    assert len(node.driver.calls) == calls


async def test_full_order_on_create_and_delete(node: Node) -> None:
    await node.manager.mount(POD_A, pv())
    await node.manager.unmount(POD_A, pv())

    assert node.trace.calls(node="node-1", component="kubelet") == [
        "csi.Node/NodeGetCapabilities", "csi.Node/NodeStageVolume",
        "csi.Node/NodeGetCapabilities", "csi.Node/NodePublishVolume",
        "csi.Node/NodeUnpublishVolume",
        "csi.Node/NodeGetCapabilities", "csi.Node/NodeUnstageVolume",
    ]


# -- errors and backoff ---------------------------------------------------------------------


async def test_a_failed_stage_is_retried_with_exponential_backoff(node: Node) -> None:
    node.driver.fail_next("NodeStageVolume", grpc.StatusCode.UNAVAILABLE, times=3)

    staged = await node.manager.mount_device(pv())

    assert staged is not None and staged.is_dir()
    assert node.clock.sleeps == [0.5, 1.0, 2.0]
    assert node.driver.calls.count("NodeStageVolume") == 4
    # every attempt asks for the capabilities first
    assert node.driver.calls.count("NodeGetCapabilities") == 4


async def test_retries_stop_after_max_attempts_with_the_last_error(node: Node) -> None:
    node.driver.fail_next("NodePublishVolume", grpc.StatusCode.INTERNAL, "disk on fire", times=99)
    await node.manager.mount_device(pv())

    with pytest.raises(CsiError) as info:
        await node.manager.set_up(POD_A, pv())

    assert info.value.code == grpc.StatusCode.INTERNAL
    assert info.value.message == "disk on fire"
    assert node.driver.calls.count("NodePublishVolume") == node.manager.max_attempts
    assert node.clock.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0]
    # a final error leaves no pod volume directory behind
    assert not node.manager.target_path(POD_A, pv()).parent.exists()


async def test_backoff_is_capped_at_two_minutes_two_seconds(node: Node) -> None:
    node.manager.max_attempts = 12
    node.driver.fail_next("NodeStageVolume", grpc.StatusCode.UNAVAILABLE, times=11)

    await node.manager.mount_device(pv())

    assert node.clock.sleeps[-1] == 122.0
    assert max(node.clock.sleeps) == 122.0


async def test_an_uncertain_publish_is_still_unpublished_on_tear_down(node: Node) -> None:
    node.manager.max_attempts = 1
    await node.manager.mount_device(pv())
    node.driver.fail_next("NodePublishVolume", grpc.StatusCode.DEADLINE_EXCEEDED)

    with pytest.raises(CsiError):
        await node.manager.set_up(POD_A, pv())
    await node.manager.tear_down(POD_A, pv())

    assert node.driver.calls[-1] == "NodeUnpublishVolume"


async def test_unpublish_errors_keep_the_pod_as_a_user_so_unstage_waits(node: Node) -> None:
    node.manager.max_attempts = 1
    await node.manager.mount(POD_A, pv())
    node.driver.fail_next("NodeUnpublishVolume", grpc.StatusCode.INTERNAL)

    with pytest.raises(CsiError):
        await node.manager.unmount(POD_A, pv())

    assert "NodeUnstageVolume" not in node.driver.calls
    assert node.manager.users(pv()) == {"uid-a"}


# -- expand and stats --------------------------------------------------------------------------


async def test_expand_calls_node_expand_volume_when_advertised(node: Node) -> None:
    target = await node.manager.mount(POD_A, pv())

    size = await node.manager.expand(pv(), 2 << 30, pod=POD_A)

    assert size == 2 << 30
    assert node.driver.calls[-2:] == ["NodeGetCapabilities", "NodeExpandVolume"]
    request = node.driver.requests_of("NodeExpandVolume")[0]
    assert request.volume_path == str(target)
    assert request.staging_target_path == str(node.manager.staging_path(pv()))
    assert request.capacity_range.required_bytes == 2 << 30


async def test_expand_sends_the_secret_of_the_node_expand_reference(node: Node) -> None:
    node.api.create(builders.secret("expand", "default", {"expand-key": "e"}))
    volume = pv(node_expand_secret_ref={"name": "expand", "namespace": "default"})
    await node.manager.mount(POD_A, volume)

    await node.manager.expand(volume, 2 << 30, pod=POD_A)

    assert dict(node.driver.requests_of("NodeExpandVolume")[0].secrets) == {"expand-key": "e"}


async def test_expand_without_the_capability_makes_no_expand_call(node: Node) -> None:
    node.driver.node_capabilities = (NodeRpc.STAGE_UNSTAGE_VOLUME,)
    await node.manager.mount(POD_A, pv())

    assert await node.manager.expand(pv(), 2 << 30, pod=POD_A) is None
    assert "NodeExpandVolume" not in node.driver.calls


async def test_stats_reports_the_driver_usage_for_the_publish_path(node: Node) -> None:
    await node.manager.mount(POD_A, pv())

    stats = await node.manager.stats(POD_A, pv())

    assert stats is not None
    assert stats.capacity_bytes == 1 << 30
    request = node.driver.requests_of("NodeGetVolumeStats")[0]
    assert request.volume_path == str(node.manager.target_path(POD_A, pv()))


# -- block volumes --------------------------------------------------------------------------------


async def test_block_volume_uses_the_kubelet_volume_devices_layout(node: Node) -> None:
    block = pv(block=True, fs_type="")

    device = await node.manager.mount(POD_A, block)

    devices = node.paths.root / "plugins/kubernetes.io/csi/volumeDevices"
    stage = node.driver.requests_of("NodeStageVolume")[0]
    publish = node.driver.requests_of("NodePublishVolume")[0]
    assert stage.staging_target_path == str(devices / "staging/pvc-1234")
    assert stage.volume_capability.HasField("block")
    assert publish.target_path == str(devices / "publish/pvc-1234/uid-a")
    assert device == node.paths.root / "pods/uid-a/volumeDevices/kubernetes.io~csi/pvc-1234"
    assert device.is_symlink() and device.resolve() == Path(publish.target_path).resolve()
    assert (devices / "pvc-1234/dev/uid-a").is_symlink()
    assert json.loads((devices / "pvc-1234/data/vol_data.json").read_text())[
        "volumeHandle"] == "vol-1"

    assert await node.manager.unmount(POD_A, block) is True
    assert node.driver.calls[-3:] == ["NodeUnpublishVolume", "NodeGetCapabilities",
                                      "NodeUnstageVolume"]
    assert not device.exists() and not (devices / "pvc-1234").exists()
    assert not (devices / "staging/pvc-1234").exists()


# -- the kubelet's bookkeeping ------------------------------------------------------------------


async def test_pods_mounting_one_volume_at_once_stage_it_once(node: Node) -> None:
    pods = [PodInfo(name=f"p{i}", namespace="default", uid=f"uid-{i}") for i in range(4)]

    await asyncio.gather(*(node.manager.mount(pod, pv()) for pod in pods))

    assert node.driver.calls.count("NodeStageVolume") == 1
    assert node.driver.calls.count("NodePublishVolume") == 4
    assert node.manager.users(pv()) == {pod.uid for pod in pods}


async def test_setting_up_a_pod_volume_that_is_already_set_up_makes_no_call(node: Node) -> None:
    first = await node.manager.mount(POD_A, pv())
    calls = list(node.driver.calls)

    assert await node.manager.set_up(POD_A, pv()) == first
    assert node.driver.calls == calls


async def test_vol_data_json_is_written_as_go_encodes_a_map(node: Node) -> None:
    staging = await node.manager.mount_device(pv())

    assert staging is not None
    assert (staging.parent / "vol_data.json").read_text() == (
        '{"driverName":"fake.csi.example.com","volumeHandle":"vol-1"}\n')


STAGE_REF = {"name": "stage", "namespace": "kube-system"}
PUBLISH_REF = {"name": "publish", "namespace": "default"}


async def test_node_secrets_reach_the_driver_but_not_the_trace(node: Node) -> None:
    node.api.create(builders.secret("stage", "kube-system", {"stage-key": "hunter-one"}))
    node.api.create(builders.secret("publish", "default", {"pub-key": "hunter-two"}))
    volume = pv(node_stage_secret_ref=STAGE_REF, node_publish_secret_ref=PUBLISH_REF)

    await node.manager.mount(POD_A, volume)

    assert dict(node.driver.requests_of("NodeStageVolume")[0].secrets) == {
        "stage-key": "hunter-one"}
    assert dict(node.driver.requests_of("NodePublishVolume")[0].secrets) == {
        "pub-key": "hunter-two"}
    dumped = "\n".join(event.to_json() for event in node.trace)
    assert "hunter-" not in dumped and "stage-key" not in dumped and "pub-key" not in dumped
    assert all("secrets" not in event.request for event in node.trace)


async def test_a_missing_stage_secret_fails_mount_device_before_node_stage(node: Node) -> None:
    with pytest.raises(LookupError, match=r"fetching NodeStageSecretRef kube-system/stage "
                                          r'failed: .*secrets "stage" not found'):
        await node.manager.mount_device(pv(node_stage_secret_ref=STAGE_REF))

    assert "NodeStageVolume" not in node.driver.calls
    assert node.clock.sleeps == []  # the kubelet's next pass retries, no backoff sleep here


async def test_a_driver_that_does_not_stage_needs_no_stage_secret(node: Node) -> None:
    node.driver.node_capabilities = ()

    assert await node.manager.mount_device(pv(node_stage_secret_ref=STAGE_REF)) is None


async def test_a_missing_publish_secret_fails_set_up_after_the_volume_is_staged(
    node: Node,
) -> None:
    volume = pv(node_publish_secret_ref=PUBLISH_REF)

    with pytest.raises(LookupError, match="fetching NodePublishSecretRef default/publish"):
        await node.manager.mount(POD_A, volume)

    assert "NodeStageVolume" in node.driver.calls
    assert "NodePublishVolume" not in node.driver.calls
    node.api.create(builders.secret("publish", "default", {"pub-key": "late"}))
    await node.manager.mount(POD_A, volume)
    assert dict(node.driver.requests_of("NodePublishVolume")[0].secrets) == {"pub-key": "late"}


async def test_a_restarted_kubelet_rebuilds_users_from_vol_data_and_unstages_after_the_last(
    node: Node,
) -> None:
    block = CsiVolume(driver=DRIVER, spec_name="pvc-block", volume_handle="vol-2", block=True)
    node.driver.add_volume("vol-2")
    await node.manager.mount(POD_A, pv())
    await node.manager.mount(POD_B, pv())
    await node.manager.mount(POD_A, block)

    restarted = VolumeManager(node_name="node-1", paths=node.paths,
                              client_for=lambda _name: node.client, clock=node.clock)
    assert restarted.reconstruct() == 3

    assert restarted.users(pv()) == {"uid-a", "uid-b"}
    assert restarted.users(block) == {"uid-a"}
    assert restarted.is_device_mounted(pv()) and restarted.is_device_mounted(block)
    assert await restarted.unmount(POD_A, pv()) is False
    assert await restarted.unmount(POD_B, pv()) is True
    assert await restarted.unmount(POD_A, block) is True
    assert node.driver.calls.count("NodeUnstageVolume") == 2
    assert node.driver.staged == {} and node.driver.published == {}
