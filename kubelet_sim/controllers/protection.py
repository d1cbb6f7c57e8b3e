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
from kubelet_sim.client.indexes import POD_CLAIMS, claim_key
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.controllers.attach_detach import pod_terminated
from kubelet_sim.controllers.base import Controller
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
        changed = False
        for pvc in self.cache.list("PersistentVolumeClaim"):
            changed = await self.step(f"pvc/{pvc.namespace}/{pvc.name}", self._claim,
                                      pvc) or changed
        for pv in self.cache.list("PersistentVolume"):
            changed = await self.step(f"pv/{pv.name}", self._volume, pv) or changed
        return changed

    async def _claim(self, pvc: Resource) -> bool:
        if not pvc.is_terminating:
            return write_object(self.api, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                lambda o: add_finalizer(o, PVC_PROTECTION)) is not None
        if PVC_PROTECTION not in pvc.metadata.finalizers or claim_in_use(self.cache, pvc):
            return False
        return drop_finalizer(self.api, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                              PVC_PROTECTION)

    async def _volume(self, pv: Resource) -> bool:
        if not pv.is_terminating:
            return write_object(self.api, "PersistentVolume", pv.name, "",
                                lambda o: add_finalizer(o, PV_PROTECTION)) is not None
        if PV_PROTECTION not in pv.metadata.finalizers or pv.status.get("phase") == "Bound":
            return False
        return drop_finalizer(self.api, "PersistentVolume", pv.name, "", PV_PROTECTION)
