"""The DaemonSet controller's rolling update (its ``rollingUpdate``), as a plan: which old
pods to delete and which nodes get a new pod, from the daemon pods on each node that
should run one.

* ``maxSurge`` 0: old pods are deleted (the manage loop then makes the new ones) while at
  most ``maxUnavailable`` nodes are without an available pod; an old pod that is not
  available is replaced whatever the budget.
* ``maxSurge`` above 0: a new pod is made next to an old one (at once where the old one is
  not available, else on up to ``maxSurge`` nodes at a time), and the old pod is deleted
  once the new one is available.

Both counts are resolved against the number of nodes that should run a pod, percentages
rounded up; when both come to 0 one unavailable pod is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers.deployment import resolve
from kubelet_sim.controllers.revisions import REVISION_HASH_LABEL
from kubelet_sim.controllers.workload_pods import is_available


def surge_and_unavailable(ds: Resource, desired: int) -> tuple[int, int]:
    """SurgeCount and UnavailableCount against ``desired`` nodes (up to percentages rounded
    up), with updatedDesiredNodeCounts's fallback of one unavailable."""
    strategy = ds.spec.get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    params = strategy.get("rollingUpdate") or {}
    surge = resolve(params.get("maxSurge", 0), desired, round_up=True)
    unavailable = resolve(params.get("maxUnavailable", 1), desired, round_up=True)
    if desired > 0 and surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def allows_surge(ds: Resource) -> bool:
    """AllowsSurge: maxSurge comes to more than 0 (of one node)."""
    strategy = ds.spec.get("updateStrategy") or {}
    params = strategy.get("rollingUpdate") or {}
    return resolve(params.get("maxSurge", 0), 1, round_up=True) > 0


def is_updated(pod: Resource, current_hash: str) -> bool:
    return pod.metadata.labels.get(REVISION_HASH_LABEL) == current_hash


def new_and_old(pods: list[Resource], current_hash: str
                ) -> tuple[Resource | None, Resource | None, bool]:
    """findUpdatedPodsOnNode: the node's one new and one old pod (not being deleted);
    False when there are more of either (the manage loop sorts that out first)."""
    new: Resource | None = None
    old: Resource | None = None
    for pod in pods:
        if pod.metadata.deletion_timestamp:
            continue
        if is_updated(pod, current_hash):
            if new is not None:
                return None, None, False
            new = pod
        else:
            if old is not None:
                return None, None, False
            old = pod
    return new, old, True


@dataclass
class RolloutPlan:
    delete: list[Resource] = field(default_factory=list)
    create_on: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RolloutInputs:
    """The daemon pods (terminal ones left out) of each node that should keep one, the
    nodes that should get a new one, and what availability means now."""
    by_node: dict[str, list[Resource]]
    should_run: set[str]
    current_hash: str
    min_ready_seconds: int
    now: datetime

    def available(self, pod: Resource) -> bool:
        return is_available(pod, self.min_ready_seconds, self.now)


def plan_without_surge(inputs: RolloutInputs, max_unavailable: int) -> RolloutPlan:
    unavailable = 0
    replace: list[Resource] = []
    candidates: list[Resource] = []
    for node in sorted(inputs.by_node):
        new, old, ok = new_and_old(inputs.by_node[node], inputs.current_hash)
        if not ok or (new is None) == (old is None):
            unavailable += 1  # the manage loop makes or removes a pod here
        elif new is not None:
            if not inputs.available(new):
                unavailable += 1
        elif old is not None:
            if not inputs.available(old):
                replace.append(old)
                unavailable += 1
            elif unavailable < max_unavailable:
                candidates.append(old)
    room = max(0, min(max_unavailable - unavailable, len(candidates)))
    return RolloutPlan(delete=replace + candidates[:room])


def plan_with_surge(inputs: RolloutInputs, max_surge: int, desired: int) -> RolloutPlan:
    plan = RolloutPlan()
    surging = 0
    available = 0
    replace_on: list[str] = []
    candidates: list[str] = []
    leaving: list[Resource] = []  # available old pods on nodes that should no longer run one
    for node in sorted(inputs.by_node):
        new, old, ok = new_and_old(inputs.by_node[node], inputs.current_hash)
        if not ok:
            surging += 1
            continue
        counted = old if old is not None else new
        if counted is not None and inputs.available(counted):
            available += 1
        if old is None:
            continue
        if new is None:
            if not inputs.available(old):
                if node not in inputs.should_run:
                    plan.delete.append(old)
                else:
                    replace_on.append(node)
            elif node not in inputs.should_run:
                leaving.append(old)
            elif surging < max_surge:
                candidates.append(node)
            continue
        if not inputs.available(new):
            surging += 1
            continue
        plan.delete.append(old)  # the new pod is available: the old one goes
    # pods on nodes that no longer should run one go only as others become available
    deletable = min(available - desired, len(leaving))
    plan.delete.extend(leaving[:max(0, deletable)])
    room = max(0, min(max_surge - surging, len(candidates)))
    plan.create_on = replace_on + candidates[:room]
    return plan
