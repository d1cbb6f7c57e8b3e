"""kube-controller-manager's disruption controller: keeps each PodDisruptionBudget's status
(``currentHealthy``, ``desiredHealthy``, ``expectedPods``, ``disruptionsAllowed``, the
``DisruptionAllowed`` condition, ``observedGeneration``) in step with the Ready condition
of the pods it selects, and drops ``disruptedPods`` entries once their pod is gone or
their time is up (:mod:`kubelet_sim.apiserver.disruption_budget`). The eviction
subresource reads that status.
"""

from __future__ import annotations

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.disruption_budget import computed_status, covers
from kubelet_sim.client.writes import write_status
from kubelet_sim.controllers.base import Controller

COMPONENT = "disruption-controller"


def _same(old: JSON, new: JSON) -> bool:
    """Equal statuses, the condition's transition time aside."""
    def bare(status: JSON) -> JSON:
        conds = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                 for c in status.get("conditions") or []]
        return {**status, "conditions": conds}
    return bare(old) == bare(new)


class DisruptionController(Controller):
    name = COMPONENT
    kinds = ("PodDisruptionBudget", "Pod")

    async def reconcile(self) -> bool:
        changed = False
        for budget in self.cache.list("PodDisruptionBudget"):
            key = f"pdb/{budget.namespace}/{budget.name}"
            changed = await self.step(key, self._sync, budget) or changed
        return changed

    async def _sync(self, budget: Resource) -> bool:
        pods = [p for p in self.cache.list("Pod", budget.namespace) if covers(budget, p)]
        wanted = computed_status(budget, pods, self.clock.now())
        if _same(budget.status, wanted):
            return False

        def mutate(obj: Resource) -> bool:
            fresh = computed_status(obj, pods, self.clock.now())
            if _same(obj.status, fresh):
                return False
            obj.status = fresh
            return True

        return await write_status(self.client, "PodDisruptionBudget", budget.name,
                                  budget.namespace, mutate) is not None
