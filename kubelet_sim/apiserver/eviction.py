"""The ``pods/eviction`` subresource: a delete that asks the pod's PodDisruptionBudget
first, as kube-apiserver's EvictionREST does.

* A pod that is Pending, Succeeded, Failed or already terminating is deleted at once:
  its disruption has happened or does not count.
* With more than one budget covering the pod: a 500 Status (the API does not choose).
* Otherwise the budget must allow a disruption: its ``status.observedGeneration`` must
  have caught up with its generation, and ``status.disruptionsAllowed`` be above 0, else
  429 TooManyRequests "Cannot evict pod as it would violate the pod's disruption budget."
  (a cause of type ``DisruptionBudget`` says which budget and why). Allowed, the budget's
  ``disruptionsAllowed`` goes down by one and ``status.disruptedPods`` gets the pod, so
  the disruption controller does not count it healthy until it is gone.
* A pod that is not Ready while the budget is satisfied is evicted without using up a
  disruption.
* The pod gets the ``DisruptionTarget`` condition (reason ``EvictionByEvictionAPI``) and
  is deleted with the eviction's DeleteOptions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from kubelet_sim.api.errors import ApiError, Forbidden, TooManyRequests
from kubelet_sim.api.model import JSON, Resource, format_time, set_condition
from kubelet_sim.apiserver.disruption_budget import allowed_condition, covers, is_ready

if TYPE_CHECKING:
    from kubelet_sim.apiserver.server import APIServer

VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MAX_DISRUPTED_PODS = 2000
IGNORES_BUDGETS = ("Pending", "Succeeded", "Failed")


class MultipleBudgets(ApiError):
    """More than one PodDisruptionBudget covers the pod (500, no reason)."""

    code, reason = 500, ""

    def __init__(self) -> None:
        super().__init__("This pod has more than one PodDisruptionBudget, which the eviction "
                         "subresource does not support.")


def _violation(cause: str) -> TooManyRequests:
    return TooManyRequests(VIOLATION, [{"reason": "DisruptionBudget", "message": cause}])


def evict(api: APIServer, namespace: str, name: str, dry_run: bool,
          delete: Callable[[Resource], Resource]) -> None:
    """Evict the pod (see the module); ``delete`` deletes it with the eviction's
    DeleteOptions. Runs under the API server's lock (the caller holds it)."""
    pod = api.get("Pod", name, namespace)
    if pod.status.get("phase") in IGNORES_BUDGETS or pod.is_terminating:
        if not dry_run:
            delete(pod)
        return
    budgets = [b for b in api.list("PodDisruptionBudget", namespace).items if covers(b, pod)]
    if len(budgets) > 1:
        raise MultipleBudgets()
    if budgets:
        budget = budgets[0]
        healthy = int(budget.status.get("currentHealthy", 0))
        desired = int(budget.status.get("desiredHealthy", 0))
        if not (not is_ready(pod) and healthy >= desired > 0):
            _take_disruption(api, budget, pod, dry_run)
    if dry_run:
        return
    _mark_disruption_target(api, pod)
    delete(pod)


def _take_disruption(api: APIServer, budget: Resource, pod: Resource, dry_run: bool) -> None:
    status = budget.status
    if int(status.get("observedGeneration", 0)) < budget.metadata.generation:
        raise _violation(f"The disruption budget {budget.name} is still being processed by "
                         "the server.")
    allowed = int(status.get("disruptionsAllowed", 0))
    if allowed < 0:
        raise Forbidden(f'poddisruptionbudget.policy "{budget.name}" is forbidden: pdb '
                        "disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_PODS:
        raise Forbidden(f'poddisruptionbudget.policy "{budget.name}" is forbidden: '
                        "DisruptedPods map too big - too many evictions not confirmed by "
                        "PDB controller")
    if allowed == 0:
        raise _violation(f"The disruption budget {budget.name} needs "
                         f"{status.get('desiredHealthy', 0)} healthy pods and has "
                         f"{status.get('currentHealthy', 0)} currently")
    if dry_run:
        return
    now = api.clock.now()
    status["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        status["conditions"] = [c for c in status.get("conditions") or []
                                if c.get("type") != "DisruptionAllowed"]
        status["conditions"].append(allowed_condition(budget, 0, now))
    status.setdefault("disruptedPods", {})[pod.name] = format_time(now)
    api.update_status(budget)


def _mark_disruption_target(api: APIServer, pod: Resource) -> None:
    cond: JSON = {"type": "DisruptionTarget", "status": "True",
                  "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}
    current = next((c for c in pod.status.get("conditions") or []
                    if c.get("type") == "DisruptionTarget"), None)
    if current and current.get("status") == "True" \
            and current.get("reason") == cond["reason"]:
        return
    set_condition(pod, cond, api.clock.now())
    api.update_status(pod)
