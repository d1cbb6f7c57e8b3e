"""kube-controller-manager's Deployment controller: one ReplicaSet per pod template
(``<deployment>-<pod-template-hash>``, the hash also a label of its selector, template and
pods), rolled out by the strategy:

* RollingUpdate: the new ReplicaSet grows while all pods stay within ``replicas +
  maxSurge`` (rounded up); old ones shrink while ``replicas - maxUnavailable`` (rounded
  down) stay available, their unavailable pods first;
* Recreate: the old ReplicaSets go to 0 and their pods away before the new one is made.

A change of ``replicas`` that an active ReplicaSet's ``desired-replicas`` does not match
yet (a scaling event), or any pass of a paused Deployment, scales instead of rolling: the
added or removed replicas are spread over the ReplicaSets in proportion
(:mod:`.deployment_scale`).

Each ReplicaSet carries ``deployment.kubernetes.io/revision`` (the new one one above the
highest; a template seen before takes its ReplicaSet back with the next revision: what
``kubectl rollout undo`` relies on), ``desired-replicas`` and ``max-replicas``; the
Deployment carries its new ReplicaSet's revision. Old ReplicaSets beyond
``revisionHistoryLimit`` are deleted once scaled to 0 and empty, after a complete rollout
(or while paused). The status counts the pods of all
its ReplicaSets (``updatedReplicas``: the new one's) with the conditions
``Available`` (MinimumReplicasAvailable / MinimumReplicasUnavailable) and ``Progressing``
(NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
ProgressDeadlineExceeded; Unknown with DeploymentPaused/DeploymentResumed), which
``kubectl rollout status`` reads.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.client.writes import get_or_none, write_object, write_status
from kubelet_sim.controllers.deployment_scale import (
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    active,
    active_or_latest,
    by_creation,
    is_saturated,
    is_scaling_event,
    proportional_sizes,
)
from kubelet_sim.controllers.workload_pods import (
    claim,
    condition,
    controller_of,
    controller_ref,
    is_terminal,
    owned_by,
    selector_of,
    set_condition,
    template_hash,
)
from kubelet_sim.controllers.workload_queue import WorkloadController

COMPONENT = "deployment-controller"
HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
CHANGE_CAUSE = "kubernetes.io/change-cause"
# annotations of the Deployment that are not copied to its ReplicaSets
_NOT_COPIED = {"kubectl.kubernetes.io/last-applied-configuration", REVISION, REVISION_HISTORY,
               DESIRED_REPLICAS, MAX_REPLICAS}


def resolve(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString count or percentage of ``total``."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(value or 0)


def is_rolling(deployment: Resource) -> bool:
    return (deployment.spec.get("strategy") or {}).get("type") != "Recreate"


def surge_and_unavailable(deployment: Resource) -> tuple[int, int]:
    """maxSurge and maxUnavailable resolved against ``replicas`` (both 0 → unavailable 1),
    as MaxSurge and MaxUnavailable give them: 0 for Recreate, no unavailable at 0 replicas."""
    replicas = int(deployment.spec.get("replicas", 1))
    strategy = deployment.spec.get("strategy") or {}
    if not is_rolling(deployment):
        return 0, 0
    params = strategy.get("rollingUpdate") or {}
    surge = resolve(params.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = resolve(params.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas) if replicas else 0


def without_hash(template: JSON) -> JSON:
    out = copy.deepcopy(template)
    labels = (out.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(HASH_LABEL, None)
    return out


def revision_of(rs: Resource) -> int:
    try:
        return int(rs.metadata.annotations.get(REVISION, "0"))
    except ValueError:
        return 0


def _replicas(rs: Resource) -> int:
    return int(rs.spec.get("replicas", 0))


def deployment_complete(d: Resource) -> bool:
    """DeploymentComplete on the status last written: all replicas updated and available,
    none left over, the generation observed."""
    replicas = int(d.spec.get("replicas", 1))
    status = d.status
    return (int(status.get("updatedReplicas") or 0) == replicas
            and int(status.get("replicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("observedGeneration") or 0) >= d.metadata.generation)


class DeploymentController(WorkloadController):
    name = COMPONENT
    kinds = ("Deployment", "ReplicaSet", "Pod")
    workload_kind, prefix = "Deployment", "deploy"
    adopts = ("ReplicaSet",)

    def keys_of_owned(self, obj: Resource, ref: dict[str, object]) -> list[str] | None:
        """A pod of one of our ReplicaSets (Recreate waits for them to go)."""
        if ref.get("kind") != "ReplicaSet":
            return []
        rs = self.cache.get("ReplicaSet", str(ref.get("name")), obj.namespace)
        owner = controller_of(rs) if rs is not None else None
        if owner is None or owner.get("kind") != "Deployment":
            return []
        return [self.key(obj.namespace, str(owner.get("name")))]

    # -- one deployment ----------------------------------------------------------------------

    async def sync(self, d: Resource) -> bool:
        if d.metadata.deletion_timestamp:
            return False
        sets = await claim(self.client, d, self.cache.list("ReplicaSet", d.namespace),
                           selector_of(d), "ReplicaSet")
        new, old = self._split(d, sets)
        await self._paused_condition(d)
        changed = await self._keep_new_annotations(d, new, old) if new is not None else False
        replicas = int(d.spec.get("replicas", 1))
        if d.spec.get("paused") or is_scaling_event(replicas, new, old):
            # a scaling event (or a paused Deployment) scales without rolling
            changed = await self._scale_all(d, new, old) or changed
            if d.spec.get("paused"):
                changed = await self._cleanup(d, old) or changed
            return await self._sync_status(d, new, old) or changed
        if not is_rolling(d):
            return await self._recreate(d, new, old) or changed
        if new is None:
            new = await self._create_new(d, old)
            if new is None:
                return True  # a collision bumped collisionCount: the next pass retries
            changed = True
        changed = await self._rolling(d, new, old) or changed
        if not changed and deployment_complete(d):
            changed = await self._cleanup(d, old)
        return await self._sync_status(d, new, old) or changed

    async def _scale_all(self, d: Resource, new: Resource | None, old: list[Resource]) -> bool:
        """The controller's scale(): the only active ReplicaSet (or, none being active, the
        newest) takes all replicas; a saturated new one leaves the old ones none; else a
        rolling Deployment spreads the change over the active ones in proportion."""
        replicas = int(d.spec.get("replicas", 1))
        only = active_or_latest(new, old)
        if only is not None:
            return await self._scale(d, only, replicas) if _replicas(only) != replicas else False
        changed = False
        if is_saturated(replicas, new):
            for rs in active(old):
                changed = await self._scale(d, rs, 0) or changed
            return changed
        if not is_rolling(d):
            return False
        surge, _ = surge_and_unavailable(d)
        everything = [*old, *([new] if new is not None else [])]
        for rs, size in proportional_sizes(everything, replicas, surge,
                                           int(d.status.get("replicas") or 0)):
            changed = await self._scale(d, rs, size) or changed
        return changed

    async def _paused_condition(self, d: Resource) -> None:
        """Progressing Unknown (DeploymentPaused / DeploymentResumed) when paused or
        resumed, as checkPausedConditions writes it."""
        reason = (condition(d, "Progressing") or {}).get("reason")
        if d.spec.get("paused") and reason != "DeploymentPaused":
            await self._progressing(d, "Unknown", "DeploymentPaused", "Deployment is paused")
        elif not d.spec.get("paused") and reason == "DeploymentPaused":
            await self._progressing(d, "Unknown", "DeploymentResumed", "Deployment is resumed")

    def _split(self, d: Resource, sets: list[Resource]) -> tuple[Resource | None,
                                                                   list[Resource]]:
        """The ReplicaSet whose template is the Deployment's (the oldest such), the rest."""
        wanted = without_hash(d.spec.get("template") or {})
        matching = sorted((rs for rs in sets
                           if without_hash(rs.spec.get("template") or {}) == wanted),
                          key=lambda rs: rs.metadata.creation_timestamp or "")
        new = matching[0] if matching else None
        return new, [rs for rs in sets if rs is not new]

    def _rs_annotations(self, d: Resource, revision: int) -> dict[str, str]:
        """The Deployment's annotations a ReplicaSet carries, with its revision (the
        replica annotations are written when it is scaled)."""
        copied = {k: v for k, v in d.metadata.annotations.items() if k not in _NOT_COPIED}
        return {**copied, REVISION: str(revision)}

    def _replica_annotations(self, d: Resource) -> dict[str, str]:
        surge, _ = surge_and_unavailable(d)
        replicas = int(d.spec.get("replicas", 1))
        return {DESIRED_REPLICAS: str(replicas), MAX_REPLICAS: str(replicas + surge)}

    async def _create_new(self, d: Resource, old: list[Resource]) -> Resource | None:
        collisions = int(d.status.get("collisionCount") or 0)
        template = copy.deepcopy(d.spec.get("template") or {})
        pod_hash = template_hash(template, collisions)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = copy.deepcopy(d.spec.get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        revision = max((revision_of(rs) for rs in old), default=0) + 1
        surge, _ = surge_and_unavailable(d)
        replicas = int(d.spec.get("replicas", 1))
        # NewRSNewReplicas: within replicas + maxSurge (Recreate: all, its old pods gone)
        start = max(0, min(replicas, replicas + surge - sum(_replicas(rs) for rs in old)))
        labels = {**(template["metadata"].get("labels") or {})}
        rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
              "metadata": {"name": f"{d.name}-{pod_hash}", "namespace": d.namespace,
                           "labels": labels,
                           "annotations": {**self._rs_annotations(d, revision),
                                           **self._replica_annotations(d)},
                           "ownerReferences": [controller_ref(d)]},
              "spec": {"replicas": start, "minReadySeconds": int(
                  d.spec.get("minReadySeconds") or 0), "selector": selector,
                       "template": template}}
        try:
            created = await self.client.create(Resource.from_dict(rs))
        except AlreadyExists:
            # the cache may not have seen it yet (over a client, our own create of a
            # pass ago may still be on its way): then ask the API server
            existing = self.cache.get("ReplicaSet", f"{d.name}-{pod_hash}", d.namespace) \
                or await get_or_none(self.client, "ReplicaSet", f"{d.name}-{pod_hash}",
                                     d.namespace)
            if existing is not None and owned_by(existing, d) and without_hash(
                    existing.spec.get("template") or {}) == without_hash(template):
                return existing

            def bump(obj: Resource) -> bool:
                obj.status["collisionCount"] = int(obj.status.get("collisionCount") or 0) + 1
                return True
            await write_status(self.client, "Deployment", d.name, d.namespace, bump)
            return None
        if start:
            self._scaled_event(d, created, 0, start)
        await self._progressing(d, "True", "NewReplicaSetCreated",
                                f'Created new replica set "{created.name}"')
        return created

    async def _keep_new_annotations(self, d: Resource, new: Resource, old: list[Resource]) -> bool:
        """A template seen before takes its ReplicaSet back with the next revision."""
        highest_old = max((revision_of(rs) for rs in old), default=0)
        revision = revision_of(new)
        if revision <= highest_old:
            revision = highest_old + 1
        wanted = self._rs_annotations(d, revision)
        min_ready = int(d.spec.get("minReadySeconds") or 0)
        if all(new.metadata.annotations.get(k) == v for k, v in wanted.items()) \
                and int(new.spec.get("minReadySeconds") or 0) == min_ready:
            return False
        previous = new.metadata.annotations.get(REVISION)

        def mutate(obj: Resource) -> bool:
            if previous and previous != str(revision):
                history = [h for h in obj.metadata.annotations.get(
                    REVISION_HISTORY, "").split(",") if h]
                obj.metadata.annotations[REVISION_HISTORY] = ",".join([*history, previous])
            obj.metadata.annotations.update(wanted)
            obj.spec["minReadySeconds"] = min_ready
            return True

        await write_object(self.client, "ReplicaSet", new.name, new.namespace, mutate)
        if previous != str(revision) and condition(d, "Progressing") is not None:
            await self._progressing(d, "True", "FoundNewReplicaSet",
                                    f'Found new replica set "{new.name}"')
        return True

    # -- strategies --------------------------------------------------------------------------

    async def _rolling(self, d: Resource, new: Resource, old: list[Resource]) -> bool:
        replicas = int(d.spec.get("replicas", 1))
        surge, unavailable = surge_and_unavailable(d)
        all_sets = [new, *old]
        # the new ReplicaSet up, within replicas + maxSurge
        current = _replicas(new)
        if current > replicas:
            return await self._scale(d, new, replicas)
        if current < replicas:
            total = sum(_replicas(rs) for rs in all_sets)
            room = replicas + surge - total
            if room > 0:
                return await self._scale(d, new, current + min(room, replicas - current))
        # old ones down, keeping replicas - maxUnavailable available (reconcileOldReplicaSets)
        old_count = sum(_replicas(rs) for rs in old)
        if old_count == 0:
            return False
        min_available = replicas - unavailable
        all_count = sum(_replicas(rs) for rs in all_sets)
        new_unavailable = _replicas(new) - int(new.status.get("availableReplicas") or 0)
        max_down = all_count - min_available - new_unavailable
        if max_down <= 0:
            return False
        sizes = {rs.name: _replicas(rs) for rs in old}
        changed = False
        # first the old pods that are not available anyway (cleanupUnhealthyReplicas)
        cleaned = 0
        for rs in by_creation(old):
            if cleaned >= max_down:
                break
            unhealthy = sizes[rs.name] - int(rs.status.get("availableReplicas") or 0)
            if sizes[rs.name] == 0 or unhealthy <= 0:
                continue
            down = min(max_down - cleaned, unhealthy)
            sizes[rs.name] -= down
            changed = await self._scale(d, rs, sizes[rs.name]) or changed
            cleaned += down
        # then available ones, down to replicas - maxUnavailable available (a ReplicaSet
        # just scaled down has no more available than it asks for, whatever its status
        # still says)
        available = sum(min(int(rs.status.get("availableReplicas") or 0), _replicas(rs))
                        for rs in all_sets)
        budget = available - min_available
        for rs in by_creation(old):
            if budget <= 0:
                break
            down = min(sizes[rs.name], budget)
            if down > 0:
                sizes[rs.name] -= down
                changed = await self._scale(d, rs, sizes[rs.name]) or changed
                budget -= down
        return changed

    async def _recreate(self, d: Resource, new: Resource | None, old: list[Resource]) -> bool:
        """rolloutRecreate: the old ReplicaSets to 0; once their pods are gone the new one is
        made (or found) at full size."""
        changed = False
        for rs in active(old):
            changed = await self._scale(d, rs, 0) or changed
        if changed:
            return await self._sync_status(d, new, old) or True
        old_uids = {rs.metadata.uid for rs in old}
        running = [p for p in self.cache.list("Pod", d.namespace)
                   if any(r.get("uid") in old_uids for r in p.metadata.owner_references or [])
                   and not is_terminal(p)]
        if running or any(int(rs.status.get("replicas") or 0) for rs in old):
            return await self._sync_status(d, new, old) or changed  # the old pods go first
        if new is None:
            new = await self._create_new(d, old)
            if new is None:
                return True
            changed = True
        replicas = int(d.spec.get("replicas", 1))
        if _replicas(new) != replicas:
            changed = await self._scale(d, new, replicas) or changed
        if deployment_complete(d):
            changed = await self._cleanup(d, old) or changed
        return await self._sync_status(d, new, old) or changed

    async def _scale(self, d: Resource, rs: Resource, replicas: int) -> bool:
        before = _replicas(rs)
        surge, _ = surge_and_unavailable(d)
        desired = int(d.spec.get("replicas", 1))

        def mutate(obj: Resource) -> bool:
            annotations = {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(desired + surge)}
            if _replicas(obj) == replicas and all(
                    obj.metadata.annotations.get(k) == v for k, v in annotations.items()):
                return False
            obj.spec["replicas"] = replicas
            obj.metadata.annotations.update(annotations)
            return True

        if await write_object(self.client, "ReplicaSet", rs.name, rs.namespace, mutate) is None:
            return False
        if before != replicas:
            self._scaled_event(d, rs, before, replicas)
        return True

    def _scaled_event(self, d: Resource, rs: Resource, before: int, after: int) -> None:
        way = "up" if after > before else "down"
        self.event("Deployment", d.namespace, d.name, "Normal", "ScalingReplicaSet",
                   f"Scaled {way} replica set {rs.name} from {before} to {after}")

    async def _cleanup(self, d: Resource, old: list[Resource]) -> bool:
        """cleanupDeployment: of the old ReplicaSets beyond revisionHistoryLimit, the
        oldest revisions go, each only once it asks for and has no pods."""
        limit = int(d.spec.get("revisionHistoryLimit", 10))
        alive = sorted((rs for rs in old if not rs.metadata.deletion_timestamp),
                       key=lambda rs: (revision_of(rs), rs.metadata.creation_timestamp or ""))
        changed = False
        for rs in alive[:max(0, len(alive) - limit)]:
            if _replicas(rs) or int(rs.status.get("replicas") or 0) \
                    or rs.metadata.generation > int(rs.status.get("observedGeneration") or 0):
                continue
            try:
                await self.client.delete("ReplicaSet", rs.name, rs.namespace,
                                         uid=rs.metadata.uid)
                changed = True
            except NotFound:
                continue
        return changed

    # -- status ------------------------------------------------------------------------------

    async def _progressing(self, d: Resource, status: str, reason: str, message: str) -> None:
        now = format_time(self.clock.now())
        cond = {"type": "Progressing", "status": status, "lastUpdateTime": now,
                "lastTransitionTime": now, "reason": reason, "message": message}

        def mutate(obj: Resource) -> bool:
            before = copy.deepcopy(obj.status.get("conditions"))
            set_condition(obj.status, cond)
            return obj.status.get("conditions") != before

        await write_status(self.client, "Deployment", d.name, d.namespace, mutate)

    async def _sync_status(self, d: Resource, new: Resource | None, old: list[Resource]) -> bool:
        fresh = self.cache.get("Deployment", d.name, d.namespace) or d
        sets = [rs for rs in ([new] if new else []) + old]
        sets = [self.cache.get("ReplicaSet", rs.name, rs.namespace) or rs for rs in sets]
        new = sets[0] if new is not None else None

        def total(field: str) -> int:
            return sum(int(rs.status.get(field) or 0) for rs in sets)

        replicas = int(fresh.spec.get("replicas", 1))
        _, unavailable = surge_and_unavailable(fresh)
        available = total("availableReplicas")
        updated = int(new.status.get("replicas") or 0) if new is not None else 0
        now = format_time(self.clock.now())
        status: JSON = {k: v for k, v in fresh.status.items() if k in ("conditions",
                                                                      "collisionCount")}
        status.update({"observedGeneration": fresh.metadata.generation,
                       "replicas": total("replicas"), "updatedReplicas": updated,
                       "readyReplicas": total("readyReplicas"), "availableReplicas": available,
                       "unavailableReplicas": max(replicas - available, 0)})
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        if available >= replicas - unavailable:
            set_condition(status, {"type": "Available", "status": "True",
                                   "lastUpdateTime": now, "lastTransitionTime": now,
                                   "reason": "MinimumReplicasAvailable",
                                   "message": "Deployment has minimum availability."})
        else:
            set_condition(status, {"type": "Available", "status": "False",
                                   "lastUpdateTime": now, "lastTransitionTime": now,
                                   "reason": "MinimumReplicasUnavailable",
                                   "message": "Deployment does not have minimum availability."})
        if new is not None and not fresh.spec.get("paused"):
            self._progress_condition(fresh, status, new, sets, replicas, now)
        _replica_failure(status, sets)
        if status == fresh.status:
            return False

        def mutate(obj: Resource) -> bool:
            if obj.metadata.generation != fresh.metadata.generation or obj.status == status:
                return False
            obj.status = status
            return True

        await write_status(self.client, "Deployment", d.name, d.namespace, mutate)
        if fresh.metadata.annotations.get(REVISION) != (new.metadata.annotations.get(REVISION)
                                                        if new is not None else None) \
                and new is not None:
            revision = new.metadata.annotations.get(REVISION, "")

            def annotate(obj: Resource) -> bool:
                if obj.metadata.annotations.get(REVISION) == revision:
                    return False
                obj.metadata.annotations[REVISION] = revision
                return True
            # through the status subresource, as the deployment controller does: the
            # annotation then moves no generation
            await write_status(self.client, "Deployment", d.name, d.namespace, annotate)
        return True

    def _progress_condition(self, d: Resource, status: JSON, new: Resource,
                            sets: list[Resource], replicas: int, now: str) -> None:
        updated = int(new.status.get("replicas") or 0)
        complete = (updated == replicas
                    and int(new.status.get("availableReplicas") or 0) == replicas
                    and int(status.get("replicas") or 0) == replicas
                    and int(status.get("observedGeneration") or 0) >= d.metadata.generation)
        current = condition(d, "Progressing")
        if complete:
            set_condition(status, {
                "type": "Progressing", "status": "True", "lastUpdateTime": now,
                "lastTransitionTime": now, "reason": "NewReplicaSetAvailable",
                "message": f'ReplicaSet "{new.name}" has successfully progressed.'})
            return
        progressed = (current is None or int(d.status.get("updatedReplicas") or 0) != updated
                      or int(d.status.get("availableReplicas") or 0)
                      != int(status.get("availableReplicas") or 0)
                      or int(d.status.get("replicas") or 0) != int(status.get("replicas") or 0))
        if progressed or (current or {}).get("reason") == "NewReplicaSetAvailable":
            cond = {"type": "Progressing", "status": "True", "lastUpdateTime": now,
                    "lastTransitionTime": now, "reason": "ReplicaSetUpdated",
                    "message": f'ReplicaSet "{new.name}" is progressing.'}
            conditions = [c for c in status.get("conditions") or []
                          if c.get("type") != "Progressing"]
            if current is not None and current.get("status") == "True":
                cond["lastTransitionTime"] = current.get("lastTransitionTime", now)
            status["conditions"] = [*conditions, cond]
            return
        deadline = d.spec.get("progressDeadlineSeconds")
        if current is not None and deadline is not None and current.get("lastUpdateTime"):
            since = (self.clock.now() - parse_time(current["lastUpdateTime"])).total_seconds()
            if since > int(deadline):
                set_condition(status, {
                    "type": "Progressing", "status": "False", "lastUpdateTime": now,
                    "lastTransitionTime": now, "reason": "ProgressDeadlineExceeded",
                    "message": f'ReplicaSet "{new.name}" has timed out progressing.'})
            else:
                self._note_retry(f"deploy/{d.namespace}/{d.name}", int(deadline) - since + 0.5)


def _replica_failure(status: JSON, sets: list[Resource]) -> None:
    """``getReplicaFailures``: a ReplicaSet's ReplicaFailure condition (the new one's
    first) is the Deployment's, gone when none has one."""
    for rs in sets:
        found = next((c for c in rs.status.get("conditions") or []
                      if c.get("type") == "ReplicaFailure"), None)
        if found is not None:
            set_condition(status, {**found, "lastUpdateTime": found.get("lastTransitionTime")})
            return
    kept = [c for c in status.get("conditions") or [] if c.get("type") != "ReplicaFailure"]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)
