"""The kubelet's CSINode updater (MutableCSINodeAllocatableCount, beta and on in 1.35).

For every driver registered on the node whose CSIDriver sets
``nodeAllocatableUpdatePeriodSeconds``, the kubelet asks NodeGetInfo again every that many
seconds and rewrites the driver's CSINode entry from the answer (``allocatable.count`` from
``max_volumes_per_node``, as at registration). The period is timed from when the updater
started for the driver (its registration, or the CSIDriver gaining or changing the field);
without the field there is no update at all.

The same refresh happens at once when a volume of such a driver waits for an attachment
whose ``status.attachError.errorCode`` is gRPC ResourceExhausted (8): the attacher hit the
node's limit, so the count the scheduler used is stale (the plugin's
VerifyExhaustedResource).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import replace

from csi_protos import csi_pb2
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import shared_cache
from kubelet_sim.csi.driver_policy import DriverPolicy
from kubelet_sim.csi.naming import attachment_name
from kubelet_sim.kubelet.node_registration import record_registration
from kubelet_sim.kubelet.plugin_watcher import RegisteredDriver
from kubelet_sim.utils.clock import Clock

log = logging.getLogger(__name__)

RESOURCE_EXHAUSTED = 8  # the gRPC code external-attacher records in attachError.errorCode


class CsiNodeUpdater:
    def __init__(self, *, client: KubeClient, node_name: str, clock: Clock,
                 drivers: Callable[[], Mapping[str, RegisteredDriver]]) -> None:
        self.client = client
        self.cache = shared_cache(feed_source(client))  # CSIDriver, PVC, PV, VolumeAttachment
        self.node_name = node_name
        self.clock = clock
        self._drivers = drivers
        self._timers: dict[str, tuple[int, float]] = {}  # driver -> (period, started at)

    async def sync(self) -> bool:
        """One pass: start, restart or stop each driver's timer, and refresh the drivers
        whose period has run out; True when a CSINode entry changed."""
        changed = False
        registered = self._drivers()
        now = self.clock.monotonic()
        for name in list(self._timers):
            if name not in registered:
                del self._timers[name]
        for name, driver in registered.items():
            period = self._period(name)
            timer = self._timers.get(name)
            if period <= 0:
                self._timers.pop(name, None)
                continue
            if timer is None or timer[0] != period:
                self._timers[name] = (period, now)
                continue
            if now - timer[1] >= period:
                self._timers[name] = (period, timer[1] + period * ((now - timer[1]) // period))
                changed |= await self.refresh(driver)
        return changed

    async def verify_exhausted(self, pod: Resource) -> bool:
        """For each attachable volume of ``pod`` whose VolumeAttachment failed with
        ResourceExhausted on a driver with an update period: refresh the driver now."""
        changed = False
        cache = self.cache
        for source in pod.spec.get("volumes") or []:
            claim = (source.get("persistentVolumeClaim") or {}).get("claimName")
            pvc = cache.get("PersistentVolumeClaim", claim, pod.namespace) if claim else None
            pv_name = pvc.spec.get("volumeName") if pvc is not None else None
            pv = cache.get("PersistentVolume", pv_name) if pv_name else None
            csi = (pv.spec.get("csi") or {}) if pv is not None else {}
            driver, handle = str(csi.get("driver", "")), str(csi.get("volumeHandle", ""))
            registered = self._drivers().get(driver)
            if not csi or registered is None or self._period(driver) <= 0:
                continue
            va = cache.get("VolumeAttachment", attachment_name(handle, driver, self.node_name))
            error = (va.status.get("attachError") or {}) if va is not None else {}
            if error.get("errorCode") == RESOURCE_EXHAUSTED:
                changed |= await self.refresh(registered)
        return changed

    async def refresh(self, driver: RegisteredDriver) -> bool:
        """NodeGetInfo, then the CSINode entry rewritten from it; True when it changed."""
        try:
            info = await driver.client.call(csi_pb2.NodeGetInfoRequest(),
                                            csi_pb2.NodeGetInfoResponse)
        except Exception as err:  # the kubelet logs it and tries again next period
            log.error("Failed to update CSIDriver %s: %s", driver.registration.driver, err)
            return False
        updated = replace(driver.registration, node_id=info.node_id,
                          topology=dict(info.accessible_topology.segments),
                          max_volumes_per_node=info.max_volumes_per_node)
        if updated == driver.registration:
            return False
        driver.registration = updated
        try:
            await record_registration(self.client, self.node_name, updated)
        except NotFound:
            return False
        return True

    def _period(self, driver: str) -> int:
        obj = self.cache.get("CSIDriver", driver)
        spec = obj.spec if obj is not None else None
        return DriverPolicy.from_spec(spec).node_allocatable_update_period_seconds
