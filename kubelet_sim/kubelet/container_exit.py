"""A container's simulated exit: nothing runs in the simulated containers, so by default
they run until the pod is deleted. Two pod annotations make them exit:

* ``sim.cni-csi-mini.io/exit-after``: a Go duration (``5s``, ``1m30s``, ``500ms``) after
  each container (re)started;
* ``sim.cni-csi-mini.io/exit-code``: the exit code (default 0).

The kubelet then follows the pod's ``restartPolicy``: ``Never``, or ``OnFailure`` with
code 0, leaves the container ``terminated`` (reason ``Completed`` or ``Error``); once
every container is, the pod ends (``Succeeded`` when all exited 0, ``Failed``
otherwise; the Ready conditions False with reason ``PodCompleted`` or ``PodFailed``; the
kubelet then stops the sandbox, CNI DEL, and unmounts the volumes, while the pod stays in
the API).
``Always``, or ``OnFailure`` with a non-zero code, restarts the container with the
kubelet's back-off (crash_loop_backoff.py): ``lastState`` the termination, and either at
once (``restartCount`` up by one, Pulled/Created/Started events) or after waiting
``CrashLoopBackOff`` (a ``BackOff`` warning event).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.retry import retry_on_conflict
from kubelet_sim.kubelet.container_events import ContainerEvent, record_events, start_events
from kubelet_sim.kubelet.crash_loop_backoff import (
    CRASH_LOOP_BACK_OFF,
    CrashLoopBackOff,
    Key,
    back_off_event,
    back_off_message,
)
from kubelet_sim.kubelet.go_duration import parse_duration
from kubelet_sim.kubelet.readiness import refresh_readiness

EXIT_AFTER = "sim.cni-csi-mini.io/exit-after"
EXIT_CODE = "sim.cni-csi-mini.io/exit-code"

__all__ = ["EXIT_AFTER", "EXIT_CODE", "Exits", "end_pod", "exit_due_containers", "exit_plan",
           "exited", "parse_duration", "restart_container"]


def exit_plan(pod: Resource) -> tuple[float, int] | None:
    """(seconds after start, exit code) the annotations ask for; None: runs on."""
    after = parse_duration(pod.metadata.annotations.get(EXIT_AFTER, ""))
    if after is None:
        return None
    try:
        code = int(pod.metadata.annotations.get(EXIT_CODE, "0"))
    except ValueError:
        code = 1
    return after, code


@dataclass
class Exits:
    """What :func:`exited` changed: the events to record once written, and the restarts
    the back-off must count (applied by :meth:`commit`, after the write)."""

    changed: bool = False
    events: list[ContainerEvent] = field(default_factory=list)
    restarts: list[tuple[Key, datetime]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.changed

    def commit(self, backoff: CrashLoopBackOff) -> None:
        for key, exited_at in self.restarts:
            backoff.restarted(key, exited_at)


def restart_container(status: JSON, image: str, now: datetime) -> list[ContainerEvent]:
    """Start the container of ``status`` again (a new container id, ``restartCount`` up
    by one); the events of its start."""
    count = int(status.get("restartCount") or 0) + 1
    old_id = str(status.get("containerID", ""))
    status.update(restartCount=count, started=True,
                  state={"running": {"startedAt": format_time(now)}})
    if old_id:
        digest = hashlib.sha256(f"{old_id}/{count}".encode()).hexdigest()
        status["containerID"] = "containerd://" + digest
    return start_events(str(status.get("name", "")), image)


def exited(pod: Resource, now: datetime, backoff: CrashLoopBackOff | None = None) -> Exits:
    """Let the pod's running containers exit when their time is up, and restart those
    whose back-off is over (in place, on ``pod.status``)."""
    out = Exits()
    plan = exit_plan(pod)
    if pod.status.get("phase") != "Running":
        return out
    # without the annotations only a back-off (after a liveness kill) is waited out
    after, code = plan if plan is not None else (0.0, 0)
    backoff = backoff or CrashLoopBackOff()
    policy = pod.spec.get("restartPolicy", "Always")
    images = {c.get("name"): str(c.get("image", "")) for c in pod.spec.get("containers") or []}
    statuses = pod.status.get("containerStatuses") or []
    for status in statuses:
        name = str(status.get("name", ""))
        state = status.get("state") or {}
        key = (pod.metadata.uid, name, images.get(name, ""))
        if "running" in state:
            if plan is None:
                continue
            started = parse_time(state["running"]["startedAt"])
            exited_at = started + timedelta(seconds=after)
            if exited_at > now:
                continue
            terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                          "startedAt": state["running"]["startedAt"],
                          "finishedAt": format_time(exited_at),
                          "containerID": status.get("containerID", "")}
            out.changed = True
            if not (policy == "Always" or (policy == "OnFailure" and code != 0)):
                status.update(state={"terminated": terminated}, ready=False, started=False)
                continue
            status["lastState"] = {"terminated": terminated}
        elif (state.get("waiting") or {}).get("reason") == CRASH_LOOP_BACK_OFF:
            finished = ((status.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
            if not finished:
                continue
            exited_at = parse_time(finished)
        else:
            continue
        delay = backoff.waiting(key, exited_at, now)
        if delay is None:
            out.restarts.append((key, exited_at))
            out.events += restart_container(status, key[2], now)
            out.changed = True
            continue
        waiting = {"reason": CRASH_LOOP_BACK_OFF, "message": back_off_message(delay, name, pod)}
        if status.get("state") != {"waiting": waiting}:
            status.update(state={"waiting": waiting}, ready=False, started=False)
            out.events.append(ContainerEvent(name, "BackOff", back_off_event(name, pod),
                                             warning=True))
            out.changed = True
    if not out.changed:
        return out
    ended = [(s.get("state") or {}).get("terminated") for s in statuses]
    if all(ended):
        _end(pod, all(t.get("exitCode") == 0 for t in ended if t), format_time(now))
    else:
        refresh_readiness(pod, now)
    return out


def _end(pod: Resource, succeeded: bool, stamp: str) -> None:
    pod.status["phase"] = "Succeeded" if succeeded else "Failed"
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            if cond.get("status") != "False":
                cond["lastTransitionTime"] = stamp
            cond.update(status="False", reason="PodCompleted" if succeeded else "PodFailed")
            cond.pop("message", None)


def _backing_off(pod: Resource) -> bool:
    return any(((s.get("state") or {}).get("waiting") or {}).get("reason")
               == CRASH_LOOP_BACK_OFF for s in pod.status.get("containerStatuses") or [])


def end_pod(pod: Resource, succeeded: bool, now: datetime) -> None:
    """Every container of ``pod`` ended: the pod's phase and Ready conditions say so."""
    _end(pod, succeeded, format_time(now))


def exit_due_containers(api: APIServer, pod: Resource, now: datetime,
                        backoff: CrashLoopBackOff | None = None,
                        recorder: EventRecorder | None = None, node: str = "") -> bool:
    """Write the exits and restarts of ``pod``'s containers that are due (and record
    their events); True when written."""
    backoff = backoff or CrashLoopBackOff()
    if (exit_plan(pod) is None and not _backing_off(pod)) or \
            not exited(pod.copy(), now, backoff):
        return False
    done: list[Exits] = []

    def write() -> bool:
        try:
            current = api.get("Pod", pod.name, pod.namespace)
        except NotFound:
            return False
        out = exited(current, now, backoff)
        if current.metadata.uid != pod.metadata.uid or not out:
            return False
        api.update_status(current)
        done.append(out)
        return True

    if not retry_on_conflict(write):
        return False
    done[-1].commit(backoff)
    if recorder is not None:
        record_events(recorder, pod, node, done[-1].events)
    return True
