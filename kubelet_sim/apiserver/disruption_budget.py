"""PodDisruptionBudget arithmetic, shared by the eviction subresource and the disruption
controller: which pods a budget covers, which of them count as healthy, and the status
kube-controller-manager's disruption controller computes from them.

Simplification: ``expectedPods`` is the number of covered pods (the real controller asks
the pods' controllers for their scale; here pods often have no controller).
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from kubelet_sim.api.errors import ApiError
from kubelet_sim.api.model import JSON, Resource, condition, format_time, parse_time
from kubelet_sim.api.selectors import LabelSelector

# how long an eviction's entry in status.disruptedPods keeps its pod out of the healthy
# count before the controller assumes the pod will not be deleted (DeletionTimeout)
DISRUPTED_POD_TIMEOUT = timedelta(minutes=2)
DISRUPTION_ALLOWED = "DisruptionAllowed"


def covers(pdb: Resource, pod: Resource) -> bool:
    """Whether ``pdb`` selects ``pod``: same namespace, and a selector that is set, valid
    and matches (an empty or missing selector matches nothing)."""
    if pdb.namespace != pod.namespace:
        return False
    raw = pdb.spec.get("selector")
    try:
        selector = LabelSelector.from_dict(raw)
    except ApiError:
        return False
    return bool(raw) and not selector.is_empty() and selector.matches(pod.labels)


def is_ready(pod: Resource) -> bool:
    ready = condition(pod, "Ready")
    return ready is not None and ready.get("status") == "True"


def _scaled(value: Any, total: int, round_up: bool) -> int:
    """An IntOrString against ``total``: a count as is, a percentage of it rounded up."""
    if isinstance(value, str) and value.endswith("%"):
        share = int(value[:-1]) * total / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value)


def desired_healthy(pdb: Resource, expected: int) -> int:
    spec = pdb.spec
    if spec.get("maxUnavailable") is not None:
        return max(0, expected - _scaled(spec["maxUnavailable"], expected, True))
    if spec.get("minAvailable") is not None:
        return _scaled(spec["minAvailable"], expected, True)
    return 0  # neither set: the budget protects nothing


def computed_status(pdb: Resource, pods: list[Resource], now: datetime) -> JSON:
    """The status the disruption controller writes for ``pdb`` over the pods it covers."""
    disrupted: dict[str, str] = {}
    for name, stamp in (pdb.status.get("disruptedPods") or {}).items():
        pod = next((p for p in pods if p.name == name), None)
        if pod is None or pod.is_terminating:
            continue  # the eviction went through: the entry has done its work
        if parse_time(stamp) + DISRUPTED_POD_TIMEOUT > now:
            disrupted[name] = stamp
    live = [p for p in pods if not p.is_terminating]
    expected = len(live)
    healthy = sum(1 for p in live if is_ready(p) and p.name not in disrupted)
    desired = desired_healthy(pdb, expected)
    allowed = max(0, healthy - desired)
    status: JSON = {"observedGeneration": pdb.metadata.generation,
                    "disruptionsAllowed": allowed, "currentHealthy": healthy,
                    "desiredHealthy": desired, "expectedPods": expected}
    if disrupted:
        status["disruptedPods"] = disrupted
    status["conditions"] = [allowed_condition(pdb, allowed, now)]
    return status


def allowed_condition(pdb: Resource, allowed: int, now: datetime) -> JSON:
    """The DisruptionAllowed condition for ``allowed`` disruptions, its transition time
    kept while its status stays."""
    status = "True" if allowed > 0 else "False"
    reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
    old = condition(pdb, DISRUPTION_ALLOWED)
    since = old.get("lastTransitionTime") if old and old.get("status") == status else None
    return {"type": DISRUPTION_ALLOWED, "status": status, "reason": reason, "message": "",
            "observedGeneration": pdb.metadata.generation,
            "lastTransitionTime": since or format_time(now)}
