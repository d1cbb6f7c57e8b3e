"""``spec.activeDeadlineSeconds``: a pod active on the node longer than that (counted from
``status.startTime``) is failed by the kubelet — phase ``Failed``, reason
``DeadlineExceeded``, its message, a ``DeadlineExceeded`` event, its containers killed
(``terminated`` with exit code 137, reason ``Error``; a running init container or sidecar
too); the kubelet then stops the sandbox
(CNI DEL) and unmounts the volumes as for any finished pod."""

from __future__ import annotations

from datetime import datetime, timedelta

from kubelet_sim.api.model import Resource, format_time, parse_time

DEADLINE_EXCEEDED = "DeadlineExceeded"
DEADLINE_MESSAGE = "Pod was active on the node longer than the specified deadline"


def past_deadline(pod: Resource, now: datetime) -> bool:
    seconds = pod.spec.get("activeDeadlineSeconds")
    started = pod.status.get("startTime")
    if not isinstance(seconds, int) or not started or \
            pod.status.get("phase") in ("Succeeded", "Failed"):
        return False
    return parse_time(started) + timedelta(seconds=seconds) <= now


def fail_past_deadline(pod: Resource, now: datetime) -> bool:
    """Fail the pod (in place) when its deadline passed; True when it did."""
    if not past_deadline(pod, now):
        return False
    stamp = format_time(now)
    st = pod.status
    st.update(phase="Failed", reason=DEADLINE_EXCEEDED, message=DEADLINE_MESSAGE)
    running_inits = [s for s in st.get("initContainerStatuses") or []
                     if "running" in (s.get("state") or {})]
    for status in [*running_inits, *(st.get("containerStatuses") or [])]:
        running = (status.get("state") or {}).get("running")
        terminated = {"exitCode": 137, "reason": "Error", "finishedAt": stamp,
                      "startedAt": (running or {}).get("startedAt", stamp)}
        if status.get("containerID"):
            terminated["containerID"] = status["containerID"]
        if running is not None or "waiting" in (status.get("state") or {}):
            status.update(state={"terminated": terminated}, ready=False, started=False)
    for cond in st.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            if cond.get("status") != "False":
                cond["lastTransitionTime"] = stamp
            cond.update(status="False", reason="PodFailed")
            cond.pop("message", None)
    return True
