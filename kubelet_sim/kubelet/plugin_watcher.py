"""The kubelet's plugin watcher and CSI plugin registration (pkg/kubelet/pluginmanager + the
CSI plugin's registration handler).

`PluginWatcher.scan` polls ``<root>/plugins_registry/`` and its subdirectories (no inotify;
names starting with a dot are skipped): for each new socket it
calls ``pluginregistration.Registration/GetInfo``, checks the plugin type (``CSIPlugin``) and
versions (one with major version 1), calls the driver's NodeGetInfo over the endpoint it
reported, hands a `CsiNodeRegistration` to the caller's callback (which writes CSINode and the
node annotation, see `csinode_driver_entry` and `node_id_annotation`), and answers
NotifyRegistrationStatus(true), or (false, error) when any step failed. A socket that
disappears deregisters its driver; one that is re-created registers again.
"""

from __future__ import annotations

import contextlib
import json
import stat
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from csi_protos import csi_pb2, pluginregistration_pb2, pluginregistration_pb2_grpc
from kubelet_sim.csi.client import CsiClient, DriverNotRegistered, GrpcCsiClient
from kubelet_sim.utils.clock import Clock, RealClock
from kubelet_sim.utils.trace import Trace

CSI_PLUGIN_TYPE = "CSIPlugin"
NODE_ID_ANNOTATION = "csi.volume.kubernetes.io/nodeid"
GET_INFO_TIMEOUT_SECONDS = 10.0  # the kubelet dials for up to 10 s


@dataclass(frozen=True)
class CsiNodeRegistration:
    """A registered CSI driver on this node, as NodeGetInfo described it."""

    driver: str
    endpoint: str
    versions: tuple[str, ...]
    node_id: str
    topology: Mapping[str, str]
    max_volumes_per_node: int


def csinode_driver_entry(reg: CsiNodeRegistration) -> dict[str, Any]:
    """The CSINode ``spec.drivers[]`` item the kubelet writes for a registered driver."""
    entry: dict[str, Any] = {
        "name": reg.driver,
        "nodeID": reg.node_id,
        "topologyKeys": sorted(reg.topology),
    }
    if reg.max_volumes_per_node > 0:
        entry["allocatable"] = {"count": reg.max_volumes_per_node}
    return entry


def csinode_drivers_with(drivers: list[dict[str, Any]],
                         reg: CsiNodeRegistration) -> list[dict[str, Any]]:
    """CSINode ``spec.drivers`` after registering `reg`: an entry of the same name is
    replaced (the new one goes last, as the kubelet appends it), the others are kept."""
    return [d for d in drivers if d.get("name") != reg.driver] + [csinode_driver_entry(reg)]


def csinode_drivers_without(drivers: list[dict[str, Any]], driver: str) -> list[dict[str, Any]]:
    """CSINode ``spec.drivers`` after the driver deregistered."""
    return [d for d in drivers if d.get("name") != driver]


def node_id_annotation(existing: str | None, driver: str, node_id: str | None) -> str | None:
    """The node's ``csi.volume.kubernetes.io/nodeid`` annotation with `driver` set to
    `node_id` (or removed when `node_id` is None): compact JSON with sorted keys, as Go
    marshals a map. None when no driver is left."""
    ids: dict[str, str] = json.loads(existing) if existing else {}
    if node_id is None:
        ids.pop(driver, None)
    else:
        ids[driver] = node_id
    if not ids:
        return None
    return json.dumps(dict(sorted(ids.items())), separators=(",", ":"))


def topology_labels(reg: CsiNodeRegistration) -> dict[str, str]:
    """Node labels the kubelet adds from the driver's accessible topology."""
    return dict(reg.topology)


def highest_supported_version(versions: tuple[str, ...]) -> tuple[int, int, int] | None:
    """The highest version with major 1 (the only CSI major the kubelet accepts), or None."""
    best: tuple[int, int, int] | None = None
    for raw in versions:
        parts = raw.removeprefix("v").split(".")
        try:
            numbers = tuple(int(p) for p in [*parts, "0", "0"][:3])
        except ValueError:
            continue
        version = (numbers[0], numbers[1], numbers[2])
        if version[0] == 1 and (best is None or version > best):
            best = version
    return best


class RegistrationFailed(Exception):
    """Why a plugin was not registered (sent back in NotifyRegistrationStatus.error)."""


@dataclass
class RegisteredDriver:
    registration: CsiNodeRegistration
    version: tuple[int, int, int]
    client: CsiClient
    socket: Path


OnRegister = Callable[[CsiNodeRegistration], Awaitable[None]]
OnDeregister = Callable[[str], Awaitable[None]]
ClientFactory = Callable[[str], CsiClient]


async def _ignore_deregister(_driver: str) -> None:
    return None


@dataclass
class PluginWatcher:
    """Watches one kubelet's plugin registry directory and registers CSI drivers."""

    registry_dir: Path
    node_name: str
    trace: Trace
    on_register: OnRegister
    on_deregister: OnDeregister = _ignore_deregister
    client_factory: ClientFactory | None = None
    clock: Clock = field(default_factory=RealClock)
    poll_interval: float = 0.1
    drivers: dict[str, RegisteredDriver] = field(default_factory=dict)
    retry_interval: float = 1.0
    _seen: dict[Path, tuple[int, int]] = field(default_factory=dict)  # socket -> (inode, mtime)
    _failed_at: dict[Path, float] = field(default_factory=dict)  # socket -> last failure

    # -- what the volume manager uses ----------------------------------------------------

    def client_for(self, driver: str) -> CsiClient:
        """The registered driver's client (the kubelet's csiDrivers store)."""
        registered = self.drivers.get(driver)
        if registered is None:
            raise DriverNotRegistered(
                f"driver name {driver} not found in the list of registered CSI drivers")
        return registered.client

    # -- the loop ----------------------------------------------------------------------------

    async def run(self, stopped: Callable[[], bool]) -> None:
        """Poll until `stopped()` is true."""
        while not stopped():
            await self.scan()
            await self.clock.sleep(self.poll_interval)

    async def scan(self) -> None:
        """One pass: register new or re-created sockets, deregister vanished ones."""
        present: dict[Path, tuple[int, int]] = {}
        for entry in self._walk(self.registry_dir):
            try:
                info = entry.lstat()
            except FileNotFoundError:
                continue
            if stat.S_ISSOCK(info.st_mode):
                present[entry] = (info.st_ino, info.st_mtime_ns)
        for socket, identity in list(self._seen.items()):
            if present.get(socket) != identity:
                await self._deregister(socket)
        for socket, identity in present.items():
            if socket in self._seen or not self._retry_due(socket):
                continue
            outcome = await self._register(socket)
            if outcome is True:
                self._seen[socket] = identity
                self._failed_at.pop(socket, None)
            elif outcome is False:  # refused: asked again after retry_interval
                self._failed_at[socket] = self.clock.monotonic()

    @property
    def retries_pending(self) -> bool:
        """True while a refused plugin waits for its next registration attempt."""
        return bool(self._failed_at)

    def retry_due(self) -> bool:
        return any(self._retry_due(socket) for socket in self._failed_at)

    def _retry_due(self, socket: Path) -> bool:
        """A failed registration is retried, as the kubelet's plugin manager reconciles its
        desired state every second until the plugin is registered."""
        failed = self._failed_at.get(socket)
        return failed is None or self.clock.monotonic() - failed >= self.retry_interval

    @classmethod
    def _walk(cls, directory: Path) -> list[Path]:
        """Every entry below `directory`, subdirectories included (as the kubelet walks the
        registry), skipping names that start with a dot."""
        try:
            entries = sorted(directory.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return []
        found: list[Path] = []
        for entry in entries:
            if entry.name.startswith("."):
                continue
            if entry.is_dir() and not entry.is_symlink():
                found.extend(cls._walk(entry))
            else:
                found.append(entry)
        return found

    # -- registration --------------------------------------------------------------------------

    async def _register(self, socket: Path) -> bool | None:
        """GetInfo → validate → NodeGetInfo → callback → NotifyRegistrationStatus.
        True when registered; None when the plugin could not be asked (asked again on the
        next scan); False when it was refused (asked again after `retry_interval`)."""
        async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
            stub = pluginregistration_pb2_grpc.RegistrationStub(channel)
            try:
                info = await self._traced(
                    "GetInfo", {"socket": str(socket)},
                    stub.GetInfo(pluginregistration_pb2.InfoRequest(),
                                 timeout=GET_INFO_TIMEOUT_SECONDS))
            except grpc.aio.AioRpcError:
                return None
            error = ""
            try:
                await self._register_plugin(info, socket)
            except RegistrationFailed as failed:
                error = str(failed)
            status = pluginregistration_pb2.RegistrationStatus(
                plugin_registered=not error, error=error)
            # a plugin that cannot hear the verdict is logged and the registration stands
            with contextlib.suppress(grpc.aio.AioRpcError):
                await self._traced(
                    "NotifyRegistrationStatus",
                    {"plugin_registered": not error, "error": error},
                    stub.NotifyRegistrationStatus(status, timeout=GET_INFO_TIMEOUT_SECONDS))
            return not error

    async def _register_plugin(self, info: pluginregistration_pb2.PluginInfo,
                               socket: Path) -> None:
        if info.type != CSI_PLUGIN_TYPE:
            raise RegistrationFailed(
                f"no handler registered for plugin type: {info.type} at socket {socket}")
        versions = tuple(info.supported_versions)
        try:
            version = self._validate(info.name, versions)
        except RegistrationFailed as failed:
            raise RegistrationFailed(
                f"RegisterPlugin error -- plugin validation failed with err: {failed}") from None
        endpoint = info.endpoint or str(socket)
        client = self._client(endpoint)
        try:
            node_info = await client.call(csi_pb2.NodeGetInfoRequest(), csi_pb2.NodeGetInfoResponse)
            registration = CsiNodeRegistration(
                driver=info.name, endpoint=endpoint, versions=versions,
                node_id=node_info.node_id,
                topology=dict(node_info.accessible_topology.segments),
                max_volumes_per_node=node_info.max_volumes_per_node,
            )
            if not registration.node_id:
                raise RegistrationFailed("NodeGetInfo returned an empty node_id")
            await self.on_register(registration)
        except Exception as failed:  # CSI errors, and whatever the callback raised
            await client.close()
            raise RegistrationFailed(
                f"RegisterPlugin error -- plugin registration failed with err: {failed}"
            ) from None
        previous = self.drivers.get(info.name)
        if previous is not None:
            await previous.client.close()
        self.drivers[info.name] = RegisteredDriver(registration, version, client, socket)

    def _validate(self, name: str, versions: tuple[str, ...]) -> tuple[int, int, int]:
        if not name:
            raise RegistrationFailed("plugin name is empty")
        version = highest_supported_version(versions)
        if version is None:
            raise RegistrationFailed(
                f"none of the CSI versions reported by this driver are supported: {list(versions)}")
        existing = self.drivers.get(name)
        if existing is not None and not existing.version < version:
            raise RegistrationFailed(
                f"another driver with the same name {name} is already registered with a "
                f"higher supported version: {'.'.join(map(str, existing.version))}")
        return version

    async def _deregister(self, socket: Path) -> None:
        self._seen.pop(socket, None)
        for name, registered in list(self.drivers.items()):
            if registered.socket == socket:
                del self.drivers[name]
                await registered.client.close()
                self.trace.record(node=self.node_name, component="kubelet",
                                  call="pluginmanager/DeRegisterPlugin",
                                  request={"driver": name, "socket": str(socket)})
                await self.on_deregister(name)

    # -- helpers --------------------------------------------------------------------------------

    def _client(self, endpoint: str) -> CsiClient:
        if self.client_factory is not None:
            return self.client_factory(endpoint)
        return GrpcCsiClient(endpoint, trace=self.trace, node=self.node_name)

    async def _traced(self, method: str, request: dict[str, Any], call: Awaitable[Any]) -> Any:
        started = time.monotonic()
        name = f"pluginregistration.Registration/{method}"
        try:
            result = await call
        except grpc.aio.AioRpcError as err:
            self.trace.record(node=self.node_name, component="kubelet", call=name,
                              request=request, result=f"{err.code().name}: {err.details()}",
                              duration_ms=(time.monotonic() - started) * 1000)
            raise
        self.trace.record(node=self.node_name, component="kubelet", call=name, request=request,
                          duration_ms=(time.monotonic() - started) * 1000)
        return result
