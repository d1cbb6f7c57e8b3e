"""Storage object in-use protection (kube-controller-manager's pvc-protection,
pv-protection and vac-protection controllers, with the finalizers the
StorageObjectInUseProtection admission plugin would have added on create).

- A claim carries ``kubernetes.io/pvc-protection``; once it is being deleted the finalizer
  goes only when no pod that has not terminated uses the claim, so a claim deleted under a
  running pod stays Terminating until the pod is gone.
- A volume carries ``kubernetes.io/pv-protection``; once it is being deleted the finalizer
  goes only when it is no longer Bound.
- A VolumeAttributesClass carries ``kubernetes.io/vac-protection``; once it is being deleted
  the finalizer goes only when no volume's ``spec.volumeAttributesClassName`` and no
  claim's class (asked for, current, or the target of a modification) names it.
"""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.client.indexes import POD_CLAIMS, claim_key, pod_claim_keys
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.client.writes import drop_finalizer, write_object
from kubelet_sim.controllers.attach_detach import pod_terminated
from kubelet_sim.controllers.base import (
    Controller,
    claim_step_key,
    claims_and_volumes,
    volume_step_key,
)
from kubelet_sim.controllers.common import add_finalizer

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"
VAC_PROTECTION = "kubernetes.io/vac-protection"


def _class_step_key(name: str) -> str:
    return f"vac/{name}"


def claim_classes(pvc: Resource) -> set[str]:
    """The VolumeAttributesClasses a claim refers to: asked for, current, modifying to."""
    target = (pvc.status.get("modifyVolumeStatus") or {}).get("targetVolumeAttributesClassName")
    names = (pvc.spec.get("volumeAttributesClassName"),
             pvc.status.get("currentVolumeAttributesClassName"), target)
    return {str(n) for n in names if n}


def class_in_use(cache: SharedCache, name: str) -> bool:
    return any(pv.spec.get("volumeAttributesClassName") == name
               for pv in cache.list("PersistentVolume")) or any(
        name in claim_classes(pvc) for pvc in cache.list("PersistentVolumeClaim"))


def claim_in_use(cache: SharedCache, pvc: Resource) -> bool:
    """A pod that has not terminated uses ``pvc`` (read by the cache's claim index)."""
    return any(not pod_terminated(pod) for pod in
               cache.by_index("Pod", POD_CLAIMS, claim_key(pvc.namespace, pvc.name)))


class StorageProtection(Controller):
    name = "storage-protection"
    kinds = ("PersistentVolumeClaim", "PersistentVolume", "Pod", "VolumeAttributesClass")

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("PersistentVolumeClaim"),
                                self.cache.list("PersistentVolume"),
                                self.cache.list("VolumeAttributesClass"))

    def keys_for(self, obj: Resource) -> list[str]:
        """A claim or volume: itself and the classes it names (one being deleted may be
        free now); a class: itself; a pod: the claims it uses."""
        if obj.kind == "PersistentVolumeClaim":
            return [claim_step_key(obj.namespace, obj.name),
                    *map(_class_step_key, sorted(claim_classes(obj)))]
        if obj.kind == "PersistentVolume":
            vac = obj.spec.get("volumeAttributesClassName")
            return [volume_step_key(obj.name), *([_class_step_key(str(vac))] if vac else [])]
        if obj.kind == "VolumeAttributesClass":
            return [_class_step_key(obj.name)]
        return [f"pvc/{key}" for key in pod_claim_keys(obj)]  # a pod: the claims it uses

    async def reconcile_keys(self, keys: set[str]) -> bool:
        classes = [vac for key in sorted(keys) if key.startswith("vac/")
                   if (vac := self.cache.get("VolumeAttributesClass", key[4:])) is not None]
        storage = {key for key in keys if not key.startswith("vac/")}
        return await self._sync(*claims_and_volumes(self.cache, storage), classes)

    async def _sync(self, claims: list[Resource], volumes: list[Resource],
                    classes: list[Resource]) -> bool:
        changed = False
        for pvc in claims:
            changed = await self.step(claim_step_key(pvc.namespace, pvc.name), self._claim,
                                      pvc) or changed
        for pv in volumes:
            changed = await self.step(volume_step_key(pv.name), self._volume, pv) or changed
        for vac in classes:
            changed = await self.step(_class_step_key(vac.name), self._class, vac) or changed
        return changed

    async def _claim(self, pvc: Resource) -> bool:
        if not pvc.is_terminating:
            if PVC_PROTECTION in pvc.metadata.finalizers:
                return False  # the cached claim has it: no write to consider
            return await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                      lambda o: add_finalizer(o, PVC_PROTECTION)) is not None
        if PVC_PROTECTION not in pvc.metadata.finalizers or claim_in_use(self.cache, pvc):
            return False
        return await drop_finalizer(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                    PVC_PROTECTION)

    async def _volume(self, pv: Resource) -> bool:
        if not pv.is_terminating:
            if PV_PROTECTION in pv.metadata.finalizers:
                return False
            return await write_object(self.client, "PersistentVolume", pv.name, "",
                                      lambda o: add_finalizer(o, PV_PROTECTION)) is not None
        if PV_PROTECTION not in pv.metadata.finalizers or pv.status.get("phase") == "Bound":
            return False
        return await drop_finalizer(self.client, "PersistentVolume", pv.name, "", PV_PROTECTION)

    async def _class(self, vac: Resource) -> bool:
        if not vac.is_terminating:
            if VAC_PROTECTION in vac.metadata.finalizers:
                return False
            return await write_object(self.client, "VolumeAttributesClass", vac.name, "",
                                      lambda o: add_finalizer(o, VAC_PROTECTION)) is not None
        if VAC_PROTECTION not in vac.metadata.finalizers or class_in_use(self.cache, vac.name):
            return False
        return await drop_finalizer(self.client, "VolumeAttributesClass", vac.name, "",
                                    VAC_PROTECTION)
