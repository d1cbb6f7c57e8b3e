"""Why a pod is not Running, from what the components recorded, as ``kubectl describe`` and
``kubectl get pods`` would let a user find out.

The sources are the ones a user reads in a real cluster: the pod's Warning events (the
kubelet's FailedMount, NetworkNotReady, FailedCreatePodSandBox with the CNI error, the
attach/detach controller's FailedAttachVolume), the scheduler's ``PodScheduled=False``
condition (the message of its FailedScheduling event) with the ``Ready`` condition of
every node that is not ready (``kubectl describe node``: the runtime's network-not-ready
reason), and the events of the pod's claims that are not bound yet (ProvisioningFailed,
WaitForFirstConsumer, ...). Of each component only its latest warning is shown, oldest
first, so the last line is the most recent cause.
"""

from __future__ import annotations

from kubelet_sim.api.model import Resource, condition
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import WARNING, Event, EventRecorder
from kubelet_sim.client.pod_claims import pod_claims

DEFAULT_SCHEDULER = "default-scheduler"


def pod_reasons(api: APIServer, events: EventRecorder, pod: Resource) -> list[str]:
    """One line per recorded cause of ``pod`` not running (empty when none was recorded)."""
    latest = _latest_per_component(events.warnings("Pod", pod.name, pod.namespace))
    scheduler = str(pod.spec.get("schedulerName") or DEFAULT_SCHEDULER)
    scheduled = condition(pod, "PodScheduled") or {}
    lines = []
    if scheduled.get("status") == "False":
        # The scheduler's FailedScheduling event, or the condition it writes the same
        # message to, then the nodes that are not ready (often the cause).
        event = latest.pop(scheduler, None)
        lines.append(_event_line(event) if event is not None
                     else f"FailedScheduling ({scheduler}): {scheduled.get('message', '')}")
        lines += node_reasons(api)
    lines += [_event_line(e) for e in sorted(latest.values(), key=lambda e: e.last_seen)]
    for claim in pod_claims(api, pod):  # a missing claim: the scheduler or kubelet says so
        if claim.status.get("phase") != "Bound":
            lines += [f"persistentvolumeclaim/{claim.name}: {line}"
                      for line in claim_reasons(events, claim)]
    return lines


def node_reasons(api: APIServer) -> list[str]:
    """``node/NAME NotReady: message`` for every node whose Ready condition is not True."""
    lines = []
    for node in api.list("Node").items:
        ready = condition(node, "Ready") or {}
        if ready.get("status") != "True":
            lines.append(f"node/{node.name} NotReady ({ready.get('reason', 'no status')}): "
                         f"{ready.get('message', 'the kubelet has not posted a status')}")
    return lines


def claim_reasons(events: EventRecorder, claim: Resource) -> list[str]:
    """Why a claim is not bound: each component's latest warning, else the latest event."""
    recorded = events.for_object("PersistentVolumeClaim", claim.name, claim.namespace)
    warnings = _latest_per_component([e for e in recorded if e.type == WARNING])
    chosen = list(warnings.values()) or sorted(recorded, key=lambda e: e.last_seen)[-1:]
    return [_event_line(e) for e in sorted(chosen, key=lambda e: e.last_seen)]


def _latest_per_component(events: list[Event]) -> dict[str, Event]:
    latest: dict[str, Event] = {}
    for event in events:
        if event.component not in latest or event.last_seen > latest[event.component].last_seen:
            latest[event.component] = event
    return latest


def _event_line(event: Event) -> str:
    return f"{event.reason} ({event.component}): {event.message}"
