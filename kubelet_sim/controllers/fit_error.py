"""The scheduler's words when no node fits a pod (its FitError, then the DefaultPreemption
plugin's answer): ``0/3 nodes are available: <PreFilter's reason>. <histogram>.
preemption: ...``. The histogram is ``<count> <reason>`` per reason, sorted as text, as
kube-scheduler sorts it (so by count first). Preemption never runs here: a node whose
reason no eviction can cure is "Preemption is not helpful for scheduling", one over its
volume limit "No preemption victims found for incoming pod" (the pods are alike here, no
lower priority to evict), and a pod with ``preemptionPolicy: Never`` is not eligible."""

from __future__ import annotations

from collections import Counter

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers.volume_limits import EXCEEDED

NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"
# Filter reasons that are Unschedulable (an eviction could cure them), not ...AndUnresolvable
RESOLVABLE = frozenset({EXCEEDED})


def _histogram(counts: Counter[str]) -> str:
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def preemption_message(pod: Resource, nodes: int, reasons: Counter[str],
                       pre_filter: str = "") -> str:
    if pod.spec.get("preemptionPolicy") == "Never":
        return "not eligible due to preemptionPolicy=Never."
    outcomes: Counter[str] = Counter()
    if pre_filter:
        outcomes[NOT_HELPFUL] = nodes
    else:
        for reason, n in reasons.items():
            outcomes[NO_VICTIMS if reason in RESOLVABLE else NOT_HELPFUL] += n
    return f"0/{nodes} nodes are available: {_histogram(outcomes)}."


def fit_error(pod: Resource, nodes: int, reasons: Counter[str], pre_filter: str = "") -> str:
    """The message of the pod's FailedScheduling event and PodScheduled condition:
    ``pre_filter`` a PreFilter plugin's rejection (then no node was filtered), else
    ``reasons`` counts the nodes per filter reason."""
    parts = [p for p in (pre_filter, _histogram(reasons)) if p]
    head = f"0/{nodes} nodes are available:" + "".join(f" {p}." for p in parts)
    return f"{head} preemption: {preemption_message(pod, nodes, reasons, pre_filter)}"
