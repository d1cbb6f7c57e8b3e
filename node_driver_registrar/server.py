"""The node-driver-registrar role: the kubelet plugin-registration API for our driver.

Served with grpc.aio on ``<kubelet root>/plugins_registry/<driver>-reg.sock``. The kubelet's
plugin watcher sees the socket appear, calls GetInfo (answered with type ``CSIPlugin``, the
driver name, the CSI socket path as endpoint and supported versions ``["1.0.0"]``), then
tells us the outcome with NotifyRegistrationStatus, which is recorded here. (The upstream
registrar exits when the kubelet reports a failure so that it is restarted; this servicer
keeps the statuses for its owner to act on.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from csi_protos import pluginregistration_pb2, pluginregistration_pb2_grpc

CSI_PLUGIN_TYPE = "CSIPlugin"
SUPPORTED_VERSIONS = ("1.0.0",)
REGISTRY_DIR_NAME = "plugins_registry"


def endpoint_path(endpoint: str) -> str:
    """The CSI socket path the kubelet dials: ``unix:///p`` or ``/p`` → ``/p``."""
    path = endpoint.removeprefix("unix://")
    if not path.startswith("/"):
        raise ValueError(f"CSI endpoint must be an absolute unix socket path: {endpoint!r}")
    return path


def registration_socket_path(kubelet_root: Path, driver_name: str) -> Path:
    return kubelet_root / REGISTRY_DIR_NAME / f"{driver_name}-reg.sock"


@dataclass(frozen=True)
class RegistrationStatus:
    registered: bool
    error: str


@dataclass
class RegistrationServicer(pluginregistration_pb2_grpc.RegistrationServicer):
    """Answers GetInfo for one CSI driver and records every NotifyRegistrationStatus."""

    driver_name: str
    csi_endpoint: str
    supported_versions: tuple[str, ...] = SUPPORTED_VERSIONS
    plugin_type: str = CSI_PLUGIN_TYPE
    statuses: list[RegistrationStatus] = field(default_factory=list)
    notified: asyncio.Event = field(default_factory=asyncio.Event)

    async def GetInfo(
        self, request: pluginregistration_pb2.InfoRequest, context: grpc.aio.ServicerContext,
    ) -> pluginregistration_pb2.PluginInfo:
        return pluginregistration_pb2.PluginInfo(
            type=self.plugin_type,
            name=self.driver_name,
            endpoint=endpoint_path(self.csi_endpoint),
            supported_versions=list(self.supported_versions),
        )

    async def NotifyRegistrationStatus(
        self, request: pluginregistration_pb2.RegistrationStatus,
        context: grpc.aio.ServicerContext,
    ) -> pluginregistration_pb2.RegistrationStatusResponse:
        self.statuses.append(RegistrationStatus(request.plugin_registered, request.error))
        self.notified.set()
        return pluginregistration_pb2.RegistrationStatusResponse()

    @property
    def registered(self) -> bool:
        """True when the kubelet's latest verdict was a successful registration."""
        return bool(self.statuses) and self.statuses[-1].registered


@dataclass
class RegistrationServer:
    server: grpc.aio.Server
    servicer: RegistrationServicer
    socket_path: Path

    async def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving and remove the socket (the kubelet then deregisters the driver)."""
        await self.server.stop(grace)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()


def _clear_stale_socket(path: Path) -> None:
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(mode):
        raise FileExistsError(f"{path} exists and is not a socket; refusing to replace it")
    path.unlink()


async def serve_registration(
    socket_path: Path, *, driver_name: str, csi_endpoint: str,
) -> RegistrationServer:
    """Serve the registration API on `socket_path` (its directory is created when missing;
    a stale socket is replaced, any other file there is refused)."""
    servicer = RegistrationServicer(driver_name=driver_name, csi_endpoint=csi_endpoint)
    endpoint_path(csi_endpoint)  # validate before binding
    socket_path.parent.mkdir(parents=True, exist_ok=True)
    _clear_stale_socket(socket_path)
    server = grpc.aio.server()
    pluginregistration_pb2_grpc.add_RegistrationServicer_to_server(servicer, server)
    server.add_insecure_port(f"unix://{socket_path}")
    await server.start()
    os.chmod(socket_path, 0o600)
    return RegistrationServer(server=server, servicer=servicer, socket_path=socket_path)


async def serve_registration_for_kubelet(
    kubelet_root: Path, *, driver_name: str, csi_endpoint: str,
) -> RegistrationServer:
    """Serve on ``<kubelet_root>/plugins_registry/<driver>-reg.sock``."""
    return await serve_registration(
        registration_socket_path(kubelet_root, driver_name),
        driver_name=driver_name, csi_endpoint=csi_endpoint,
    )


async def register_when_serving(
    registration_dir: Path, driver_name: str, csi_endpoint: str, driver: asyncio.Task[None],
) -> None:
    """Like node-driver-registrar: wait until the CSI socket answers, then serve the
    registration socket in ``registration_dir`` until cancelled (or the driver ends)."""
    csi_socket = Path(endpoint_path(csi_endpoint))
    while not csi_socket.exists():
        if driver.done():
            return
        await asyncio.sleep(0.02)
    reg = await serve_registration(
        registration_dir / f"{driver_name}-reg.sock",
        driver_name=driver_name, csi_endpoint=csi_endpoint,
    )
    try:
        await asyncio.shield(driver)
    finally:
        await reg.stop()
