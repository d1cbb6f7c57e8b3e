"""The PersistentVolume controller's binding half (kube-controller-manager
``persistentvolume-binder``).

- A claim with a pre-bound or matching volume is bound both ways: the PV's ``claimRef``, the
  claim's ``spec.volumeName`` with ``pv.kubernetes.io/bind-completed`` and
  ``pv.kubernetes.io/bound-by-controller``, both phases ``Bound``, the claim's
  ``status.capacity``/``accessModes`` copied from the volume.
- A matching volume is the smallest Available one of the same class, access modes and
  volume mode with enough capacity (and, for WaitForFirstConsumer claims, node affinity
  that admits the selected node).
- With no match, a claim of a class with a provisioner is handed to that provisioner by
  annotating ``volume.kubernetes.io/storage-provisioner`` (and the beta key): at once for
  ``Immediate`` classes, after the scheduler's ``volume.kubernetes.io/selected-node`` for
  ``WaitForFirstConsumer`` ones.
- A volume whose claim is gone is ``Released`` (the external provisioner deletes it when
  the reclaim policy says Delete; Retain keeps it Released).
"""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.default_storage_class import default_class, set_default_class
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.selectors import node_selector_matches
from kubelet_sim.client.events import NORMAL, WARNING
from kubelet_sim.client.indexes import PV_CLAIM, claim_key
from kubelet_sim.client.writes import write_object, write_status
from kubelet_sim.controllers.base import (
    Controller,
    claim_ref_keys,
    claim_step_key,
    claims_and_volumes,
    volume_step_key,
)
from kubelet_sim.controllers.common import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    pvc_request_bytes,
    set_annotation,
    storage_bytes,
)

NO_PROVISIONER = "kubernetes.io/no-provisioner"


def claim_ref(pvc: Resource) -> JSON:
    return {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
            "namespace": pvc.namespace, "name": pvc.name, "uid": pvc.metadata.uid,
            "resourceVersion": pvc.metadata.resource_version}


def claim_class(pvc: Resource) -> str:
    return str(pvc.spec.get("storageClassName") or "")


def volume_admits_node(pv: Resource, node: Resource) -> bool:
    """The PV's ``nodeAffinity.required`` admits ``node`` (no affinity admits every node)."""
    required = (pv.spec.get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    return node_selector_matches(required.get("nodeSelectorTerms") or [], node.labels,
                                 {"metadata.name": node.name})


class VolumeBinder(Controller):
    name = "persistentvolume-binder"
    kinds = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")

    async def reconcile(self) -> bool:
        return await self._sync(self.cache.list("PersistentVolumeClaim"),
                                self.cache.list("PersistentVolume"))

    def keys_for(self, obj: Resource) -> list[str] | None:
        """A claim: it, the volume it names and those whose claimRef names it. A volume:
        it and its claim; an unclaimed one may match any unbound claim, and a storage
        class any claim of the class: those ask for a full pass."""
        if obj.kind == "PersistentVolumeClaim":
            keys = [claim_step_key(obj.namespace, obj.name)]
            if obj.spec.get("volumeName"):
                keys.append(volume_step_key(str(obj.spec["volumeName"])))
            keys += [volume_step_key(pv.name) for pv in self.cache.by_index(
                "PersistentVolume", PV_CLAIM, claim_key(obj.namespace, obj.name))]
            return keys
        if obj.kind == "PersistentVolume":
            claim = claim_ref_keys(obj)
            return [volume_step_key(obj.name), *claim] if claim else None
        return None

    async def reconcile_keys(self, keys: set[str]) -> bool:
        return await self._sync(*claims_and_volumes(self.cache, keys))

    async def _sync(self, claims: list[Resource], volumes: list[Resource]) -> bool:
        changed = False
        for pv in volumes:  # volumes first, then claims
            changed = await self.step(volume_step_key(pv.name), self._sync_volume, pv) \
                or changed
        for pvc in claims:
            key = claim_step_key(pvc.namespace, pvc.name)
            changed = await self.step(key, self._sync_claim, pvc) or changed
        return changed

    # -- volumes ----------------------------------------------------------------------------

    async def _sync_volume(self, pv: Resource) -> bool:
        ref = pv.spec.get("claimRef")
        if not ref:
            return await self._set_pv_phase(pv, "Available")
        pvc = self.cache.get("PersistentVolumeClaim", ref.get("name", ""),
                             ref.get("namespace", ""))
        if pvc is None or (ref.get("uid") and ref["uid"] != pvc.metadata.uid):
            if pv.status.get("phase") in ("Released", "Failed"):
                return False
            if pv.status.get("phase") == "Bound" or ref.get("uid"):
                return await self._set_pv_phase(pv, "Released")
            return await self._set_pv_phase(pv, "Available")  # pre-bound to a claim to come
        if pvc.spec.get("volumeName") == pv.name:
            return await self._set_pv_phase(pv, "Bound")
        return False

    async def _set_pv_phase(self, pv: Resource, phase: str) -> bool:
        if pv.status.get("phase") == phase:
            return False

        def mutate(obj: Resource) -> bool:
            if obj.status.get("phase") == phase:
                return False
            obj.status["phase"] = phase
            return True

        return await write_status(self.client, "PersistentVolume", pv.name, "", mutate) is not None

    # -- claims -----------------------------------------------------------------------------

    async def _sync_claim(self, pvc: Resource) -> bool:
        if pvc.is_terminating:
            return False
        changed = False
        if not pvc.status.get("phase"):
            changed = await self._claim_status(pvc, _phase("Pending"))
        if ANN_BIND_COMPLETED not in pvc.metadata.annotations \
                and await self._assign_default_class(pvc):
            return True  # the claim's next sync goes on with its class
        volume_name = pvc.spec.get("volumeName")
        if volume_name:
            pv = self.cache.get("PersistentVolume", volume_name)
            if pv is None:
                return await self._claim_status(pvc, _phase("Lost")) or changed
            ref = pv.spec.get("claimRef") or {}
            if not ref:
                await self._bind_volume(pv, pvc)
                pv = self.cache.get("PersistentVolume", volume_name) or pv
            elif ref.get("uid") and ref["uid"] != pvc.metadata.uid:
                return changed  # the volume belongs to another claim
            return await self._complete_claim(pvc, pv) or changed
        pv = self._prebound_or_matching(pvc)
        if pv is not None:
            if not (pv.spec.get("claimRef") or {}).get("uid"):
                await self._bind_volume(pv, pvc)
            return await self._complete_claim(pvc, self.cache.get("PersistentVolume", pv.name)
                                              or pv) or True
        return await self._hand_to_provisioner(pvc) or changed

    async def _assign_default_class(self, pvc: Resource) -> bool:
        """The PV controller's retroactive default: an unbound claim that names no class
        gets the default one's once there is one."""
        if pvc.spec.get("storageClassName") is not None:
            return False
        chosen = default_class(self.cache.list("StorageClass"))
        if chosen is None:
            return False

        def mutate(obj: Resource) -> bool:
            return set_default_class(obj, [chosen])

        return await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                  mutate) is not None

    async def _claim_status(self, pvc: Resource, edit: Callable[[JSON], None]) -> bool:
        def mutate(obj: Resource) -> bool:
            before = dict(obj.status)
            edit(obj.status)
            return obj.status != before

        return await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                  mutate) is not None

    def _prebound_or_matching(self, pvc: Resource) -> Resource | None:
        sc = self.cache.get("StorageClass", claim_class(pvc)) if claim_class(pvc) else None
        wait_for_consumer = sc is not None and sc.body.get("volumeBindingMode") == \
            "WaitForFirstConsumer"
        selected = pvc.metadata.annotations.get(ANN_SELECTED_NODE)
        node = self.cache.get("Node", selected) if selected else None
        request = pvc_request_bytes(pvc)
        modes = set(pvc.spec.get("accessModes") or [])
        candidates: list[tuple[int, str, Resource]] = []
        for pv in self.cache.by_index("PersistentVolume", PV_CLAIM,
                                      claim_key(pvc.namespace, pvc.name)):
            ref = pv.spec.get("claimRef") or {}
            if not (ref.get("uid") and ref["uid"] != pvc.metadata.uid):
                return pv  # pre-bound to this claim
        for pv in self.cache.by_index("PersistentVolume", PV_CLAIM, ""):  # unclaimed ones
            if pv.is_terminating or pv.status.get("phase") not in (None, "Available", "Pending"):
                continue
            if str(pv.spec.get("storageClassName") or "") != claim_class(pvc):
                continue
            if not modes <= set(pv.spec.get("accessModes") or []):
                continue
            if pv.spec.get("volumeMode", "Filesystem") != pvc.spec.get("volumeMode",
                                                                        "Filesystem"):
                continue
            size = storage_bytes(pv.spec.get("capacity"))
            if size < request:
                continue
            if wait_for_consumer and (node is None or not volume_admits_node(pv, node)):
                continue
            candidates.append((size, pv.name, pv))
        return min(candidates, key=lambda c: c[:2])[2] if candidates else None

    async def _bind_volume(self, pv: Resource, pvc: Resource) -> None:
        def mutate(obj: Resource) -> bool:
            if (obj.spec.get("claimRef") or {}).get("uid") == pvc.metadata.uid:
                return False  # bound already (a cache fed over the wire may lag behind)
            obj.spec["claimRef"] = claim_ref(pvc)
            set_annotation(obj, ANN_BOUND_BY_CONTROLLER, "yes")
            return True

        await write_object(self.client, "PersistentVolume", pv.name, "", mutate)

    async def _complete_claim(self, pvc: Resource, pv: Resource) -> bool:
        if _claim_complete(pvc, pv):
            return False  # the cached objects say so: no write to consider
        def bind(obj: Resource) -> bool:
            changed = False
            if obj.spec.get("volumeName") != pv.name:
                obj.spec["volumeName"] = pv.name
                changed = set_annotation(obj, ANN_BOUND_BY_CONTROLLER, "yes") or True
            return set_annotation(obj, ANN_BIND_COMPLETED, "yes") or changed

        changed = await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                     bind) is not None
        changed = await self._set_pv_phase(pv, "Bound") or changed

        def status(obj: Resource) -> bool:
            want = {"phase": "Bound", "accessModes": list(pv.spec.get("accessModes") or []),
                    "capacity": dict(pv.spec.get("capacity") or {})}
            current = {k: obj.status.get(k) for k in want}
            if current["capacity"] and obj.status.get("phase") == "Bound":
                want["capacity"] = current["capacity"]  # the resizer owns it after binding
            if current == want:
                return False
            vac = pv.spec.get("volumeAttributesClassName")
            if obj.status.get("phase") != "Bound" and vac:
                # the volume's class is in effect from binding on; later the resizer's
                obj.status["currentVolumeAttributesClassName"] = vac
            obj.status.update(want)
            return True

        return await write_status(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                  status) is not None or changed

    async def _hand_to_provisioner(self, pvc: Resource) -> bool:
        """No volume matched: the events say why the claim waits, as the PV controller's."""
        if not claim_class(pvc):
            self._claim_event(pvc, NORMAL, "FailedBinding", "no persistent volumes available "
                              "for this claim and no storage class is set")
            return False
        sc = self.cache.get("StorageClass", claim_class(pvc))
        if sc is None:
            self._claim_event(pvc, WARNING, "ProvisioningFailed",
                              f'storageclass.storage.k8s.io "{claim_class(pvc)}" not found')
            return False
        provisioner = str(sc.body.get("provisioner") or "")
        waits = sc.body.get("volumeBindingMode") == "WaitForFirstConsumer"
        if waits and not pvc.metadata.annotations.get(ANN_SELECTED_NODE):
            self._claim_event(pvc, NORMAL, "WaitForFirstConsumer",
                              "waiting for first consumer to be created before binding")
            return False
        if not provisioner or provisioner == NO_PROVISIONER:
            return False

        ann = pvc.metadata.annotations
        if (ann.get(ANN_STORAGE_PROVISIONER), ann.get(ANN_BETA_STORAGE_PROVISIONER)) == \
                (provisioner, provisioner):
            return False

        def mutate(obj: Resource) -> bool:
            a = set_annotation(obj, ANN_STORAGE_PROVISIONER, provisioner)
            return set_annotation(obj, ANN_BETA_STORAGE_PROVISIONER, provisioner) or a

        return await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                                  mutate) is not None


    def _claim_event(self, pvc: Resource, event_type: str, reason: str, message: str) -> None:
        self.event("PersistentVolumeClaim", pvc.namespace, pvc.name, event_type, reason, message)


def _claim_complete(pvc: Resource, pv: Resource) -> bool:
    """What ``_complete_claim`` would write is there already: the claim names the volume
    with bind-completed, its status is Bound with the volume's access modes and a
    capacity (the resizer's once bound), and the volume is Bound."""
    return (pvc.spec.get("volumeName") == pv.name
            and pvc.metadata.annotations.get(ANN_BIND_COMPLETED) == "yes"
            and pvc.status.get("phase") == "Bound"
            and pvc.status.get("accessModes") == list(pv.spec.get("accessModes") or [])
            and bool(pvc.status.get("capacity"))
            and pv.status.get("phase") == "Bound")


def _phase(phase: str) -> Callable[[JSON], None]:
    def edit(status: JSON) -> None:
        status["phase"] = phase
    return edit
