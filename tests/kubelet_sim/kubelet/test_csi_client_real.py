"""GrpcCsiClient against the real driver process on a unix socket."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from kubelet_sim.csi.client import CsiError, GrpcCsiClient
from kubelet_sim.utils.trace import Trace
from tests.fixtures.driver_process import DriverProcess

DRIVER = "csi-mini.example.com"
Mode = csi_pb2.VolumeCapability.AccessMode


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id="n1", args=["--mode", "all"])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@pytest.fixture
async def client(driver: DriverProcess) -> AsyncIterator[GrpcCsiClient]:
    c = GrpcCsiClient(driver.endpoint, trace=Trace(), node="n1")
    yield c
    await c.close()


def mount_capability() -> csi_pb2.VolumeCapability:
    return csi_pb2.VolumeCapability(
        mount=csi_pb2.VolumeCapability.MountVolume(),
        access_mode=Mode(mode=Mode.SINGLE_NODE_MULTI_WRITER))


async def test_identity_calls_reach_the_driver(client: GrpcCsiClient) -> None:
    info = await client.call(csi_pb2.GetPluginInfoRequest(), csi_pb2.GetPluginInfoResponse)
    probe = await client.call(csi_pb2.ProbeRequest(), csi_pb2.ProbeResponse)

    assert info.name == DRIVER
    assert probe.ready.value is True
    assert client.trace.calls() == ["csi.Identity/GetPluginInfo", "csi.Identity/Probe"]


async def test_create_volume_and_controller_publish_as_the_sidecars_do(
    client: GrpcCsiClient,
) -> None:
    provisioner = client.with_component("external-provisioner", timeout=15.0)
    attacher = client.with_component("external-attacher", timeout=15.0)

    created = await provisioner.call(csi_pb2.CreateVolumeRequest(
        name="pvc-client-real", capacity_range=csi_pb2.CapacityRange(required_bytes=1 << 20),
        volume_capabilities=[mount_capability()]), csi_pb2.CreateVolumeResponse)
    published = await attacher.call(csi_pb2.ControllerPublishVolumeRequest(
        volume_id=created.volume.volume_id, node_id="n1", volume_capability=mount_capability()),
        csi_pb2.ControllerPublishVolumeResponse)

    assert created.volume.capacity_bytes >= 1 << 20
    assert isinstance(dict(published.publish_context), dict)
    assert [(e.component, e.call, e.result) for e in client.trace] == [
        ("external-provisioner", "csi.Controller/CreateVolume", "OK"),
        ("external-attacher", "csi.Controller/ControllerPublishVolume", "OK"),
    ]
    await attacher.call(csi_pb2.ControllerUnpublishVolumeRequest(
        volume_id=created.volume.volume_id, node_id="n1"),
        csi_pb2.ControllerUnpublishVolumeResponse)
    await provisioner.call(csi_pb2.DeleteVolumeRequest(
        volume_id=created.volume.volume_id), csi_pb2.DeleteVolumeResponse)


async def test_status_codes_from_the_driver_become_csi_errors(client: GrpcCsiClient) -> None:
    with pytest.raises(CsiError) as info:
        await client.call(csi_pb2.ControllerPublishVolumeRequest(
            volume_id="no-such-volume", node_id="n1", volume_capability=mount_capability()),
            csi_pb2.ControllerPublishVolumeResponse)

    assert info.value.code == grpc.StatusCode.NOT_FOUND
    assert client.trace.events[-1].result.startswith("NOT_FOUND: ")


async def test_node_calls_reach_the_node_service(client: GrpcCsiClient) -> None:
    caps = await client.call(
        csi_pb2.NodeGetCapabilitiesRequest(),
        csi_pb2.NodeGetCapabilitiesResponse)
    info = await client.call(csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)

    rpc = csi_pb2.NodeServiceCapability.RPC
    assert rpc.STAGE_UNSTAGE_VOLUME in {c.rpc.type for c in caps.capabilities}
    assert info.node_id == "n1"


async def test_a_socket_nobody_serves_gives_unavailable() -> None:
    empty = Path(tempfile.mkdtemp(prefix="kcc", dir="/tmp"))
    client = GrpcCsiClient(f"unix://{empty}/csi.sock", trace=Trace(), node="n1", timeout=5.0)
    try:
        with pytest.raises(CsiError) as info:
            await client.call(csi_pb2.ProbeRequest(), csi_pb2.ProbeResponse)
    finally:
        await client.close()
        shutil.rmtree(empty, ignore_errors=True)
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert info.value.final is False
