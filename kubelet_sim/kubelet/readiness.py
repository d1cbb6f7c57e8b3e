"""Readiness of a running pod, as the kubelet's status manager derives it.

A running container is ``started`` unless it has a startup probe that has not succeeded
yet, and ``ready`` once started when its readiness probe (if any) says Success (the
probe workers of prober.py). The pod's annotation ``sim.cni-csi-mini.io/ready-after`` (a
Go duration, ``3s``) also delays readiness that long after the container started, or says
``never`` (it never becomes ready). A container that is not running is never ready.

``ContainersReady`` is True when every container is ready (else reason
``ContainersNotReady``, ``containers with unready status: [a b]``); ``Ready`` is that and
every ``spec.readinessGates`` condition True in ``status.conditions`` (else reason
``ReadinessGatesNotReady`` with the kubelet's message per gate).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.kubelet.go_duration import parse_duration
from kubelet_sim.kubelet.init_status import sidecar_statuses
from kubelet_sim.kubelet.prober import ContainerProbes, probe_container

READY_AFTER = "sim.cni-csi-mini.io/ready-after"


def container_ready(pod: Resource, status: JSON, now: datetime) -> bool:
    """Whether the container (or sidecar) of ``status`` is ready at ``now``."""
    return _container_ready(pod, status, now, probe_container(pod, status, now))


def _container_ready(pod: Resource, status: JSON, now: datetime,
                     probes: ContainerProbes | None) -> bool:
    running = (status.get("state") or {}).get("running")
    if running is None or (probes is not None and not probes.ready):
        return False
    wanted = pod.metadata.annotations.get(READY_AFTER)
    if wanted is None:
        return True
    after = parse_duration(wanted)
    if after is None:  # "never", or anything else that is no duration
        return False
    started = running.get("startedAt")
    return started is None or parse_time(started) + timedelta(seconds=after) <= now


def _gates_message(pod: Resource) -> str:
    present = {c.get("type"): c for c in pod.status.get("conditions") or []}
    messages = []
    for gate in pod.spec.get("readinessGates") or []:
        kind = gate.get("conditionType", "")
        cond = present.get(kind)
        if cond is None:
            messages.append(f'corresponding condition of pod readiness gate "{kind}" '
                            "does not exist.")
        elif cond.get("status") != "True":
            messages.append(f'the status of pod readiness gate "{kind}" is not "True", '
                            f"but {cond.get('status')}")
    return ", ".join(messages)


def _set(pod: Resource, kind: str, ready: bool, reason: str, message: str,
         stamp: str) -> bool:
    conditions = pod.status.setdefault("conditions", [])
    cond = next((c for c in conditions if c.get("type") == kind), None)
    wanted: JSON = {"type": kind, "status": str(ready)}
    if not ready:
        wanted.update(reason=reason, message=message)
    if cond is None:
        conditions.append({**wanted, "lastProbeTime": None, "lastTransitionTime": stamp})
        return True
    if all(cond.get(k) == wanted.get(k) for k in ("status", "reason", "message")):
        return False
    if cond.get("status") != wanted["status"]:
        cond["lastTransitionTime"] = stamp
    for key in ("reason", "message"):
        cond.pop(key, None)
    cond.update(wanted)
    return True


def refresh_readiness(pod: Resource, now: datetime) -> bool:
    """Set each container's ``started`` and ``ready`` and the pod's ContainersReady and
    Ready conditions of a Running pod (in place); True when something changed."""
    if pod.status.get("phase") != "Running":
        return False
    changed = False
    unready = []
    for status in [*sidecar_statuses(pod), *(pod.status.get("containerStatuses") or [])]:
        probes = probe_container(pod, status, now)
        if probes is not None and status.get("started") != probes.started:
            status["started"] = probes.started
            changed = True
        ready = _container_ready(pod, status, now, probes)
        if status.get("ready") != ready:
            status["ready"] = ready
            changed = True
        if not ready:
            unready.append(str(status.get("name", "")))
    stamp = format_time(now)
    message = f"containers with unready status: [{' '.join(unready)}]"
    changed |= _set(pod, "ContainersReady", not unready, "ContainersNotReady", message, stamp)
    gates = _gates_message(pod)
    if unready:
        changed |= _set(pod, "Ready", False, "ContainersNotReady", message, stamp)
    else:
        changed |= _set(pod, "Ready", not gates, "ReadinessGatesNotReady", gates, stamp)
    return changed
