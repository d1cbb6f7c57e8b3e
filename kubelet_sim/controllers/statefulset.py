"""kube-controller-manager's StatefulSet controller.

* Stable identities: pod ``<set>-<ordinal>`` (labels ``statefulset.kubernetes.io/pod-name``,
  ``apps.kubernetes.io/pod-index``, ``controller-revision-hash``; ``hostname`` and
  ``subdomain`` from ``serviceName``) for ordinals ``start .. start+replicas-1``.
* One claim per ordinal and ``volumeClaimTemplates`` entry, ``<template>-<set>-<ordinal>``,
  made before its pod and mounted in place of the template's volume; the provisioner and
  binder take it from there. Scaling down leaves the claims; scaling up finds them again.
  ``persistentVolumeClaimRetentionPolicy``: ``whenDeleted: Delete`` gives each claim an
  owner reference to the set (the garbage collector deletes them with it), ``whenScaled:
  Delete`` one to the pod of an ordinal that scaling removes (the claim goes with it).
* ``OrderedReady``: one pod at a time, the next only once all before it are Running,
  Ready and available (``minReadySeconds``); scale down from the highest ordinal, one at
  a time. ``Parallel``: all at once. Moving ``ordinals.start`` makes the new range's pods
  first, then removes those left outside it, highest first.
* Rolling update by ordinal, highest first, down to ``partition`` (a position counted
  from the start ordinal): while fewer than ``maxUnavailable`` (default 1, v1.35's
  MaxUnavailableStatefulSet being on) of the set's pods are unavailable, that many pods at
  an old revision are deleted, and come back at the new one. ControllerRevisions keep the
  templates (``currentRevision``, ``updateRevision``).
"""

from __future__ import annotations

import copy

from kubelet_sim.api.errors import AlreadyExists, NotFound, ObjectForbidden
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.client.writes import replace_status, write_object
from kubelet_sim.controllers.deployment import resolve
from kubelet_sim.controllers.revisions import (
    REVISION_HASH_LABEL,
    owned_revisions,
    prune,
    update_revision,
)
from kubelet_sim.controllers.workload_pods import (
    claim,
    controller_ref,
    is_available,
    is_ready,
    is_terminal,
    owned_by,
    pod_from_template,
    selector_of,
)
from kubelet_sim.controllers.workload_queue import WorkloadController

COMPONENT = "statefulset-controller"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(set_name: str, pod_name: str) -> int | None:
    prefix, _, number = pod_name.rpartition("-")
    return int(number) if prefix == set_name and number.isdigit() else None


def claim_name(template: str, set_name: str, ordinal: int) -> str:
    return f"{template}-{set_name}-{ordinal}"


def _healthy(pod: Resource) -> bool:
    return (pod.status.get("phase") == "Running" and is_ready(pod)
            and not pod.metadata.deletion_timestamp)


def max_unavailable(sts: Resource) -> int:
    """getStatefulSetMaxUnavailable: ``maxUnavailable`` (default 1) of ``replicas``, a
    percentage rounded down, at least 1."""
    rolling = (sts.spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    replicas = int(sts.spec.get("replicas", 1))
    return max(1, resolve(rolling.get("maxUnavailable", 1), replicas, round_up=False))


class StatefulSetController(WorkloadController):
    name = COMPONENT
    kinds = ("StatefulSet", "Pod", "ControllerRevision")
    workload_kind, prefix = "StatefulSet", "sts"
    adopts = ("Pod", "ControllerRevision")

    def _settled(self, sts: Resource, pod: Resource) -> bool:
        """Running, Ready and available for ``minReadySeconds``: what OrderedReady waits
        for before the next ordinal."""
        return _healthy(pod) and is_available(
            pod, int(sts.spec.get("minReadySeconds") or 0), self.clock.now())

    async def sync(self, sts: Resource) -> bool:
        if sts.metadata.deletion_timestamp:
            return False
        revisions = await owned_revisions(self.client, self.cache, sts)
        update = await update_revision(self.client, sts, revisions)
        revisions = await owned_revisions(self.client, self.cache, sts)
        pods = await claim(self.client, sts, self.cache.list("Pod", sts.namespace),
                           selector_of(sts))
        by_ordinal = {o: p for p in pods if (o := ordinal_of(sts.name, p.name)) is not None}
        changed = await self._converge(sts, by_ordinal, update)
        pods = [p for p in self.cache.list("Pod", sts.namespace) if owned_by(p, sts)]
        current_name = str(sts.status.get("currentRevision") or update.name)
        in_use = {update.name, current_name} | {
            p.metadata.labels.get(REVISION_HASH_LABEL, "") for p in pods}
        changed = await prune(self.client, sts, revisions, in_use) or changed
        return await self._write_status(sts, pods, update.name) or changed

    # -- pods and claims -----------------------------------------------------------------------

    async def _converge(self, sts: Resource, pods: dict[int, Resource], update: Resource) -> bool:
        replicas = int(sts.spec.get("replicas", 1))
        start = int((sts.spec.get("ordinals") or {}).get("start") or 0)
        wanted = range(start, start + replicas)
        ordered = sts.spec.get("podManagementPolicy", "OrderedReady") == "OrderedReady"
        changed = False
        for ordinal in wanted:
            pod = pods.get(ordinal)
            if pod is not None and is_terminal(pod) and not pod.metadata.deletion_timestamp:
                await self._delete_pod(sts, pod)  # a failed pod is replaced
                changed = True
                if ordered:
                    return True
                continue
            if pod is None:
                await self._create_claims(sts, ordinal)
                await self._create_pod(sts, ordinal, update)
                changed = True
                if ordered:
                    return True
                continue
            if ordered and not self._settled(sts, pod):
                return changed
        condemned = sorted((o for o in pods if o not in wanted), reverse=True)
        for ordinal in condemned:
            pod = pods[ordinal]
            if pod.metadata.deletion_timestamp:
                if ordered:
                    return changed
                continue
            if ordered and not all(self._settled(sts, p) for o, p in pods.items()
                                   if o in wanted):
                return changed
            await self._own_claims(sts, ordinal, pod)
            await self._delete_pod(sts, pod)
            changed = True
            if ordered:
                return True
        if changed:
            return True
        for ordinal in wanted:
            await self._own_claims(sts, ordinal, None)
        return await self._roll(sts, pods, wanted, update)

    async def _roll(self, sts: Resource, pods: dict[int, Resource], wanted: range,
                    update: Resource) -> bool:
        """updateStatefulSetAfterInvariantEstablished: with fewer than ``maxUnavailable``
        of the set's pods unavailable, pods at an old revision are deleted from the highest
        ordinal down, as many as the difference allows; ``partition`` counts positions from
        the start ordinal and keeps those below it."""
        strategy = sts.spec.get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") != "RollingUpdate":
            return False
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        now = self.clock.now()
        min_ready = int(sts.spec.get("minReadySeconds") or 0)
        replicas = [pods.get(ordinal) for ordinal in wanted]
        unavailable = sum(1 for pod in replicas if pod is None or not (
            _healthy(pod) and is_available(pod, min_ready, now)))
        budget = max_unavailable(sts) - unavailable
        changed = False
        for index in range(len(replicas) - 1, partition - 1, -1):
            if budget <= 0:
                break
            pod = replicas[index]
            if pod is None or pod.metadata.deletion_timestamp:
                continue
            if pod.metadata.labels.get(REVISION_HASH_LABEL) != update.name:
                await self._delete_pod(sts, pod)
                changed = True
                budget -= 1
        return changed

    async def _create_claims(self, sts: Resource, ordinal: int) -> None:
        selector_labels = (sts.spec.get("selector") or {}).get("matchLabels") or {}
        for template in sts.spec.get("volumeClaimTemplates") or []:
            meta = template.get("metadata") or {}
            name = claim_name(str(meta.get("name")), sts.name, ordinal)
            if self.cache.get("PersistentVolumeClaim", name, sts.namespace) is not None:
                continue
            claim_meta: JSON = {"name": name, "namespace": sts.namespace,
                                "labels": {**(meta.get("labels") or {}), **selector_labels}}
            if meta.get("annotations"):
                claim_meta["annotations"] = dict(meta["annotations"])
            refs = self._claim_refs(sts, ordinal, None)
            if refs:
                claim_meta["ownerReferences"] = refs
            try:
                await self.client.create(Resource.from_dict({
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": claim_meta,
                    "spec": copy.deepcopy(template.get("spec") or {})}))
            except AlreadyExists:
                continue
            except ObjectForbidden as err:  # an admission plugin's refusal (a quota)
                why = err.worded("persistentvolumeclaims")
                pod = f"{sts.name}-{ordinal}"
                self.event("StatefulSet", sts.namespace, sts.name, "Warning", "FailedCreate",
                           f"create Claim {name} for Pod {pod} in StatefulSet {sts.name} "
                           f"failed error: {why}")
                self.event("StatefulSet", sts.namespace, sts.name, "Warning", "FailedCreate",
                           f"create Pod {pod} in StatefulSet {sts.name} failed error: failed "
                           f"to create PVC {name}: {why}")
                raise
            self.event("StatefulSet", sts.namespace, sts.name, "Normal", "SuccessfulCreate",
                       f"create Claim {name} Pod {sts.name}-{ordinal} in StatefulSet "
                       f"{sts.name} success")

    def _claim_refs(self, sts: Resource, ordinal: int, pod: Resource | None) -> list[JSON]:
        """The owner references the retention policy gives the claims of ``ordinal``
        (``pod``: its pod when scaling removes it)."""
        policy = sts.spec.get("persistentVolumeClaimRetentionPolicy") or {}
        refs: list[JSON] = []
        if pod is not None and policy.get("whenScaled") == "Delete":
            refs.append({"apiVersion": "v1", "kind": "Pod", "name": pod.name,
                         "uid": pod.metadata.uid, "blockOwnerDeletion": True})
        elif policy.get("whenDeleted") == "Delete":
            refs.append(controller_ref(sts))
        return refs

    async def _own_claims(self, sts: Resource, ordinal: int, pod: Resource | None) -> None:
        """Keep the claims' owner references as the retention policy says."""
        wanted = self._claim_refs(sts, ordinal, pod)
        ours = {sts.metadata.uid} | ({pod.metadata.uid} if pod is not None else set())
        for template in sts.spec.get("volumeClaimTemplates") or []:
            name = claim_name(str((template.get("metadata") or {}).get("name")), sts.name,
                              ordinal)
            pvc = self.cache.get("PersistentVolumeClaim", name, sts.namespace)
            if pvc is None:
                continue
            refs = pvc.metadata.owner_references or []
            kept = [r for r in refs if r.get("uid") not in ours
                    and not (r.get("kind") == "Pod" and r.get("name") == f"{sts.name}-{ordinal}")]
            if kept + wanted == refs:
                continue

            def mutate(obj: Resource, kept: list[JSON] = kept) -> bool:
                obj.metadata.owner_references = kept + wanted
                return True
            try:
                await write_object(self.client, "PersistentVolumeClaim", name,
                                   sts.namespace, mutate)
            except NotFound:
                continue

    async def _create_pod(self, sts: Resource, ordinal: int, update: Resource) -> None:
        name = f"{sts.name}-{ordinal}"
        pod = pod_from_template(sts, sts.spec.get("template") or {}, name=name)
        pod["metadata"]["labels"].update({POD_NAME_LABEL: name, POD_INDEX_LABEL: str(ordinal),
                                          REVISION_HASH_LABEL: update.name})
        spec = pod["spec"]
        spec["hostname"] = name
        if sts.spec.get("serviceName"):
            spec["subdomain"] = sts.spec["serviceName"]
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        for template in sts.spec.get("volumeClaimTemplates") or []:
            tmpl = str((template.get("metadata") or {}).get("name"))
            volumes[tmpl] = {"name": tmpl, "persistentVolumeClaim": {
                "claimName": claim_name(tmpl, sts.name, ordinal)}}
        if volumes:
            spec["volumes"] = list(volumes.values())
        try:
            await self.client.create(Resource.from_dict(pod))
        except AlreadyExists:
            return
        except ObjectForbidden as err:  # an admission plugin's refusal (a quota)
            self.event("StatefulSet", sts.namespace, sts.name, "Warning", "FailedCreate",
                       f"create Pod {name} in StatefulSet {sts.name} failed error: "
                       f"{err.worded('pods')}")
            raise
        self.event("StatefulSet", sts.namespace, sts.name, "Normal", "SuccessfulCreate",
                   f"create Pod {name} in StatefulSet {sts.name} successful")

    async def _delete_pod(self, sts: Resource, pod: Resource) -> None:
        try:
            await self.client.delete("Pod", pod.name, pod.namespace, uid=pod.metadata.uid)
        except NotFound:
            return
        self.event("StatefulSet", sts.namespace, sts.name, "Normal", "SuccessfulDelete",
                   f"delete Pod {pod.name} in StatefulSet {sts.name} successful")

    # -- status --------------------------------------------------------------------------------

    async def _write_status(self, sts: Resource, pods: list[Resource], update: str) -> bool:
        now = self.clock.now()
        min_ready = int(sts.spec.get("minReadySeconds") or 0)
        live = [p for p in pods if not p.metadata.deletion_timestamp]
        current = str(sts.status.get("currentRevision") or update)
        revision = [p.metadata.labels.get(REVISION_HASH_LABEL) for p in live]
        status: JSON = {
            "observedGeneration": sts.metadata.generation,
            "replicas": len(live),
            "readyReplicas": sum(1 for p in live if is_ready(p)),
            "availableReplicas": sum(1 for p in live if is_available(p, min_ready, now)),
            "currentReplicas": sum(1 for r in revision if r == current),
            "updatedReplicas": sum(1 for r in revision if r == update),
            "currentRevision": current, "updateRevision": update,
            "collisionCount": int(sts.status.get("collisionCount") or 0),
        }
        rolling = (sts.spec.get("updateStrategy") or {}).get("type", "RollingUpdate") \
            == "RollingUpdate"
        replicas = int(sts.spec.get("replicas", 1))
        if rolling and status["updatedReplicas"] == replicas == status["readyReplicas"] \
                == status["replicas"]:
            status["currentRevision"] = update
            status["currentReplicas"] = status["updatedReplicas"]
        status = {k: v for k, v in status.items()
                  if v or k in ("replicas", "availableReplicas", "observedGeneration",
                                "collisionCount")}
        if sts.status.get("conditions"):
            status["conditions"] = sts.status["conditions"]
        if min_ready and status.get("readyReplicas", 0) != status["availableReplicas"]:
            self._note_retry(self.key(sts.namespace, sts.name), float(min_ready))
        if status == sts.status:
            return False

        return await replace_status(self.client, sts, status)
