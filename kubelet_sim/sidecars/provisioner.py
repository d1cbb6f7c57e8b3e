"""external-provisioner for one CSI driver.

Provision: a claim handed to this driver (``volume.kubernetes.io/storage-provisioner``; for
WaitForFirstConsumer classes only once ``volume.kubernetes.io/selected-node`` is set) gets
CreateVolume named ``pvc-<claim UID>`` with the class's parameters minus the known
``csi.storage.k8s.io/`` keys (any other key with that prefix fails the claim before a call
is made), ``required_bytes`` from the request, one capability per access mode, the
provisioner secrets, accessibility requirements (when the plugin has
VOLUME_ACCESSIBILITY_CONSTRAINTS), the data source and, for a claim naming a
VolumeAttributesClass, the class's parameters as ``mutable_parameters`` (the driver must
have MODIFY_VOLUME and the class must name this driver; a class that does not exist yet is
a failure retried until it does); then the PV (the binder binds it), with the class name.
Failures are ``ProvisioningFailed`` events and are retried with backoff; RESOURCE_EXHAUSTED
for a claim with a selected node drops ``selected-node`` so the pod is scheduled again.

Delete: a ``Released`` PV it provisioned with reclaim policy Delete, once no
VolumeAttachment names it, gets DeleteVolume, then the PV object is deleted and the
provisioner's finalizer dropped. Retain keeps the volume.
"""

from __future__ import annotations

import random
import time
from typing import Any

import grpc

from csi_protos import csi_pb2
from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.indexes import PV_CLAIM, VA_PV, claim_key
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import drop_finalizer, get_or_none, write_object
from kubelet_sim.controllers.base import (
    claim_ref_keys,
    claim_step_key,
    claims_and_volumes,
    volume_step_key,
)
from kubelet_sim.controllers.common import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    PROVISIONER_FINALIZER,
    CtrlRpc,
    add_finalizer,
    pvc_request_bytes,
)
from kubelet_sim.csi.client import CsiClient, CsiError
from kubelet_sim.sidecars.base import CsiSidecar
from kubelet_sim.sidecars.provision_request import (
    ANN_DELETION_SECRET_NAME,
    ANN_DELETION_SECRET_NAMESPACE,
    ProvisionedVolume,
    ProvisioningError,
    accessibility_requirements,
    content_source,
    persistent_volume,
    volume_capabilities,
)
from kubelet_sim.sidecars.secrets import (
    CONTROLLER_MODIFY,
    FAMILIES,
    FSTYPE_KEY,
    PROVISIONER,
    ParameterError,
    secret_reference,
    strip_prefixed_parameters,
)

COMPONENT = "external-provisioner"
CLONE_FINALIZER = "provisioner.storage.kubernetes.io/cloning-protection"


class ExternalProvisioner(CsiSidecar):
    name = COMPONENT
    kinds = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass", "VolumeAttachment",
             "VolumeSnapshot", "VolumeSnapshotContent", "CSINode", "VolumeAttributesClass")
    timeout = 10.0  # the sidecar's --timeout default

    def __init__(self, api: APIServer | KubeClient, csi: CsiClient, driver: str, *,
                 default_fs_type: str = "",
                 strict_topology: bool = False, extra_create_metadata: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(api, csi, driver, **kwargs)
        self.default_fs_type = default_fs_type
        self.strict_topology = strict_topology
        self.extra_create_metadata = extra_create_metadata
        self.identity = f"{int(time.time() * 1000)}-{random.randint(1000, 9999)}-{driver}"
        self._plugin_services: frozenset[int] | None = None
        # PVs this provisioner created that its cache does not show yet (over a client
        # the watch brings them a moment later): a claim event meanwhile is not
        # provisioned twice
        self._created_unseen: set[str] = set()

    async def _capabilities(self) -> tuple[frozenset[int], frozenset[int]]:
        """The plugin's services (asked once), then its controller RPCs (the base's cache)."""
        if self._plugin_services is None:
            plugin = await self.csi.call(
                csi_pb2.GetPluginCapabilitiesRequest(),
                csi_pb2.GetPluginCapabilitiesResponse)
            self._plugin_services = frozenset(
                c.service.type for c in plugin.capabilities if c.HasField("service"))
        return self._plugin_services, await self.controller_rpcs()

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("PersistentVolumeClaim"),
                                self.cache.list("PersistentVolume"))

    def keys_for(self, obj: Resource) -> list[str] | None:
        """A claim: it and the volumes bound to it. A volume: it and its claim. A
        VolumeAttachment: its volume (DeleteVolume waits for it to go). Classes (storage
        or volume attributes), snapshots and nodes may concern any claim: a full pass."""
        if obj.kind == "PersistentVolumeClaim":
            return [claim_step_key(obj.namespace, obj.name),
                    *(volume_step_key(pv.name) for pv in self.cache.by_index(
                        "PersistentVolume", PV_CLAIM, claim_key(obj.namespace, obj.name)))]
        if obj.kind == "PersistentVolume":
            return [volume_step_key(obj.name), *claim_ref_keys(obj)]
        if obj.kind == "VolumeAttachment":
            source = (obj.spec.get("source") or {}).get("persistentVolumeName")
            return [volume_step_key(str(source))] if source else []
        return None

    async def reconcile_keys(self, keys: set[str]) -> bool:
        return await self._sync(*claims_and_volumes(self.cache, keys))

    async def _sync(self, claims: list[Resource], volumes: list[Resource]) -> bool:
        changed = False
        self._created_unseen = {name for name in self._created_unseen
                                if self.cache.get("PersistentVolume", name) is None}
        for pvc in claims:
            if self._wants_provisioning(pvc):
                key = claim_step_key(pvc.namespace, pvc.name)
                changed = await self.step(key, self._provision, pvc) or changed
        for pv in volumes:
            if pv.metadata.annotations.get(ANN_PROVISIONED_BY) == self.driver:
                changed = await self.step(volume_step_key(pv.name), self._reclaim, pv) \
                    or changed
        return changed

    def _wants_provisioning(self, pvc: Resource) -> bool:
        ann = pvc.metadata.annotations
        handed = ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)
        return (handed == self.driver and not pvc.spec.get("volumeName")
                and not pvc.is_terminating)

    # -- provision --------------------------------------------------------------------------

    async def _provision(self, pvc: Resource) -> bool:
        sc = self.cache.get("StorageClass", str(pvc.spec.get("storageClassName") or ""))
        if sc is None or sc.body.get("provisioner") != self.driver:
            return False
        selected_name = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        if sc.body.get("volumeBindingMode") == "WaitForFirstConsumer" and not selected_name:
            return False
        pv_name = f"pvc-{pvc.metadata.uid}"
        if self.cache.get("PersistentVolume", pv_name) is not None:
            self._created_unseen.discard(pv_name)
            return False  # provisioned already; the binder finishes the binding
        if pv_name in self._created_unseen:
            return False  # created by us, not in the cache yet
        try:
            request, spec = await self._create_request(pvc, sc, pv_name, selected_name)
        except (ParameterError, ProvisioningError, LookupError) as err:
            self._failed(pvc, sc, str(err))
            raise
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal", "Provisioning",
                   f'External provisioner is provisioning volume for claim '
                   f'"{pvc.namespace}/{pvc.name}"')
        clone_source = await self._protect_clone_source(pvc, request)
        try:
            response = await self.csi.call(request, csi_pb2.CreateVolumeResponse)
        except CsiError as err:
            self._failed(pvc, sc, f"rpc error: code = {err.code.name} desc = {err.message}")
            if err.code == grpc.StatusCode.RESOURCE_EXHAUSTED and selected_name and \
                    request.HasField("accessibility_requirements"):
                await self._reschedule(pvc)
            if err.final and clone_source:
                await drop_finalizer(self.client, "PersistentVolumeClaim", clone_source,
                                     pvc.namespace, CLONE_FINALIZER)
            raise
        pv = persistent_volume(spec, pvc, sc, response.volume, request.capacity_range
                               .required_bytes)
        try:
            await self.client.create(pv)
        except AlreadyExists:
            self._created_unseen.add(pv_name)
            return False
        finally:
            if clone_source:
                await drop_finalizer(self.client, "PersistentVolumeClaim", clone_source,
                                     pvc.namespace, CLONE_FINALIZER)
        self._created_unseen.add(pv_name)
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Normal",
                   "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}")
        return True

    async def _protect_clone_source(self, pvc: Resource,
                                    request: csi_pb2.CreateVolumeRequest) -> str:
        """A clone's source claim carries ``cloning-protection`` while CreateVolume runs."""
        if not request.volume_content_source.HasField("volume"):
            return ""
        source = str((pvc.spec.get("dataSource") or pvc.spec.get("dataSourceRef") or {})
                     .get("name"))
        await write_object(self.client, "PersistentVolumeClaim", source, pvc.namespace,
                           lambda o: add_finalizer(o, CLONE_FINALIZER))
        return source

    async def _reschedule(self, pvc: Resource) -> None:
        """No room in the selected node's topology: drop ``selected-node`` so the scheduler
        picks a node again (the provisioner library's ProvisioningReschedule)."""
        def unselect(obj: Resource) -> bool:
            return obj.metadata.annotations.pop(ANN_SELECTED_NODE, None) is not None

        await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace, unselect)

    def _failed(self, pvc: Resource, sc: Resource, message: str) -> None:
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, "Warning",
                   "ProvisioningFailed",
                   f'failed to provision volume with StorageClass "{sc.name}": {message}')

    async def _create_request(
        self, pvc: Resource, sc: Resource, pv_name: str, selected_name: str | None,
    ) -> tuple[csi_pb2.CreateVolumeRequest, ProvisionedVolume]:
        raw = dict(sc.body.get("parameters") or {})
        parameters = strip_prefixed_parameters(raw)
        if self.extra_create_metadata:  # the sidecar's --extra-create-metadata
            parameters.update({"csi.storage.k8s.io/pvc/name": pvc.name,
                               "csi.storage.k8s.io/pvc/namespace": pvc.namespace,
                               "csi.storage.k8s.io/pv/name": pv_name})
        services, rpcs = await self._capabilities()
        fs_type = raw.get(FSTYPE_KEY) or self.default_fs_type
        refs = {}
        modify_secret = None
        for family in FAMILIES:
            ref = secret_reference(family, raw, pv_name, pvc.name, pvc.namespace,
                                   None if family is PROVISIONER else
                                   pvc.metadata.annotations)
            if ref is not None and family.pv_field:
                refs[family.pv_field] = ref
            if family is CONTROLLER_MODIFY:
                modify_secret = ref
        provisioner_ref = secret_reference(PROVISIONER, raw, pv_name, pvc.name, pvc.namespace)
        request = csi_pb2.CreateVolumeRequest(
            name=pv_name, parameters=parameters,
            volume_capabilities=volume_capabilities(
                pvc, fs_type, list(sc.body.get("mountOptions") or []),
                single_node_multi_writer=CtrlRpc.SINGLE_NODE_MULTI_WRITER in rpcs),
            secrets=await self.secrets.get(provisioner_ref))
        request.capacity_range.required_bytes = pvc_request_bytes(pvc)
        vac_name = str(pvc.spec.get("volumeAttributesClassName") or "")
        if vac_name:
            request.mutable_parameters.update(self._mutable_parameters(vac_name, rpcs))
        source = await content_source(self.client, self.driver, pvc, sc)
        if source is not None:
            request.volume_content_source.CopyFrom(source)
        Service = csi_pb2.PluginCapability.Service
        if Service.VOLUME_ACCESSIBILITY_CONSTRAINTS in services:
            node = None
            if selected_name:
                node = self.cache.get("Node", selected_name)
                if node is None:
                    raise ProvisioningError(f"failed to get target node: node "
                                            f"{selected_name!r} not found")
            topology = accessibility_requirements(self.cache, self.driver, pvc, sc, node,
                                                  strict_topology=self.strict_topology)
            if topology is not None:
                request.accessibility_requirements.CopyFrom(topology)
        spec = ProvisionedVolume(pv_name=pv_name, driver=self.driver, fs_type=fs_type,
                                 identity=self.identity, secret_refs=refs,
                                 deletion_secret=provisioner_ref, modify_secret=modify_secret,
                                 attributes_class=vac_name)
        return request, spec

    def _mutable_parameters(self, vac_name: str, rpcs: frozenset[int]) -> dict[str, str]:
        """The parameters of the claim's VolumeAttributesClass, which must exist and name
        this driver, for a driver that can modify volumes."""
        if CtrlRpc.MODIFY_VOLUME not in rpcs:
            raise ProvisioningError("CSI driver does not support VolumeAttributesClass: "
                                    "controller MODIFY_VOLUME capability is not reported")
        vac = self.cache.get("VolumeAttributesClass", vac_name)
        if vac is None:
            raise ProvisioningError(
                f'volumeattributesclasses.storage.k8s.io "{vac_name}" not found')
        driver = vac.body.get("driverName")
        if driver != self.driver:
            raise ProvisioningError(f"VAC {vac_name} referenced in PVC is for driver {driver} "
                                    f"which does not match driver name {self.driver}")
        return dict(vac.body.get("parameters") or {})

    # -- delete -----------------------------------------------------------------------------

    async def _reclaim(self, pv: Resource) -> bool:
        policy = pv.spec.get("persistentVolumeReclaimPolicy", "Retain")
        released = pv.status.get("phase") == "Released"
        if policy != "Delete":
            if pv.is_terminating:  # Retain: the volume stays, the object may go
                return await drop_finalizer(self.client, "PersistentVolume", pv.name, "",
                                            PROVISIONER_FINALIZER)
            return False
        if not released and not pv.is_terminating:
            return False
        if not released and pv.spec.get("claimRef") and self._claim_exists(pv):
            return False  # deleted by hand while bound: wait until released
        if PROVISIONER_FINALIZER not in pv.metadata.finalizers and pv.is_terminating:
            return False
        if self._attached(pv):
            return False  # DeleteVolume only once no VolumeAttachment names the PV
        live = await get_or_none(self.client, "PersistentVolume", pv.name)
        if live is None:
            return False  # deleted meanwhile (the cache is behind our own delete)
        if live.metadata.resource_version != pv.metadata.resource_version:
            return await self._reclaim(live)  # decide on the object as it is now
        await self._delete_volume(pv)
        if not pv.is_terminating:
            try:
                await self.client.delete("PersistentVolume", pv.name)
            except NotFound:
                return True
        await drop_finalizer(self.client, "PersistentVolume", pv.name, "", PROVISIONER_FINALIZER)
        return True

    def _claim_exists(self, pv: Resource) -> bool:
        ref = pv.spec.get("claimRef") or {}
        pvc = self.cache.get("PersistentVolumeClaim", ref.get("name", ""),
                             ref.get("namespace", ""))
        return pvc is not None and pvc.metadata.uid == ref.get("uid", pvc.metadata.uid)

    def _attached(self, pv: Resource) -> bool:
        return bool(self.cache.by_index("VolumeAttachment", VA_PV, pv.name))

    async def _delete_volume(self, pv: Resource) -> None:
        ann = pv.metadata.annotations
        ref = None
        if ann.get(ANN_DELETION_SECRET_NAME):
            ref = {"name": ann[ANN_DELETION_SECRET_NAME],
                   "namespace": ann.get(ANN_DELETION_SECRET_NAMESPACE, "")}
        try:
            request = csi_pb2.DeleteVolumeRequest(
                volume_id=str((pv.spec.get("csi") or {}).get("volumeHandle")),
                secrets=await self.secrets.get(ref))
            await self.csi.call(request, csi_pb2.DeleteVolumeResponse)
        except CsiError as err:
            self.event("PersistentVolume", "", pv.name, "Warning", "VolumeFailedDelete",
                       f"rpc error: code = {err.code.name} desc = {err.message}")
            raise
        except LookupError as err:  # its Secret missing: retried until it exists
            self.event("PersistentVolume", "", pv.name, "Warning", "VolumeFailedDelete",
                       str(err))
            raise
