"""What the four CSI sidecars share: the driver they serve, its controller socket (a CSI
client whose calls are traced under the sidecar's name, with the sidecar's ``--timeout``),
the Secrets they read from the API server, and the driver's controller capabilities, asked once."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.secrets import ApiSecrets
from kubelet_sim.client.writes import get_or_none
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.common import CachedControllerCapabilities
from kubelet_sim.csi.client import CsiClient


class CsiSidecar(Controller):
    """A controller that serves one CSI driver. Subclasses set ``name`` (the component
    their calls and events are recorded under) and ``timeout`` (seconds per call)."""

    timeout: float = 10.0

    def __init__(self, api: APIServer | KubeClient, csi: CsiClient, driver: str,
                 **kwargs: Any) -> None:
        super().__init__(api, **kwargs)
        self.csi = csi.with_component(self.name, timeout=self.timeout)
        self.driver = driver
        self.secrets = ApiSecrets(self.client)  # read from the API server for every call
        self.capabilities = CachedControllerCapabilities(self.csi)

    async def controller_rpcs(self) -> frozenset[int]:
        """The driver's ControllerGetCapabilities RPC types (asked on first use)."""
        return await self.capabilities.get()

    async def sync_owned(self, kind: str, driver_field: str, done: Callable[[Resource], bool],
                         create: Callable[[Resource], Awaitable[bool]],
                         delete: Callable[[Resource], Awaitable[bool]]) -> bool:
        """One pass over the ``kind`` objects whose ``spec.<driver_field>`` names this
        driver: ``delete`` for those being deleted, ``create`` for those not ``done`` yet.
        Each runs as its own step (a failure is retried with backoff, not fatal)."""
        return await self.sync_owned_objects(self.cache.list(kind), driver_field, done,
                                             create, delete)

    async def sync_owned_objects(self, objects: list[Resource], driver_field: str,
                                 done: Callable[[Resource], bool],
                                 create: Callable[[Resource], Awaitable[bool]],
                                 delete: Callable[[Resource], Awaitable[bool]]) -> bool:
        """:meth:`sync_owned` over ``objects`` only (a work queue's batch)."""
        changed = False
        for cached in objects:
            if cached.spec.get(driver_field) != self.driver:
                continue
            if not cached.is_terminating and done(cached):
                continue
            # about to call the driver: on the object as the API server has it now, not
            # as a cache that may not have our last write yet (a second ControllerPublish
            # or DeleteSnapshot for one change); in-process the two are the same
            obj = await get_or_none(self.client, cached.kind, cached.name, cached.namespace)
            if obj is None:
                continue
            if obj.is_terminating:
                action = delete
            elif not done(obj):
                action = create
            else:
                continue
            changed = await self.step(f"{obj.kind}/{obj.name}", action, obj) or changed
        return changed
