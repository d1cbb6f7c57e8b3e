"""Taints and tolerations as Kubernetes reads them: which toleration tolerates which
taint (core/v1 ``ToleratesTaint``), the taints the node lifecycle controller manages,
and how long a pod may stay on a node with ``NoExecute`` taints (the taint eviction
controller's minimum toleration time)."""

from __future__ import annotations

from kubelet_sim.api.model import JSON, Resource

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
NO_SCHEDULE, NO_EXECUTE = "NoSchedule", "NoExecute"
# The DefaultTolerationSeconds admission plugin's default for both keys.
DEFAULT_TOLERATION_SECONDS = 300


def toleration_matches(toleration: JSON, taint: JSON) -> bool:
    """An empty effect matches every effect; ``Exists`` with an empty key every key."""
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration["key"] == taint.get("key")
    return (toleration.get("key") == taint.get("key")
            and toleration.get("value", "") == taint.get("value", ""))


def tolerates(pod: Resource, taint: JSON) -> bool:
    return any(toleration_matches(t, taint) for t in pod.spec.get("tolerations") or [])


def seconds_tolerated(pod: Resource, taints: list[JSON]) -> float | None:
    """How long ``pod`` may keep running on a node with these taints: 0 when one
    ``NoExecute`` taint is not tolerated (or a toleration allows <= 0 s), None when the
    tolerations have no ``tolerationSeconds`` (forever), else the smallest of them."""
    used: list[JSON] = []
    for taint in taints:
        if taint.get("effect") != NO_EXECUTE:
            continue
        matching = [t for t in pod.spec.get("tolerations") or [] if toleration_matches(t, taint)]
        if not matching:
            return 0.0
        used += matching
    limits = [float(t["tolerationSeconds"]) for t in used
              if t.get("tolerationSeconds") is not None]
    if not limits:
        return None if used else 0.0
    return max(0.0, min(limits))


def default_tolerations(pod: Resource) -> None:
    """DefaultTolerationSeconds: a pod that tolerates neither not-ready nor unreachable
    ``NoExecute`` gets a 300 s toleration for each (so it is evicted 5 minutes after its
    node is lost, not at once)."""
    tolerations = pod.spec.setdefault("tolerations", [])
    for key in (NOT_READY, UNREACHABLE):
        taint = {"key": key, "effect": NO_EXECUTE}
        if not any(toleration_matches(t, taint) for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": NO_EXECUTE,
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
