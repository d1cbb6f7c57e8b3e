"""Building the grpc.aio server (``create_server``) and running it until a signal (``serve``)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import grpc
from grpc_health.v1 import health, health_pb2_grpc
from grpc_health.v1._async import HealthServicer
from grpc_reflection.v1alpha import reflection

from csi_driver.config import Config
from csi_driver.domain import capabilities
from csi_driver.domain.inflight import InFlight
from csi_driver.server import endpoint
from csi_driver.server.faults import FaultInjector, serve_control
from csi_driver.server.interceptors import CsiInterceptor
from csi_driver.service.context import Domain, Runtime
from csi_driver.service.controller import ControllerServicer
from csi_driver.service.group_controller import GroupControllerServicer
from csi_driver.service.identity import IdentityServicer
from csi_driver.service.node import NodeServicer
from csi_driver.service.snapshot_metadata import SnapshotMetadataServicer
from csi_driver.state import loop_fs
from csi_driver.state.mounter import Mounter
from csi_driver.state.orphans import OrphanSweeper
from csi_protos import csi_pb2, csi_pb2_grpc

if TYPE_CHECKING:  # prometheus-client is imported only when metrics are served
    from wsgiref.simple_server import WSGIServer

    from csi_driver.server.metrics import DriverMetrics

log = logging.getLogger(__name__)


@dataclass
class DriverServer:
    server: grpc.aio.Server
    runtime: Runtime
    socket_path: str
    sweeper: OrphanSweeper | None = None
    faults: FaultInjector | None = None
    metrics: DriverMetrics | None = None
    _fault_control: asyncio.AbstractServer | None = None
    _metrics_server: WSGIServer | None = None

    async def start(self) -> None:
        old_umask = os.umask(0o777 ^ self.runtime.cfg.socket_mode)
        try:
            await self.server.start()
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, self.runtime.cfg.socket_mode)
        if self.runtime.store.wait_for_disk:  # share each fsync among concurrent RPCs
            self.runtime.store.enable_group_commit()
        if self.sweeper is not None:
            self.sweeper.start()
        cfg = self.runtime.cfg
        if cfg.metrics_address and self.metrics is not None:
            self._metrics_server = self.metrics.serve(cfg.metrics_address)
            log.info("metrics on http://%s/metrics", cfg.metrics_address)
        if cfg.fault_control and self.faults is not None:
            self._fault_control = await serve_control(Path(cfg.fault_control), self.faults)
            log.info("fault control socket on %s", cfg.fault_control)

    async def stop(self, grace: float | None = 5.0) -> None:
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()
        if self._fault_control is not None:
            self._fault_control.close()
            Path(self.runtime.cfg.fault_control).unlink(missing_ok=True)
        if self.sweeper is not None:
            await self.sweeper.stop()
        await self.server.stop(grace)
        endpoint.remove(self.socket_path)
        self.runtime.close()


class _GenericHandlersOnly:
    """What the generated ``add_*Servicer_to_server`` functions see of the server: their
    handlers go in as generic handlers only.  grpc.aio keeps one pending request per
    *registered* method and waits on all of them (``asyncio.wait`` over ~40 futures)
    for every call that arrives; generic handlers share one pending request, and a
    method is then found by a dict lookup per service."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: tuple[grpc.GenericRpcHandler, ...]) -> None:
        self._server.add_generic_rpc_handlers(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, object]) -> None:
        """Dropped: the generic handler added just before serves the same methods."""


def build_runtime(cfg: Config) -> Runtime:
    """Raises BackendUnavailable when ``--fs-backend loop`` cannot work on this host."""
    mounter = Mounter.choose(cfg.mount_method)
    fs_backend, why_not_loop = loop_fs.resolve(cfg.fs_backend)
    if fs_backend == "loop":
        log.info("filesystem volumes are ext4 images, loop-mounted at stage")
        if cfg.expansion == "online" and not loop_fs.grows_online():
            # A published image cannot grow here, so ONLINE would be a false promise.
            log.info("volume expansion is OFFLINE: this host denies growing a mounted "
                     "filesystem (no CAP_SYS_RESOURCE)")
            cfg = replace(cfg, expansion="offline")
    else:
        log.info("filesystem volumes are directories%s",
                 f": {why_not_loop}" if why_not_loop else "")
    return Runtime(
        cfg=cfg,
        caps=capabilities.compute(cfg),
        inflight=InFlight(),
        fast=Domain.open(cfg, mounter, background_removal=True, fs_backend=fs_backend),
        slow=Domain.open(cfg, mounter, fs_backend=fs_backend),
    )


def create_server(cfg: Config, log_stream: TextIO | None = None) -> DriverServer:
    """A ready-to-start server for ``cfg`` (socket bound, services registered).
    RPC log lines go to ``log_stream`` (default stderr)."""
    path = endpoint.socket_path(cfg.endpoint)
    endpoint.prepare(path)
    rt = build_runtime(cfg)
    sweeper = None
    if cfg.serves_controller:
        sweeper = OrphanSweeper(cfg, rt.slow.store, rt.slow.data)
        sweeper.sweep()
    if cfg.serves_node:
        rt.node.register()
        redone = rt.node.recheck_mounts()
        if redone:
            log.info("re-established %d publishes recorded before the restart", redone)
    faults = FaultInjector.from_file(Path(cfg.faults)) if cfg.faults else FaultInjector()
    if faults:
        log.info("injecting faults: %s", faults.describe())
    metrics = None
    if cfg.metrics_address:
        from csi_driver.server.metrics import DriverMetrics

        metrics = DriverMetrics(cfg.driver_name, rt.slow.store.counts)
    grpc_server = grpc.aio.server(
        interceptors=[CsiInterceptor(dict(cfg.secrets), log_stream, rt.activity, faults, metrics)]
    )
    server: Any = _GenericHandlersOnly(grpc_server)
    services = ["csi.v1.Identity"]
    csi_pb2_grpc.add_IdentityServicer_to_server(IdentityServicer(rt), server)
    if cfg.serves_controller:
        csi_pb2_grpc.add_ControllerServicer_to_server(ControllerServicer(rt), server)
        services.append("csi.v1.Controller")
        if cfg.group_snapshots:
            csi_pb2_grpc.add_GroupControllerServicer_to_server(GroupControllerServicer(rt),
                                                               server)
            services.append("csi.v1.GroupController")
        if cfg.snapshot_metadata:
            csi_pb2_grpc.add_SnapshotMetadataServicer_to_server(
                SnapshotMetadataServicer(rt), server
            )
            services.append("csi.v1.SnapshotMetadata")
    if cfg.serves_node:
        csi_pb2_grpc.add_NodeServicer_to_server(NodeServicer(rt), server)
        services.append("csi.v1.Node")
    health_servicer = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    names = [csi_pb2.DESCRIPTOR.services_by_name[s.split(".")[-1]].full_name for s in services]
    reflection.enable_server_reflection(
        [*names, health.SERVICE_NAME, reflection.SERVICE_NAME], server
    )
    grpc_server.add_insecure_port(f"unix://{path}")
    return DriverServer(grpc_server, rt, path, sweeper, faults, metrics)


async def serve(cfg: Config) -> None:
    """Run until SIGTERM or SIGINT, then stop gracefully and remove the socket."""
    driver = create_server(cfg)
    await driver.start()
    log.info("serving %s on %s (mode %s)", cfg.driver_name, driver.socket_path, cfg.mode)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("stopping")
    await driver.stop()
