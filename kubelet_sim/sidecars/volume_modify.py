"""external-resizer's modify controller: a bound claim of this driver whose
``spec.volumeAttributesClassName`` differs from ``status.currentVolumeAttributesClassName``
gets ControllerModifyVolume with the class's parameters as ``mutable_parameters``.

Only when the driver has MODIFY_VOLUME (the real sidecar runs this controller only then,
and only when the API server serves storage.k8s.io/v1 VolumeAttributesClass). The steps:

- the class does not exist → ``VolumeModifyFailed`` ('VAC "x" does not exist.') and
  ``modifyVolumeStatus.status: Pending``; the claim waits for the class to appear;
- otherwise ``modifyVolumeStatus`` = {target, InProgress} with a ``ModifyingVolume``
  condition, a ``VolumeModify`` event, and the call, with the secrets named by the PV's
  ``volume.kubernetes.io/controller-modify-secret-*`` annotations (else its
  ``controllerExpandSecretRef``);
- success → the PV's ``spec.volumeAttributesClassName`` set, then the claim's current
  class; status and conditions cleared; ``VolumeModifySuccessful``;
- failure → ``VolumeModifyFailed`` and a ``ModifyVolumeError`` condition with the gRPC
  code; INVALID_ARGUMENT marks the modification ``Infeasible``; a non-final code (the
  driver may still be working) keeps it InProgress and the target fixed (uncertain) until
  the driver answers; retried with backoff;
- the class name removed while no call is in flight → the modification is cancelled
  (``VolumeModifyCanceled``).
"""

from __future__ import annotations

import grpc

from csi_protos import csi_pb2
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.api.pvc_modify import (
    IN_PROGRESS,
    INFEASIBLE,
    MODIFY_ERROR,
    MODIFY_STATUS,
    MODIFYING,
    PENDING,
    VAC_FIELD,
    complete_modification,
    current_class,
    drop_conditions,
    merge_conditions,
    modify_status,
    spec_class,
)
from kubelet_sim.client.writes import write_object, write_status
from kubelet_sim.controllers.base import claim_step_key
from kubelet_sim.controllers.common import CtrlRpc
from kubelet_sim.csi.client import CsiError
from kubelet_sim.sidecars.base import CsiSidecar
from kubelet_sim.sidecars.provision_request import (
    ANN_MODIFY_SECRET_NAME,
    ANN_MODIFY_SECRET_NAMESPACE,
)


def go_code_name(code: grpc.StatusCode) -> str:
    """A gRPC code as grpc-go prints it (``InvalidArgument``), as in the sidecar's messages
    and condition reasons."""
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"
    if code is grpc.StatusCode.OK:
        return "OK"
    return "".join(part.capitalize() for part in code.name.split("_"))


class ModifyingSidecar(CsiSidecar):
    """The modify half of external-resizer (mixed into :class:`ExternalResizer`)."""

    _uncertain: set[str] | None = None  # claims whose last call may still be running

    def modification_due(self, pvc: Resource) -> bool:
        """A bound claim whose class and current class differ, or with a modification
        recorded; not one that waits (Pending) for a class that still does not exist."""
        if pvc.status.get("phase") != "Bound" or not pvc.spec.get("volumeName"):
            return False
        status = modify_status(pvc)
        if status is None:
            return spec_class(pvc) != current_class(pvc)
        waiting = status.get("status") == PENDING and bool(spec_class(pvc))
        return not waiting or self.cache.get("VolumeAttributesClass", spec_class(pvc)) \
            is not None

    async def modify(self, pvc: Resource, pv: Resource) -> bool:
        if CtrlRpc.MODIFY_VOLUME not in await self.controller_rpcs():
            return False
        key = claim_step_key(pvc.namespace, pvc.name)
        uncertain = self._uncertain_claims()
        status = modify_status(pvc)
        if status is None and spec_class(pvc) == current_class(pvc):
            return False
        in_progress = status is not None and status.get("status") == IN_PROGRESS
        if not spec_class(pvc) and not in_progress:
            return await self._rolled_back(pvc)
        if (in_progress and key in uncertain) or not spec_class(pvc):
            # keep to the target a call may still be applying
            target = str((status or {}).get("targetVolumeAttributesClassName") or "")
            return await self._modify_to(pvc, pv, self._target_class(pvc, target))
        vac = self.cache.get("VolumeAttributesClass", spec_class(pvc))
        if vac is None:
            self._class_missing(pvc, spec_class(pvc))
            await self._mark(pvc, PENDING)
            return True
        await self._mark(pvc, IN_PROGRESS)
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal", "VolumeModify",
                   f"external resizer is modifying volume {pvc.name} with vac {vac.name}")
        return await self._modify_to(pvc, pv, vac)

    def _uncertain_claims(self) -> set[str]:
        """Claims InProgress when the sidecar starts count as uncertain (the call may have
        been running when it stopped)."""
        if self._uncertain is None:
            self._uncertain = {
                claim_step_key(c.namespace, c.name)
                for c in self.cache.list("PersistentVolumeClaim")
                if (modify_status(c) or {}).get("status") == IN_PROGRESS}
        return self._uncertain

    def _class_missing(self, pvc: Resource, name: str) -> None:
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                   "VolumeModifyFailed", f'VAC "{name}" does not exist.')

    def _target_class(self, pvc: Resource, name: str) -> Resource:
        vac = self.cache.get("VolumeAttributesClass", name)
        if vac is None:
            self._class_missing(pvc, name)
            raise LookupError(f"get VAC with vac name {name} in VACInformer cache failed")
        return vac

    async def _rolled_back(self, pvc: Resource) -> bool:
        """The class name was removed: a modification not in flight is cancelled."""
        if not any(c.get("type") == MODIFYING for c in pvc.status.get("conditions") or []):
            return False
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal",
                   "VolumeModifyCanceled", "Cancelled modify.")

        def cancel(obj: Resource) -> bool:
            drop_conditions(obj.status, (MODIFYING,))
            return True

        await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace, cancel)
        return True

    async def _mark(self, pvc: Resource, state: str, err: CsiError | None = None) -> None:
        """``modifyVolumeStatus.status`` = ``state``; a new modification targets the claim's
        class; conditions say how it goes (none for Pending)."""
        now = format_time(self.clock.now())

        def mutate(obj: Resource) -> bool:
            status = obj.status.setdefault(MODIFY_STATUS, {})
            status["status"] = state
            if state == PENDING:
                return True
            target = str(status.get("targetVolumeAttributesClassName") or "")
            if err is None:
                target = spec_class(obj)
                status["targetVolumeAttributesClassName"] = target
                message = f'Modifying volume to "{target}" is in progress.'
            elif err.final:
                message = f'Modifying volume to "{target}" failed. Waiting for retry.'
            else:
                message = f'Modifying volume to "{target}" is still in progress.'
            conditions = [{"type": MODIFYING, "status": "True", "lastProbeTime": now,
                           "message": message}]
            if err is not None:
                conditions.append({"type": MODIFY_ERROR, "status": "True",
                                   "reason": go_code_name(err.code), "message": err.message,
                                   "lastProbeTime": now})
            merge_conditions(obj.status, conditions)
            return True

        await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace, mutate)

    async def _modify_to(self, pvc: Resource, pv: Resource, vac: Resource) -> bool:
        key = claim_step_key(pvc.namespace, pvc.name)
        uncertain = self._uncertain_claims()
        try:
            await self._controller_modify(pv, dict(vac.body.get("parameters") or {}))
        except CsiError as err:
            message = f"rpc error: code = {go_code_name(err.code)} desc = {err.message}"
            state = IN_PROGRESS
            if not err.final:
                uncertain.add(key)
                message += f". Still modifying to VAC {vac.name}"
            else:
                uncertain.discard(key)
                if err.code == grpc.StatusCode.INVALID_ARGUMENT:
                    state = INFEASIBLE
            await self._mark(pvc, state, err)
            self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                       "VolumeModifyFailed", message)
            raise
        except LookupError as err:  # its Secret missing: retried until it exists
            self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                       "VolumeModifyFailed", str(err))
            raise
        uncertain.discard(key)

        def pv_class(obj: Resource) -> bool:
            if obj.spec.get(VAC_FIELD) == vac.name:
                return False
            obj.spec[VAC_FIELD] = vac.name
            return True

        # the volume first: a claim never shows a class its volume does not record
        await write_object(self.client, "PersistentVolume", pv.name, "", pv_class)

        def done(obj: Resource) -> bool:
            complete_modification(obj.status, vac.name)
            return True

        await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace, done)
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal",
                   "VolumeModifySuccessful",
                   f"external resizer modified volume {pvc.name} with vac {vac.name} "
                   "successfully")
        return True

    async def _controller_modify(self, pv: Resource, parameters: dict[str, str]) -> None:
        csi = pv.spec.get("csi") or {}
        ann = pv.metadata.annotations
        ref = csi.get("controllerExpandSecretRef")
        if ann.get(ANN_MODIFY_SECRET_NAME) and ann.get(ANN_MODIFY_SECRET_NAMESPACE):
            ref = {"name": ann[ANN_MODIFY_SECRET_NAME],
                   "namespace": ann[ANN_MODIFY_SECRET_NAMESPACE]}
        request = csi_pb2.ControllerModifyVolumeRequest(
            volume_id=str(csi.get("volumeHandle")), secrets=await self.secrets.get(ref),
            mutable_parameters=parameters)
        await self.csi.call(request, csi_pb2.ControllerModifyVolumeResponse)
