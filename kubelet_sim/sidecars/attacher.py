"""external-attacher for one CSI driver: VolumeAttachments whose ``spec.attacher`` is the
driver.

Attach: the finalizer ``external-attacher/<driver, non [A-Za-z0-9-] replaced by '-'>`` and
the ``csi.alpha.kubernetes.io/node-id`` annotation go on the VolumeAttachment (and the
finalizer on the PV), then ControllerPublishVolume with the node ID from CSINode (or the
node's ``csi.volume.kubernetes.io/nodeid`` annotation), the PV's capability, readonly (when
the driver has PUBLISH_READONLY), volumeAttributes and controller-publish secrets; success
sets ``status.attached`` and ``attachmentMetadata`` (the publish context), failure
``status.attachError``. A driver without PUBLISH_UNPUBLISH_VOLUME is attached trivially
(no call), as the sidecar's trivial handler does.

Detach (the VolumeAttachment is being deleted): ControllerUnpublishVolume, then
``attached: false`` and the finalizer removed (failure: ``status.detachError``). The PV's
finalizer goes once no VolumeAttachment names the PV.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from csi_protos import csi_pb2
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.indexes import VA_PV
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import drop_finalizer, write_object, write_status
from kubelet_sim.controllers.base import volume_step_key
from kubelet_sim.controllers.common import (
    CtrlRpc,
    add_finalizer,
    node_id_for,
    pv_volume_capability,
    set_annotation,
)
from kubelet_sim.csi.client import CsiClient, CsiError
from kubelet_sim.sidecars.base import CsiSidecar

COMPONENT = "external-attacher"
ANN_VA_NODE_ID = "csi.alpha.kubernetes.io/node-id"


def attacher_finalizer(driver: str) -> str:
    name = re.sub(r"[^a-zA-Z0-9-]", "-", driver)
    if name.endswith("-"):
        name += "X"
    return f"external-attacher/{name}"


class ExternalAttacher(CsiSidecar):
    name = COMPONENT
    kinds = ("VolumeAttachment", "PersistentVolume", "CSINode")
    timeout = 15.0  # the sidecar's --timeout default

    def __init__(self, api: APIServer | KubeClient, csi: CsiClient, driver: str,
                 **kwargs: Any) -> None:
        super().__init__(api, csi, driver, **kwargs)
        self.finalizer = attacher_finalizer(driver)

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("VolumeAttachment"),
                                self.cache.list("PersistentVolume"))

    def keys_for(self, obj: Resource) -> list[str] | None:
        """A VolumeAttachment: it and its volume. A volume: it and its attachments. A
        CSINode (a node ID to come) may concern any attachment: a full pass."""
        if obj.kind == "VolumeAttachment":
            source = (obj.spec.get("source") or {}).get("persistentVolumeName")
            return [f"VolumeAttachment/{obj.name}",
                    *([volume_step_key(str(source))] if source else [])]
        if obj.kind == "PersistentVolume":
            return [volume_step_key(obj.name),
                    *(f"VolumeAttachment/{va.name}" for va in
                      self.cache.by_index("VolumeAttachment", VA_PV, obj.name))]
        return None

    async def reconcile_keys(self, keys: set[str]) -> bool:
        attachments: list[Resource] = []
        volumes: list[Resource] = []
        for key in sorted(keys):
            prefix, _, name = key.partition("/")
            obj = self.cache.get("VolumeAttachment" if prefix == "VolumeAttachment"
                                 else "PersistentVolume", name)
            if obj is not None:
                (attachments if obj.kind == "VolumeAttachment" else volumes).append(obj)
        return await self._sync(attachments, volumes)

    async def _sync(self, attachments: list[Resource], volumes: list[Resource]) -> bool:
        # (each attachment about to be published or unpublished is read again first:
        # over a client the cache may not show this attacher's last write yet)
        changed = await self.sync_owned_objects(
            attachments, "attacher", lambda va: va.status.get("attached") is True,
            self._attach, self._detach)
        for pv in volumes:
            if (self.finalizer in pv.metadata.finalizers
                    and not self.cache.by_index("VolumeAttachment", VA_PV, pv.name)):
                changed = await drop_finalizer(self.client, "PersistentVolume", pv.name, "",
                                               self.finalizer) or changed
        return changed

    async def _attach(self, va: Resource) -> bool:
        node_name = str(va.spec.get("nodeName"))
        pv_name = str((va.spec.get("source") or {}).get("persistentVolumeName"))
        try:
            node_id = node_id_for(self.cache, self.driver, node_name)
            pv = self.cache.get("PersistentVolume", pv_name)
            if pv is None:
                raise NotFound("PersistentVolume", pv_name)
            if pv.is_terminating:
                raise RuntimeError(f'PersistentVolume "{pv_name}" is marked for deletion')

            def mark(obj: Resource) -> bool:
                added = add_finalizer(obj, self.finalizer)
                return set_annotation(obj, ANN_VA_NODE_ID, node_id) or added

            await write_object(self.client, "VolumeAttachment", va.name, "", mark)
            await write_object(self.client, "PersistentVolume", pv_name, "",
                               lambda o: add_finalizer(o, self.finalizer))
            rpcs = await self.controller_rpcs()
            metadata: dict[str, str] = {}
            if CtrlRpc.PUBLISH_UNPUBLISH_VOLUME in rpcs:
                metadata = await self._publish(pv, node_id, rpcs)
        except (CsiError, LookupError, NotFound, RuntimeError, ValueError) as err:
            await self._save_error(va.name, "attachError", str(err), grpc_code(err))
            raise

        def attached(obj: Resource) -> bool:
            obj.status["attached"] = True
            obj.status.pop("attachError", None)
            if metadata:
                obj.status["attachmentMetadata"] = metadata
            else:
                obj.status.pop("attachmentMetadata", None)
            return True

        await write_status(self.client, "VolumeAttachment", va.name, "", attached)
        return True

    async def _publish(self, pv: Resource, node_id: str, rpcs: frozenset[int]) -> dict[str, str]:
        csi = pv.spec.get("csi") or {}
        request = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=str(csi.get("volumeHandle")), node_id=node_id,
            volume_capability=pv_volume_capability(
                pv, single_node_multi_writer=CtrlRpc.SINGLE_NODE_MULTI_WRITER in rpcs),
            readonly=bool(csi.get("readOnly")) and CtrlRpc.PUBLISH_READONLY in rpcs,
            secrets=await self.secrets.get(csi.get("controllerPublishSecretRef")),
            volume_context=dict(csi.get("volumeAttributes") or {}))
        response = await self.csi.call(request, csi_pb2.ControllerPublishVolumeResponse)
        return dict(response.publish_context)

    async def _detach(self, va: Resource) -> bool:
        if self.finalizer not in va.metadata.finalizers:
            return False
        pv = self.cache.get("PersistentVolume",
                            str((va.spec.get("source") or {}).get("persistentVolumeName")))
        try:
            rpcs = await self.controller_rpcs()
            if CtrlRpc.PUBLISH_UNPUBLISH_VOLUME in rpcs and pv is not None:
                csi = pv.spec.get("csi") or {}
                node_id = va.metadata.annotations.get(ANN_VA_NODE_ID) or node_id_for(
                    self.cache, self.driver, str(va.spec.get("nodeName")))
                await self.csi.call(
                    csi_pb2.ControllerUnpublishVolumeRequest(
                        volume_id=str(csi.get("volumeHandle")), node_id=node_id,
                        secrets=await self.secrets.get(csi.get("controllerPublishSecretRef"))),
                        csi_pb2.ControllerUnpublishVolumeResponse)
        except (CsiError, LookupError) as err:
            await self._save_error(va.name, "detachError", str(err), grpc_code(err))
            raise

        def detached(obj: Resource) -> bool:
            obj.status["attached"] = False
            obj.status.pop("attachmentMetadata", None)
            obj.status.pop("detachError", None)
            return True

        try:
            await write_status(self.client, "VolumeAttachment", va.name, "", detached)
        except NotFound:
            return True
        await drop_finalizer(self.client, "VolumeAttachment", va.name, "", self.finalizer)
        return True

    async def _save_error(self, va_name: str, field: str, message: str,
                          code: int | None = None) -> None:
        """``code``: the gRPC code of a CSI failure, kept as ``errorCode``
        (MutableCSINodeAllocatableCount, GA in external-attacher): the kubelet refreshes
        the node's allocatable count on ResourceExhausted."""
        error: JSON = {"message": message, "time": format_time(self.clock.now())}
        if code is not None:
            error["errorCode"] = code

        def mutate(obj: Resource) -> bool:
            if {k: v for k, v in (obj.status.get(field) or {}).items() if k != "time"} == {
                    k: v for k, v in error.items() if k != "time"}:
                return False
            obj.status[field] = error
            return True

        with contextlib.suppress(NotFound):
            await write_status(self.client, "VolumeAttachment", va_name, "", mutate)


def grpc_code(err: Exception) -> int | None:
    """The numeric gRPC code of a failed CSI call (None for any other failure)."""
    return int(err.code.value[0]) if isinstance(err, CsiError) else None
