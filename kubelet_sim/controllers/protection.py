"""Storage object in-use protection (kube-controller-manager's pvc-protection and
pv-protection controllers, with the finalizers the StorageObjectInUseProtection admission
plugin would have added on create).

- A claim carries ``kubernetes.io/pvc-protection``; once it is being deleted the finalizer
  goes only when no pod that has not terminated uses the claim, so a claim deleted under a
  running pod stays Terminating until the pod is gone.
- A volume carries ``kubernetes.io/pv-protection``; once it is being deleted the finalizer
  goes only when it is no longer Bound.
"""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.client.indexes import POD_CLAIMS, claim_key, pod_claim_keys
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.controllers.attach_detach import pod_terminated
from kubelet_sim.controllers.base import (
    Controller,
    claim_step_key,
    claims_and_volumes,
    volume_step_key,
)
from kubelet_sim.controllers.common import add_finalizer, drop_finalizer, write_object

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def claim_in_use(cache: SharedCache, pvc: Resource) -> bool:
    """A pod that has not terminated uses ``pvc`` (read by the cache's claim index)."""
    return any(not pod_terminated(pod) for pod in
               cache.by_index("Pod", POD_CLAIMS, claim_key(pvc.namespace, pvc.name)))


class StorageProtection(Controller):
    name = "storage-protection"
    kinds = ("PersistentVolumeClaim", "PersistentVolume", "Pod")

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("PersistentVolumeClaim"),
                                self.cache.list("PersistentVolume"))

    def keys_for(self, obj: Resource) -> list[str]:
        if obj.kind == "PersistentVolumeClaim":
            return [claim_step_key(obj.namespace, obj.name)]
        if obj.kind == "PersistentVolume":
            return [volume_step_key(obj.name)]
        return [f"pvc/{key}" for key in pod_claim_keys(obj)]  # a pod: the claims it uses

    async def reconcile_keys(self, keys: set[str]) -> bool:
        return await self._sync(*claims_and_volumes(self.cache, keys))

    async def _sync(self, claims: list[Resource], volumes: list[Resource]) -> bool:
        changed = False
        for pvc in claims:
            changed = await self.step(claim_step_key(pvc.namespace, pvc.name), self._claim,
                                      pvc) or changed
        for pv in volumes:
            changed = await self.step(volume_step_key(pv.name), self._volume, pv) or changed
        return changed

    async def _claim(self, pvc: Resource) -> bool:
        if not pvc.is_terminating:
            if PVC_PROTECTION in pvc.metadata.finalizers:
                return False  # the cached claim has it: no write to consider
            return write_object(self.api, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                lambda o: add_finalizer(o, PVC_PROTECTION)) is not None
        if PVC_PROTECTION not in pvc.metadata.finalizers or claim_in_use(self.cache, pvc):
            return False
        return drop_finalizer(self.api, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                              PVC_PROTECTION)

    async def _volume(self, pv: Resource) -> bool:
        if not pv.is_terminating:
            if PV_PROTECTION in pv.metadata.finalizers:
                return False
            return write_object(self.api, "PersistentVolume", pv.name, "",
                                lambda o: add_finalizer(o, PV_PROTECTION)) is not None
        if PV_PROTECTION not in pv.metadata.finalizers or pv.status.get("phase") == "Bound":
            return False
        return drop_finalizer(self.api, "PersistentVolume", pv.name, "", PV_PROTECTION)
