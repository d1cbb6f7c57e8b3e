"""The READY, STATUS and RESTARTS cells of ``kubectl get pods``, by kube-apiserver's pod
printer rules (``pkg/printers/internalversion/printers.go``, printPod).

* STATUS starts as the phase (or ``status.reason``; ``SchedulingGated`` when the
  PodScheduled condition says so). The init containers are read in order: a completed
  one, or a started sidecar, is passed over; the first other one decides — a failed one
  ``Init:<reason>`` (``Init:ExitCode:<n>``/``Init:Signal:<n>`` without a reason), a
  waiting one with a reason other than PodInitializing ``Init:<reason>``
  (``Init:CrashLoopBackOff``), else ``Init:<done>/<all>``. Once no init container holds
  the pod (or ``Initialized`` is True) the app containers, last first, override it with
  a waiting reason, a terminated reason (``ExitCode:<n>``/``Signal:<n>``), and a pod
  left ``Completed`` while one still runs ready prints ``Running`` (``NotReady``
  without the Ready condition). A deleted pod prints ``Terminating`` (``Unknown`` when
  its node is unreachable) unless its phase is terminal.
* READY counts the ready app containers that run and the ready started sidecars, over
  the app containers and sidecars.
* RESTARTS sums the init containers' restarts while initializing, else the sidecars'
  and app containers'; with the age of the last restart (``3 (5s ago)``).
* READINESS GATES (``-o wide``): ``<true>/<gates>``, a gate counting when the pod's
  condition of its type is True; ``<none>`` without gates.
"""

from __future__ import annotations

import datetime
from typing import Any

from kubelet_sim.api.human_duration import human_duration
from kubelet_sim.api.model import JSON, Resource, parse_time

NODE_UNREACHABLE = "NodeLost"

__all__ = ["pod_readiness_gates", "pod_ready", "pod_restarts", "pod_status"]


def _sidecars(pod: Resource) -> set[str]:
    return {str(c.get("name")) for c in pod.spec.get("initContainers") or []
            if c.get("restartPolicy") == "Always"}


def _condition_true(pod: Resource, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in pod.status.get("conditions") or [])


def _terminated_reason(terminated: JSON, prefix: str) -> str:
    if terminated.get("reason"):
        return f"{prefix}{terminated['reason']}"
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


class _Summary:
    """One pass over the pod's statuses, as printPod makes it."""

    def __init__(self, pod: Resource) -> None:
        status = pod.status
        self.restarts = 0
        self.last_restart: datetime.datetime | None = None
        self.ready = 0
        self.total = len(pod.spec.get("containers") or []) + len(_sidecars(pod))
        reason = str(status.get("phase") or "Pending")
        if status.get("reason"):
            reason = str(status["reason"])
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
                reason = "SchedulingGated"
        sidecars = _sidecars(pod)
        sidecar_restarts, sidecar_last = 0, None
        initializing = False
        inits = status.get("initContainerStatuses") or []
        for i, container in enumerate(inits):
            self._count(container)
            if container.get("name") in sidecars:
                sidecar_restarts += int(container.get("restartCount") or 0)
                sidecar_last = _later(sidecar_last, _last_termination(container))
            state = container.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            if terminated is not None and terminated.get("exitCode") == 0:
                continue
            if container.get("name") in sidecars and container.get("started"):
                if container.get("ready"):
                    self.ready += 1
                continue
            if terminated is not None:
                reason = _terminated_reason(terminated, "Init:")
            elif waiting and waiting.get("reason") and waiting["reason"] != "PodInitializing":
                reason = f"Init:{waiting['reason']}"
            else:
                reason = f"Init:{i}/{len(pod.spec.get('initContainers') or [])}"
            initializing = True
            break
        if not initializing or _condition_true(pod, "Initialized"):
            self.restarts, self.last_restart = sidecar_restarts, sidecar_last
            running = False
            for container in reversed(status.get("containerStatuses") or []):
                self._count(container)
                state = container.get("state") or {}
                waiting, terminated = state.get("waiting"), state.get("terminated")
                if waiting and waiting.get("reason"):
                    reason = str(waiting["reason"])
                elif terminated is not None:
                    reason = _terminated_reason(terminated, "")
                elif container.get("ready") and state.get("running") is not None:
                    running = True
                    self.ready += 1
            if reason == "Completed" and running:
                reason = "Running" if _condition_true(pod, "Ready") else "NotReady"
        if pod.metadata.deletion_timestamp:
            if status.get("reason") == NODE_UNREACHABLE:
                reason = "Unknown"
            elif status.get("phase") not in ("Succeeded", "Failed"):
                reason = "Terminating"
        self.reason = reason

    def _count(self, container: JSON) -> None:
        self.restarts += int(container.get("restartCount") or 0)
        self.last_restart = _later(self.last_restart, _last_termination(container))


def _last_termination(container: JSON) -> datetime.datetime | None:
    finished = ((container.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
    return parse_time(finished) if finished else None


def _later(a: datetime.datetime | None,
           b: datetime.datetime | None) -> datetime.datetime | None:
    return b if a is None or (b is not None and b > a) else a


def pod_status(pod: Resource) -> str:
    return _Summary(pod).reason


def pod_ready(pod: Resource) -> str:
    summary = _Summary(pod)
    if pod.status.get("containerStatuses") is None and pod.status.get("phase") == "Running" \
            and _condition_true(pod, "Ready"):
        # a Running pod written without container statuses (a stand-in kubelet's): all
        return f"{summary.total}/{summary.total}"
    return f"{summary.ready}/{summary.total}"


def pod_readiness_gates(pod: Resource) -> str:
    gates = [g.get("conditionType") for g in pod.spec.get("readinessGates") or []]
    if not gates:
        return "<none>"
    return f"{sum(_condition_true(pod, str(gate)) for gate in gates)}/{len(gates)}"


def pod_restarts(pod: Resource, now: datetime.datetime | None = None) -> Any:
    summary = _Summary(pod)
    if summary.restarts and summary.last_restart is not None:
        seconds = int(((now or datetime.datetime.now(datetime.UTC))
                       - summary.last_restart).total_seconds())
        return f"{summary.restarts} ({human_duration(max(seconds, 0))} ago)"
    return summary.restarts
