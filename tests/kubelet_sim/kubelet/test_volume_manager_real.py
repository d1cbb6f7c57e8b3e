"""The volume manager driving the real driver process, with real kubelet directories."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.client import CsiError, GrpcCsiClient
from kubelet_sim.csi.driver_policy import DriverPolicy
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.utils.trace import Trace
from tests.fixtures.driver_process import DriverProcess, unmount_under

DRIVER = "csi-mini.example.com"
Mode = csi_pb2.VolumeCapability.AccessMode
POD_A = PodInfo(name="writer", namespace="default", uid="pod-a-uid")
POD_B = PodInfo(name="reader", namespace="default", uid="pod-b-uid")


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="n1", args=["--mode", "all"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def kubelet_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kvm", dir="/tmp"))
    try:
        yield root
    finally:
        unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


class RealNode:
    def __init__(self, driver: DriverProcess, root: Path) -> None:
        self.driver = driver
        self.trace = Trace()
        self.client = GrpcCsiClient(driver.endpoint, trace=self.trace, node="n1")
        self.paths = KubeletPaths(root)
        self.manager = VolumeManager(node_name="n1", paths=self.paths,
                                     client_for=lambda _name: self.client)

    async def provision_and_attach(self, name: str, *, block: bool = False) -> CsiVolume:
        """What external-provisioner and external-attacher do before the kubelet runs."""
        access = Mode(mode=Mode.SINGLE_NODE_MULTI_WRITER)  # RWO on a driver with SNMW
        capability = (csi_pb2.VolumeCapability(block=csi_pb2.VolumeCapability.BlockVolume(),
                                               access_mode=access) if block else
                      csi_pb2.VolumeCapability(mount=csi_pb2.VolumeCapability.MountVolume(),
                                               access_mode=access))
        created = await self.client.with_component("external-provisioner").call(
            csi_pb2.CreateVolumeRequest(
                name=name, capacity_range=csi_pb2.CapacityRange(required_bytes=4 << 20),
                volume_capabilities=[capability]), csi_pb2.CreateVolumeResponse)
        attached = await self.client.with_component("external-attacher") \
            .call(csi_pb2.ControllerPublishVolumeRequest(
                volume_id=created.volume.volume_id, node_id="n1", volume_capability=capability),
                csi_pb2.ControllerPublishVolumeResponse)
        return CsiVolume(
            driver=DRIVER, spec_name=name, volume_handle=created.volume.volume_id,
            volume_attributes=dict(created.volume.volume_context),
            publish_context=dict(attached.publish_context), block=block,
        )


@pytest.fixture
async def node(driver: DriverProcess, kubelet_root: Path) -> AsyncIterator[RealNode]:
    n = RealNode(driver, kubelet_root)
    yield n
    await n.client.close()


async def test_stage_publish_unpublish_unstage_against_the_real_driver(node: RealNode) -> None:
    volume = await node.provision_and_attach("pvc-vm-real")
    handle_digest = hashlib.sha256(volume.volume_handle.encode()).hexdigest()

    staging = await node.manager.mount_device(volume)
    assert staging == (node.paths.root / "plugins/kubernetes.io/csi" / DRIVER / handle_digest
                       / "globalmount")
    assert staging.is_dir()
    assert json.loads((staging.parent / "vol_data.json").read_text()) == {
        "driverName": DRIVER, "volumeHandle": volume.volume_handle}

    target_a = await node.manager.set_up(POD_A, volume)
    assert target_a == (node.paths.root / "pods" / POD_A.uid
                        / "volumes/kubernetes.io~csi/pvc-vm-real/mount")
    assert target_a.is_dir()
    assert json.loads((target_a.parent / "vol_data.json").read_text())["volumeHandle"] \
        == volume.volume_handle

    # data written through one pod's publish path is in the volume
    (target_a / "hello.txt").write_text("from pod a")
    target_b = await node.manager.set_up(POD_B, volume)
    assert (target_b / "hello.txt").read_text() == "from pod a"
    in_store = [p for p in (node.driver.state_dir).rglob("hello.txt")
                if not str(p).startswith(str(node.paths.root))]
    assert in_store, "the file is not in the driver's volume data"

    await node.manager.tear_down(POD_A, volume)
    assert not target_a.parent.exists()
    assert await node.manager.unmount_device(volume) is False  # pod b still uses it
    assert staging.is_dir()

    await node.manager.tear_down(POD_B, volume)
    assert await node.manager.unmount_device(volume) is True
    assert not staging.parent.exists()
    assert not os.path.ismount(staging)

    kubelet_calls = node.trace.calls(component="kubelet")
    assert kubelet_calls == [
        "csi.Node/NodeGetCapabilities", "csi.Node/NodeStageVolume",
        "csi.Node/NodeGetCapabilities", "csi.Node/NodePublishVolume",
        "csi.Node/NodeGetCapabilities", "csi.Node/NodePublishVolume",
        "csi.Node/NodeUnpublishVolume", "csi.Node/NodeUnpublishVolume",
        "csi.Node/NodeGetCapabilities", "csi.Node/NodeUnstageVolume",
    ]
    assert all(e.result == "OK" for e in node.trace)


async def test_publish_before_stage_is_refused_by_the_real_driver(node: RealNode) -> None:
    volume = await node.provision_and_attach("pvc-vm-unstaged")
    node.manager.max_attempts = 1

    with pytest.raises(CsiError) as info:
        await node.manager.set_up(POD_A, volume)

    assert info.value.code.name == "FAILED_PRECONDITION"
    assert not node.manager.target_path(POD_A, volume).parent.exists()


async def test_expand_and_stats_against_the_real_driver(node: RealNode) -> None:
    volume = await node.provision_and_attach("pvc-vm-expand")
    await node.manager.mount(POD_A, volume)
    (node.manager.target_path(POD_A, volume) / "data.bin").write_bytes(b"x" * 8192)

    stats = await node.manager.stats(POD_A, volume)
    await node.client.with_component("external-resizer").call(
        csi_pb2.ControllerExpandVolumeRequest(
            volume_id=volume.volume_handle,
            capacity_range=csi_pb2.CapacityRange(required_bytes=8 << 20),
            volume_capability=csi_pb2.VolumeCapability(
                mount=csi_pb2.VolumeCapability.MountVolume(),
                access_mode=Mode(mode=Mode.SINGLE_NODE_MULTI_WRITER))),
                csi_pb2.ControllerExpandVolumeResponse)
    size = await node.manager.expand(volume, 8 << 20, pod=POD_A)

    assert stats is not None and stats.used_bytes >= 8192
    assert size is not None and size >= 8 << 20
    await node.manager.unmount(POD_A, volume)


async def test_inline_ephemeral_volume_against_the_real_driver(node: RealNode) -> None:
    inline = CsiVolume(driver=DRIVER, spec_name="scratch", ephemeral=True,
                       pod_info_on_mount=True,
                       policy=DriverPolicy(exists=True, lifecycle_modes=("Ephemeral",)))
    node.manager.max_attempts = 1
    try:
        target = await node.manager.mount(POD_A, inline)
    except CsiError as err:
        if err.code.name in ("NOT_FOUND", "INVALID_ARGUMENT", "UNIMPLEMENTED"):
            pytest.skip(f"driver lacks inline ephemeral volumes ({err.code.name})")
        raise
    assert target.is_dir()
    await node.manager.unmount(POD_A, inline)
    assert not target.parent.exists()


async def test_block_volume_against_the_real_driver(node: RealNode) -> None:
    volume = await node.provision_and_attach("pvc-vm-block", block=True)

    device = await node.manager.mount(POD_A, volume)

    published = node.paths.block_publish_path("pvc-vm-block", POD_A.uid)
    assert published.exists() and not published.is_dir()  # the driver made a file
    assert device.is_symlink() and device.resolve() == published.resolve()
    assert await node.manager.unmount(POD_A, volume) is True
    assert not published.exists() and not device.exists()


async def test_a_node_plugin_restart_mid_life_does_not_lose_the_volume(node: RealNode) -> None:
    volume = await node.provision_and_attach("pvc-vm-restart")
    target = await node.manager.mount(POD_A, volume)
    (target / "kept.txt").write_text("survives kill -9")

    node.driver.restart()  # kill -9 and start again on the same socket and state dir

    assert (target / "kept.txt").read_text() == "survives kill -9"
    stats = await node.manager.stats(POD_A, volume)  # the same client reconnects
    assert stats is not None
    assert await node.manager.unmount(POD_A, volume) is True
    assert not target.parent.exists()
