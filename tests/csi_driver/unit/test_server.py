"""The real grpc.aio server on a temp unix socket, started in-process with create_server."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
import socket
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from csi_driver.config import Config
from csi_driver.server.endpoint import EndpointError
from csi_driver.server.server import DriverServer, create_server
from csi_protos import csi_pb2, csi_pb2_grpc

MOUNT_CAP = csi_pb2.VolumeCapability(
    access_mode=csi_pb2.VolumeCapability.AccessMode(mode="SINGLE_NODE_WRITER"),
    mount=csi_pb2.VolumeCapability.MountVolume(),
)


class Running:
    def __init__(self, driver: DriverServer, log: io.StringIO) -> None:
        self.driver = driver
        self.log = log
        self.channel = grpc.aio.insecure_channel(f"unix://{driver.socket_path}")
        self.identity = csi_pb2_grpc.IdentityStub(self.channel)
        self.controller = csi_pb2_grpc.ControllerStub(self.channel)
        self.node = csi_pb2_grpc.NodeStub(self.channel)

    async def log_lines(self) -> list[dict]:
        await asyncio.sleep(0)  # lines are written just after each response
        return [json.loads(line) for line in self.log.getvalue().splitlines()]


def make_config(base: str, **overrides: object) -> Config:
    settings: dict[str, object] = {
        "endpoint": f"unix://{base}/csi.sock",
        "node_id": "node-1",
        "state_dir": f"{base}/state",
        "mount_method": "symlink",
    }
    settings.update(overrides)
    return Config(**settings).validate()  # type: ignore[arg-type]


@pytest.fixture
def base() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="csiu", dir="/tmp")
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def start(base: str, **overrides: object) -> Running:
    log = io.StringIO()
    driver = create_server(make_config(base, **overrides), log_stream=log)
    await driver.start()
    return Running(driver, log)


@pytest.fixture
async def running(base: str) -> AsyncIterator[Running]:
    r = await start(base)
    yield r
    await r.channel.close(None)
    await r.driver.stop(None)


async def test_probe_answers_ready_explicitly(running):
    response = await running.identity.Probe(csi_pb2.ProbeRequest())
    assert response.HasField("ready") and response.ready.value is True


async def test_socket_is_created_with_mode_0600(running):
    assert stat.S_IMODE(os.stat(running.driver.socket_path).st_mode) == 0o600


async def test_errors_carry_the_code_and_no_status_details(running):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.CreateVolume(csi_pb2.CreateVolumeRequest(name=""))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    keys = [pair[0] for pair in cast(Any, err.value.trailing_metadata() or ())]
    assert "grpc-status-details-bin" not in keys


async def test_an_unexpected_exception_becomes_internal_not_unknown(running, monkeypatch):
    def broken(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(running.driver.runtime.volumes, "get_capacity", broken)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.GetCapacity(csi_pb2.GetCapacityRequest())
    assert err.value.code() == grpc.StatusCode.INTERNAL
    await running.identity.Probe(csi_pb2.ProbeRequest())


async def test_a_long_unexpected_error_is_cut_to_valid_utf8_and_marked(running, monkeypatch):
    """A lone surrogate (as in an undecodable file name) and 10,000 characters: the
    details stay valid UTF-8, within MAX_DETAILS_BYTES, with the cut marked."""
    from csi_driver.server.interceptors import CUT_MARK, MAX_DETAILS_BYTES

    def broken(*args):
        raise OSError(f"cannot read /data/\udcff{'é' * 10_000}")

    monkeypatch.setattr(running.driver.runtime.volumes, "get_capacity", broken)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.GetCapacity(csi_pb2.GetCapacityRequest())
    assert err.value.code() == grpc.StatusCode.INTERNAL
    details = err.value.details() or ""
    assert "/data/\\udcff" in details and details.endswith(CUT_MARK)
    assert len(details.encode()) <= MAX_DETAILS_BYTES
    assert (await running.log_lines())[-1]["error"] == details


async def test_log_line_per_rpc_redacts_secrets(running):
    await running.controller.CreateVolume(csi_pb2.CreateVolumeRequest(
        name="v", volume_capabilities=[MOUNT_CAP], secrets={"password": "hunter2"}
    ))
    lines = await running.log_lines()
    assert "hunter2" not in running.log.getvalue()
    line = lines[-1]
    assert line["method"] == "/csi.v1.Controller/CreateVolume"
    assert line["code"] == "OK"
    assert line["request"]["secrets"] == {"password": "***stripped***"}
    assert set(line) == {"ts", "method", "request", "code", "duration_ms", "volume_id"}


async def test_oversize_name_is_invalid_argument(running):
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.CreateVolume(
            csi_pb2.CreateVolumeRequest(name="x" * 129, volume_capabilities=[MOUNT_CAP])
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_oversize_parameter_map_is_invalid_argument(running):
    params = {f"k{i}": "v" * 100 for i in range(50)}
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.CreateVolume(csi_pb2.CreateVolumeRequest(
            name="v", volume_capabilities=[MOUNT_CAP], parameters=params
        ))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_reflection_lists_the_csi_services(running):
    stub = reflection_pb2_grpc.ServerReflectionStub(running.channel)

    async def one() -> AsyncIterator[reflection_pb2.ServerReflectionRequest]:
        yield reflection_pb2.ServerReflectionRequest(list_services="")

    async for reply in stub.ServerReflectionInfo(one()):
        names = {s.name for s in reply.list_services_response.service}
        break
    assert {"csi.v1.Identity", "csi.v1.Controller", "csi.v1.Node",
            "csi.v1.GroupController", "csi.v1.SnapshotMetadata"} <= names


async def test_health_service_reports_serving(running):
    stub = health_pb2_grpc.HealthStub(running.channel)
    reply = await stub.Check(health_pb2.HealthCheckRequest(service=""))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


async def test_stale_socket_is_replaced(base):
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(f"{base}/csi.sock")
    stale.close()
    r = await start(base)
    try:
        assert (await r.identity.Probe(csi_pb2.ProbeRequest())).ready.value
    finally:
        await r.channel.close(None)
        await r.driver.stop(None)


async def test_graceful_stop_removes_the_socket(base):
    r = await start(base)
    await r.channel.close(None)
    await r.driver.stop(None)
    assert not os.path.exists(f"{base}/csi.sock")


def test_a_regular_file_at_the_socket_path_is_refused(base):
    with open(f"{base}/csi.sock", "w") as f:
        f.write("not a socket")
    with pytest.raises(EndpointError):
        create_server(make_config(base))


async def test_missing_required_secret_is_invalid_and_wrong_one_unauthenticated(base):
    r = await start(base, secrets=(("token", "s3cret"),))
    try:
        with pytest.raises(grpc.aio.AioRpcError) as missing:
            await r.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id="v"))
        with pytest.raises(grpc.aio.AioRpcError) as wrong:
            await r.controller.DeleteVolume(
                csi_pb2.DeleteVolumeRequest(volume_id="v", secrets={"token": "nope"})
            )
        await r.controller.DeleteVolume(
            csi_pb2.DeleteVolumeRequest(volume_id="v", secrets={"token": "s3cret"})
        )
    finally:
        await r.channel.close(None)
        await r.driver.stop(None)
    assert missing.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert wrong.value.code() == grpc.StatusCode.UNAUTHENTICATED


async def test_rpc_of_a_capability_turned_off_is_unimplemented(base):
    r = await start(base, snapshots=False)
    try:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await r.controller.CreateSnapshot(
                csi_pb2.CreateSnapshotRequest(name="s", source_volume_id="v")
            )
    finally:
        await r.channel.close(None)
        await r.driver.stop(None)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_node_mode_serves_no_controller(base):
    r = await start(base, mode="node")
    try:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await r.controller.ControllerGetCapabilities(
                csi_pb2.ControllerGetCapabilitiesRequest()
            )
        info = await r.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
    finally:
        await r.channel.close(None)
        await r.driver.stop(None)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert info.node_id == "node-1"


async def test_a_second_operation_on_a_volume_in_flight_is_aborted(running, monkeypatch):
    import threading

    release = threading.Event()
    slow = running.driver.runtime.slow.volumes
    real = slow.create_volume

    def blocked(args):
        release.wait(timeout=30)
        return real(args)

    monkeypatch.setattr(slow, "create_volume", blocked)
    source = await running.controller.CreateVolume(
        csi_pb2.CreateVolumeRequest(name="src", volume_capabilities=[MOUNT_CAP])
    )
    clone = csi_pb2.CreateVolumeRequest(name="clone", volume_capabilities=[MOUNT_CAP])
    clone.volume_content_source.volume.volume_id = source.volume.volume_id
    first = asyncio.ensure_future(running.controller.CreateVolume(clone))
    while not running.driver.runtime.inflight._busy:
        await asyncio.sleep(0.01)
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await running.controller.CreateVolume(clone)
    release.set()
    assert err.value.code() == grpc.StatusCode.ABORTED
    assert (await first).volume.content_source.volume.volume_id == source.volume.volume_id


@pytest.mark.parametrize(("durability", "grouped"), [("process", False), ("host", True)])
async def test_commits_are_grouped_only_when_each_waits_for_the_disk(base, durability, grouped):
    """Host durability shares each fsync among concurrent RPCs; process durability commits
    each RPC's transaction inline, before its answer, as nothing waits for the disk."""
    r = await start(base, durability=durability)
    try:
        assert r.driver.runtime.store.group_commit is grouped
        created = await asyncio.gather(*(
            r.controller.CreateVolume(csi_pb2.CreateVolumeRequest(
                name=f"v{i}", volume_capabilities=[MOUNT_CAP]))
            for i in range(6)
        ))
        ids = {c.volume.volume_id for c in created}
        # Another connection (another process's view) sees every answered volume.
        from csi_driver.state.store import Store

        other = Store(r.driver.runtime.cfg.state_dir)
        assert {v.volume_id for v in map(other.get_volume, ids) if v is not None} == ids
        other.close()
    finally:
        await r.channel.close(None)
        await r.driver.stop(None)
