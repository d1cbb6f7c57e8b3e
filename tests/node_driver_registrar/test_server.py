"""node_driver_registrar.server: the node-driver-registrar role over a real unix socket."""

from __future__ import annotations

import shutil
import socket
import stat
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from csi_protos import pluginregistration_pb2, pluginregistration_pb2_grpc
from node_driver_registrar.server import (
    RegistrationServer,
    endpoint_path,
    serve_registration,
    serve_registration_for_kubelet,
)

DRIVER = "csi-mini.example.com"


@pytest.fixture
def kubelet_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="kreg", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def registrar(kubelet_root: Path) -> AsyncIterator[RegistrationServer]:
    server = await serve_registration_for_kubelet(
        kubelet_root, driver_name=DRIVER, csi_endpoint="unix:///var/lib/kubelet/plugins/x/csi.sock")
    yield server
    await server.stop(None)


async def call_get_info(socket: Path) -> pluginregistration_pb2.PluginInfo:
    async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
        stub = pluginregistration_pb2_grpc.RegistrationStub(channel)
        info: pluginregistration_pb2.PluginInfo = await stub.GetInfo(
            pluginregistration_pb2.InfoRequest(), timeout=10)
        return info


async def test_registration_socket_lives_in_plugins_registry_named_after_the_driver(
    kubelet_root: Path, registrar: RegistrationServer,
) -> None:
    expected = kubelet_root / "plugins_registry" / f"{DRIVER}-reg.sock"
    assert registrar.socket_path == expected
    assert stat.S_ISSOCK(expected.lstat().st_mode)
    assert stat.S_IMODE(expected.lstat().st_mode) == 0o600


async def test_get_info_answers_csi_plugin_name_endpoint_and_version_1_0_0(
    registrar: RegistrationServer,
) -> None:
    info = await call_get_info(registrar.socket_path)

    assert info.type == "CSIPlugin"
    assert info.name == DRIVER
    assert info.endpoint == "/var/lib/kubelet/plugins/x/csi.sock"
    assert list(info.supported_versions) == ["1.0.0"]


async def test_notify_registration_status_is_recorded(registrar: RegistrationServer) -> None:
    async with grpc.aio.insecure_channel(f"unix://{registrar.socket_path}") as channel:
        stub = pluginregistration_pb2_grpc.RegistrationStub(channel)
        await stub.NotifyRegistrationStatus(
            pluginregistration_pb2.RegistrationStatus(plugin_registered=False, error="nope"),
            timeout=10)
        assert registrar.servicer.registered is False
        await stub.NotifyRegistrationStatus(
            pluginregistration_pb2.RegistrationStatus(plugin_registered=True), timeout=10)

    assert [(s.registered, s.error) for s in registrar.servicer.statuses] == [
        (False, "nope"), (True, "")]
    assert registrar.servicer.registered is True
    assert registrar.servicer.notified.is_set()


async def test_stop_removes_the_socket(registrar: RegistrationServer) -> None:
    await registrar.stop(None)

    assert not registrar.socket_path.exists()


async def test_a_stale_socket_is_replaced(kubelet_root: Path) -> None:
    stale = kubelet_root / "plugins_registry" / f"{DRIVER}-reg.sock"
    stale.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as dead:  # a crashed registrar leaves its socket file
        dead.bind(str(stale))
    assert stat.S_ISSOCK(stale.lstat().st_mode)

    second = await serve_registration_for_kubelet(
        kubelet_root, driver_name=DRIVER, csi_endpoint="/tmp/b/csi.sock")
    try:
        assert (await call_get_info(second.socket_path)).endpoint == "/tmp/b/csi.sock"
    finally:
        await second.stop(None)


async def test_a_regular_file_at_the_socket_path_is_refused(kubelet_root: Path) -> None:
    path = kubelet_root / "plugins_registry" / "x-reg.sock"
    path.parent.mkdir(parents=True)
    path.write_text("not a socket")

    with pytest.raises(FileExistsError):
        await serve_registration(path, driver_name=DRIVER, csi_endpoint="/tmp/c/csi.sock")
    assert path.read_text() == "not a socket"


@pytest.mark.parametrize("endpoint", ["unix:///run/csi.sock", "/run/csi.sock"])
def test_endpoint_is_reported_as_the_socket_path(endpoint: str) -> None:
    assert endpoint_path(endpoint) == "/run/csi.sock"


def test_a_relative_endpoint_is_rejected() -> None:
    with pytest.raises(ValueError):
        endpoint_path("run/csi.sock")
