"""external-resizer for one CSI driver.

A bound claim of this driver whose ``spec.resources.requests.storage`` exceeds
``status.capacity`` (the API server's admission already required a class with
``allowVolumeExpansion`` for the larger request) is expanded the way current
Kubernetes records it (RecoverVolumeExpansionFailure): ``status.allocatedResources.storage``
= the new size, ``allocatedResourceStatuses.storage`` = ``ControllerResizeInProgress`` and a
``Resizing`` condition; then ControllerExpandVolume when the driver has EXPAND_VOLUME (a
node-only driver skips it and always needs node expansion), the PV's capacity updated, and:

- node expansion required → ``FileSystemResizePending`` ("Waiting for user to (re-)start a
  pod to finish file system resize of volume on node.") and ``NodeResizePending``; the
  kubelet calls NodeExpandVolume and then finishes the resize
  (:mod:`kubelet_sim.kubelet.node_expansion`);
- otherwise → ``status.capacity`` = the new size, resize conditions and status cleared.

A failed ControllerExpandVolume leaves a ``ControllerResizeError`` condition ("failed to
expand pvc with ...") and is retried with backoff; an infeasible size (INVALID_ARGUMENT,
OUT_OF_RANGE) is marked ``ControllerResizeInfeasible``.

The sidecar's other controller, volume modification (a claim moved to another
VolumeAttributesClass), is :mod:`kubelet_sim.sidecars.volume_modify`.
"""

from __future__ import annotations

import grpc

from csi_protos import csi_pb2
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.api.pvc_resize import (
    CONTROLLER_RESIZE_ERROR,
    FS_RESIZE_PENDING,
    RESIZING,
    clear_resize_state,
    set_resize_condition,
)
from kubelet_sim.api.quantity import bytes_quantity
from kubelet_sim.client.writes import get_or_none, write_object, write_status
from kubelet_sim.controllers.base import claim_ref_keys, claim_step_key, claims_and_volumes
from kubelet_sim.controllers.common import (
    ANN_STORAGE_RESIZER,
    CtrlRpc,
    Mutation,
    pv_volume_capability,
    pvc_request_bytes,
    set_annotation,
    storage_bytes,
)
from kubelet_sim.csi.client import CsiError
from kubelet_sim.sidecars.volume_modify import ModifyingSidecar

COMPONENT = "csi-resizer"
FS_RESIZE_MESSAGE = ("Waiting for user to (re-)start a pod to finish file system resize of "
                     "volume on node.")
INFEASIBLE_CODES = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE)


class ExternalResizer(ModifyingSidecar):
    name = COMPONENT
    kinds = ("PersistentVolumeClaim", "PersistentVolume", "VolumeAttributesClass")

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("PersistentVolumeClaim"))

    def keys_for(self, obj: Resource) -> list[str] | None:
        """A claim, or the claim a volume's claimRef names; a class may concern any claim
        (one waiting for it): a full pass."""
        if obj.kind == "PersistentVolumeClaim":
            return [claim_step_key(obj.namespace, obj.name)]
        if obj.kind == "VolumeAttributesClass":
            return None
        return claim_ref_keys(obj)

    async def reconcile_keys(self, keys: set[str]) -> bool:
        return await self._sync(claims_and_volumes(self.cache, keys)[0])

    async def _sync(self, claims: list[Resource]) -> bool:
        changed = False
        for pvc in claims:
            key = claim_step_key(pvc.namespace, pvc.name)
            pv = self._expandable_volume(pvc)
            if pv is not None:
                # about to call the driver: decide again on the claim as the API server
                # has it now (the cache may not show our last status write yet)
                live = await get_or_none(self.client, "PersistentVolumeClaim", pvc.name,
                                         pvc.namespace)
                pv = self._expandable_volume(live) if live is not None else None
                if live is not None and pv is not None:
                    changed = await self.step(key, self._expand, live, pv) or changed
            pv = self._modifiable_volume(pvc)
            if pv is not None:
                changed = await self.step(f"modify/{key}", self.modify, pvc, pv) or changed
        return changed

    def _modifiable_volume(self, pvc: Resource) -> Resource | None:
        if not self.modification_due(pvc):
            return None
        pv = self.cache.get("PersistentVolume", str(pvc.spec.get("volumeName")))
        if pv is None or (pv.spec.get("csi") or {}).get("driver") != self.driver:
            return None
        return pv

    def _expandable_volume(self, pvc: Resource) -> Resource | None:
        if pvc.status.get("phase") != "Bound" or pvc.is_terminating:
            return None
        requested = pvc_request_bytes(pvc)
        if requested <= storage_bytes(pvc.status.get("capacity")):
            return None
        statuses = pvc.status.get("allocatedResourceStatuses") or {}
        if statuses.get("storage") == "NodeResizePending" and requested <= storage_bytes(
                pvc.status.get("allocatedResources")):
            return None  # the kubelet's turn
        if statuses.get("storage") == "ControllerResizeInfeasible" and requested == \
                storage_bytes(pvc.status.get("allocatedResources")):
            return None  # a user must change the request
        pv = self.cache.get("PersistentVolume", str(pvc.spec.get("volumeName")))
        if pv is None or (pv.spec.get("csi") or {}).get("driver") != self.driver:
            return None
        return pv

    async def _expand(self, pvc: Resource, pv: Resource) -> bool:
        new_size = pvc_request_bytes(pvc)
        now = format_time(self.clock.now())
        await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                           lambda o: set_annotation(o, ANN_STORAGE_RESIZER, self.driver))

        def in_progress(obj: Resource) -> bool:
            obj.status.setdefault("allocatedResources", {})["storage"] = bytes_quantity(new_size)
            obj.status.setdefault("allocatedResourceStatuses", {})["storage"] = \
                "ControllerResizeInProgress"
            set_resize_condition(obj.status, RESIZING, now)
            return True

        await self._write_claim(pvc, in_progress)
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal", "Resizing",
                   f"External resizer is resizing volume {pv.name}")
        rpcs = await self.controller_rpcs()
        if CtrlRpc.EXPAND_VOLUME in rpcs:
            try:
                capacity, node_required = await self._controller_expand(pv, new_size, rpcs)
            except CsiError as err:
                await self._failed(pvc, err, now)
                raise
            except LookupError as err:  # its Secret missing: retried until it exists
                self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                           "VolumeResizeFailed", str(err))
                raise
        else:
            capacity, node_required = new_size, True
        capacity = max(capacity, new_size)

        def pv_capacity(obj: Resource) -> bool:
            if storage_bytes(obj.spec.get("capacity")) >= capacity:
                return False
            obj.spec.setdefault("capacity", {})["storage"] = bytes_quantity(capacity)
            return True

        await write_object(self.client, "PersistentVolume", pv.name, "", pv_capacity)

        def done(obj: Resource) -> bool:
            if node_required:
                obj.status["allocatedResourceStatuses"]["storage"] = "NodeResizePending"
                set_resize_condition(obj.status, FS_RESIZE_PENDING, now, FS_RESIZE_MESSAGE)
            else:
                obj.status.setdefault("capacity", {})["storage"] = bytes_quantity(new_size)
                clear_resize_state(obj.status)
            return True

        await self._write_claim(pvc, done)
        reason = "FileSystemResizeRequired" if node_required else "VolumeResizeSuccessful"
        message = ("Require file system resize of volume on node" if node_required
                   else "Resize volume succeeded")
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal", reason, message)
        return True

    async def _controller_expand(self, pv: Resource, size: int,
                                 rpcs: frozenset[int]) -> tuple[int, bool]:
        csi = pv.spec.get("csi") or {}
        request = csi_pb2.ControllerExpandVolumeRequest(
            volume_id=str(csi.get("volumeHandle")),
            secrets=await self.secrets.get(csi.get("controllerExpandSecretRef")),
            volume_capability=pv_volume_capability(
                pv, single_node_multi_writer=CtrlRpc.SINGLE_NODE_MULTI_WRITER in rpcs))
        request.capacity_range.required_bytes = size
        response = await self.csi.call(request, csi_pb2.ControllerExpandVolumeResponse)
        return response.capacity_bytes, response.node_expansion_required

    async def _failed(self, pvc: Resource, err: CsiError, now: str) -> None:
        message = f"failed to expand pvc with rpc error: code = {err.code.name} desc = " \
                  f"{err.message}"

        def mutate(obj: Resource) -> bool:
            if err.code in INFEASIBLE_CODES:
                obj.status.setdefault("allocatedResourceStatuses", {})["storage"] = \
                    "ControllerResizeInfeasible"
            set_resize_condition(obj.status, CONTROLLER_RESIZE_ERROR, now, message)
            return True

        await self._write_claim(pvc, mutate)
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                   "VolumeResizeFailed", message)

    async def _write_claim(self, pvc: Resource, mutate: Mutation) -> None:
        await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace, mutate)
