"""kube-controller-manager's ReplicaSet controller: each ReplicaSet keeps ``spec.replicas``
active pods that its selector covers (named ``<rs>-<5 random>``, with its controller
reference; orphans the selector covers are adopted, its pods the selector left are
released), deleting the least useful ones first when there are too many, and reports
``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` and
``observedGeneration``. A pod an admission plugin refuses (a ResourceQuota, a
LimitRange) is a ``FailedCreate`` Warning (``Error creating: pods "..." is forbidden:
...``) and the ``ReplicaFailure`` condition until a sync manages its pods again; the
ReplicaSet is retried with backoff.
"""

from __future__ import annotations

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.client.writes import replace_status
from kubelet_sim.controllers.workload_pods import (
    claim,
    is_active,
    is_available,
    is_ready,
    owned_by,
    pod_from_template,
    selector_of,
)
from kubelet_sim.controllers.workload_queue import WorkloadController

COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500  # the controller's burstReplicas: pods created or deleted per sync
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: Resource) -> tuple[int, int, int, str]:
    """Which pods go first when there are too many (ActivePods' order, simplified): not
    yet scheduled, then pending, unknown, running; not ready before ready; the newest
    first."""
    created = pod.metadata.creation_timestamp or ""
    return (1 if pod.spec.get("nodeName") else 0,
            _PHASE_RANK.get(str(pod.status.get("phase")), 0),
            1 if is_ready(pod) else 0,
            "".join(chr(0x10FFFF - ord(c)) for c in created))


def replica_set_status(rs: Resource, pods: list[Resource], now_ready: list[bool],
                       now_available: list[bool]) -> JSON:
    template_labels = ((rs.spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    fully = sum(1 for p in pods
                if all(p.metadata.labels.get(k) == v for k, v in template_labels.items()))
    status: JSON = {"replicas": len(pods), "fullyLabeledReplicas": fully,
                    "readyReplicas": sum(now_ready), "availableReplicas": sum(now_available),
                    "observedGeneration": rs.metadata.generation}
    conditions = rs.status.get("conditions")
    if conditions:
        status["conditions"] = conditions
    return {k: v for k, v in status.items()
            if v or k in ("replicas", "observedGeneration")}


def _with_replica_failure(conditions: list[JSON], refused: str | None,
                          now: str) -> list[JSON]:
    """``calculateStatus``'s ReplicaFailure: set (once) while creating pods fails, gone
    once a sync manages the pods without an error."""
    others = [c for c in conditions if c.get("type") != "ReplicaFailure"]
    if refused is None:
        return others
    kept = [c for c in conditions if c.get("type") == "ReplicaFailure"]
    return conditions if kept else [*others, {
        "type": "ReplicaFailure", "status": "True", "lastTransitionTime": now,
        "reason": "FailedCreate", "message": refused}]


class ReplicaSetController(WorkloadController):
    name = COMPONENT
    kinds = ("ReplicaSet", "Pod")
    workload_kind, prefix = "ReplicaSet", "rs"

    async def sync(self, rs: Resource) -> bool:
        candidates = [p for p in self.cache.list("Pod", rs.namespace) if is_active(p)]
        pods = await claim(self.client, rs, candidates, selector_of(rs))
        changed = False
        refused: str | None = None
        if not rs.metadata.deletion_timestamp and self.may_manage(rs):
            try:
                changed = await self._manage(rs, pods)
            except ObjectForbidden as err:  # refused by admission (create_pod said so)
                refused = err.worded("pods")
                changed = True
            if changed:
                pods = [p for p in self.cache.list("Pod", rs.namespace)
                        if is_active(p) and owned_by(p, rs)]
        changed = await self._write_status(rs, pods, refused) or changed
        if refused:
            raise RuntimeError(refused)  # retried with backoff, as the controller requeues
        return changed

    async def _manage(self, rs: Resource, pods: list[Resource]) -> bool:
        wanted = int(rs.spec.get("replicas", 1))
        diff = len(pods) - wanted
        if diff < 0:
            for _ in range(min(-diff, BURST_REPLICAS)):
                await self.create_pod(rs, pod_from_template(rs, rs.spec.get("template") or {}))
            return True
        if diff > 0:
            for pod in sorted(pods, key=deletion_rank)[:min(diff, BURST_REPLICAS)]:
                await self.delete_pod(rs, pod)
            return True
        return False

    async def _write_status(self, rs: Resource, pods: list[Resource], refused: str | None) -> bool:
        now = self.clock.now()
        min_ready = int(rs.spec.get("minReadySeconds") or 0)
        wanted = replica_set_status(rs, pods, [is_ready(p) for p in pods],
                                    [is_available(p, min_ready, now) for p in pods])
        failure_kept = _with_replica_failure(rs.status.get("conditions") or [], refused,
                                             format_time(now))
        if failure_kept:
            wanted["conditions"] = failure_kept
        else:
            wanted.pop("conditions", None)
        if min_ready and any(is_ready(p) and not is_available(p, min_ready, now) for p in pods):
            self._note_retry(f"rs/{rs.namespace}/{rs.name}", 1.0)
        if wanted == rs.status:
            return False

        return await replace_status(self.client, rs, wanted)

