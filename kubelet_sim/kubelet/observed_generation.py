"""``status.observedGeneration`` and the conditions' ``observedGeneration`` of a pod, as a
kubelet with PodObservedGenerationTracking (GA, locked on in 1.35) writes them: the
``metadata.generation`` of the pod it acted on, on every status it writes, and on each
condition the kubelet owns (PodReadyToStartContainers, Initialized, ContainersReady,
Ready, PodScheduled when it sets it, DisruptionTarget when it evicts). Conditions other
components own (readiness gates) keep theirs."""

from __future__ import annotations

from kubelet_sim.api.model import Resource

KUBELET_CONDITIONS = frozenset({"PodReadyToStartContainers", "Initialized",
                                "ContainersReady", "Ready", "PodScheduled",
                                "DisruptionTarget"})

__all__ = ["KUBELET_CONDITIONS", "observe", "stale"]


def stale(pod: Resource) -> bool:
    """The pod's spec moved since the kubelet last wrote its status."""
    generation = pod.metadata.generation
    return bool(generation) and pod.status.get("observedGeneration") != generation


def observe(pod: Resource) -> None:
    """Stamp the generation the kubelet acted on (in place, before a status write)."""
    generation = pod.metadata.generation
    if not generation:
        return
    pod.status["observedGeneration"] = generation
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") in KUBELET_CONDITIONS:
            cond["observedGeneration"] = generation
