"""Registration end to end: our registrar on a temp plugins_registry, the kubelet's watcher,
NodeGetInfo answered by the real driver process."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.volume_spec import CsiVolume, PodInfo
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.kubelet.plugin_watcher import (
    CsiNodeRegistration,
    PluginWatcher,
    csinode_driver_entry,
    node_id_annotation,
)
from kubelet_sim.kubelet.volume_manager import VolumeManager
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import serve_registration_for_kubelet
from tests.fixtures.driver_process import DriverProcess, unmount_under

DRIVER = "csi-mini.example.com"
TOPOLOGY_KEY = "topology.csi-mini.example.com/node"


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="n1", args=["--mode", "all", "--max-volumes-per-node", "7"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
def kubelet_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kpr", dir="/tmp"))
    try:
        yield root
    finally:
        unmount_under(root)
        shutil.rmtree(root, ignore_errors=True)


async def test_registration_get_info_node_get_info_callback_notify(
    driver: DriverProcess, kubelet_root: Path,
) -> None:
    trace = Trace()
    written: dict[str, object] = {}

    async def write_csinode(reg: CsiNodeRegistration) -> None:
        written["csinode"] = csinode_driver_entry(reg)
        written["annotation"] = node_id_annotation(None, reg.driver, reg.node_id)

    watcher = PluginWatcher(registry_dir=kubelet_root / "plugins_registry", node_name="node-1",
                            trace=trace, on_register=write_csinode)
    registrar = await serve_registration_for_kubelet(
        kubelet_root, driver_name=DRIVER, csi_endpoint=driver.endpoint)
    try:
        await watcher.scan()
        info = await watcher.client_for(DRIVER).call(
            csi_pb2.GetPluginInfoRequest(),
            csi_pb2.GetPluginInfoResponse)
        assert info.name == DRIVER
    finally:
        await registrar.stop(None)
        await watcher.scan()  # the socket is gone: deregistered, client closed

    assert trace.calls()[:3] == [
        "pluginregistration.Registration/GetInfo",
        "csi.Node/NodeGetInfo",
        "pluginregistration.Registration/NotifyRegistrationStatus",
    ]
    assert written["csinode"] == {
        "name": DRIVER, "nodeID": "n1", "topologyKeys": [TOPOLOGY_KEY],
        "allocatable": {"count": 7},
    }
    assert written["annotation"] == '{"csi-mini.example.com":"n1"}'
    assert [(s.registered, s.error) for s in registrar.servicer.statuses] == [(True, "")]
    assert watcher.drivers == {}


async def test_the_volume_manager_reaches_the_driver_the_watcher_registered(
    driver: DriverProcess, kubelet_root: Path,
) -> None:
    trace = Trace()
    registered: list[CsiNodeRegistration] = []

    async def remember(reg: CsiNodeRegistration) -> None:
        registered.append(reg)

    watcher = PluginWatcher(registry_dir=kubelet_root / "plugins_registry", node_name="n1",
                            trace=trace, on_register=remember)
    manager = VolumeManager(node_name="n1", paths=KubeletPaths(kubelet_root),
                            client_for=watcher.client_for)
    registrar = await serve_registration_for_kubelet(
        kubelet_root, driver_name=DRIVER, csi_endpoint=driver.endpoint)
    try:
        await watcher.scan()
        client = watcher.client_for(DRIVER)
        mode = csi_pb2.VolumeCapability.AccessMode(
            mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_MULTI_WRITER)
        capability = csi_pb2.VolumeCapability(
            mount=csi_pb2.VolumeCapability.MountVolume(), access_mode=mode)
        created = await client.with_component("external-provisioner").call(
            csi_pb2.CreateVolumeRequest(
                name="pvc-via-watcher", volume_capabilities=[capability],
                capacity_range=csi_pb2.CapacityRange(required_bytes=1 << 20)),
                csi_pb2.CreateVolumeResponse)
        attached = await client.with_component("external-attacher").call(
            csi_pb2.ControllerPublishVolumeRequest(volume_id=created.volume.volume_id,
                                                   node_id=registered[0].node_id,
                                                   volume_capability=capability),
                                                   csi_pb2.ControllerPublishVolumeResponse)
        volume = CsiVolume(driver=DRIVER, spec_name="pvc-via-watcher",
                           volume_handle=created.volume.volume_id,
                           publish_context=dict(attached.publish_context))
        pod = PodInfo(name="p", namespace="default", uid="uid-w")

        target = await manager.mount(pod, volume)
        assert target.is_dir()
        assert await manager.unmount(pod, volume) is True
    finally:
        await registrar.stop(None)
        await watcher.scan()

    kubelet_calls = [c for c in trace.calls(component="kubelet") if c.startswith("csi.Node/")]
    assert kubelet_calls[0] == "csi.Node/NodeGetInfo"
    assert "csi.Node/NodeUnstageVolume" in kubelet_calls
