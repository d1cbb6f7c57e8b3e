"""A container's simulated exit (exit_plans.py says when and with which code) and what
the kubelet does then.

An app container follows the pod's ``restartPolicy``: ``Never``, or ``OnFailure`` with
code 0, leaves the container ``terminated`` (reason ``Completed`` or ``Error``); once
every app container is, the pod ends (``Succeeded`` when all exited 0, ``Failed``
otherwise; the Ready conditions False with reason ``PodCompleted`` or ``PodFailed``; its
sidecars are stopped — a ``Killing`` event each, ``terminated`` with exit code 0 as the
simulated process ends on SIGTERM — and the kubelet then stops the sandbox, CNI DEL, and
unmounts the volumes, while the pod stays in the API). A sidecar never holds the pod
up.
``Always``, or ``OnFailure`` with a non-zero code, restarts the container with the
kubelet's back-off (crash_loop_backoff.py): ``lastState`` the termination, and either at
once (``restartCount`` up by one, Pulled/Created/Started events) or after waiting
``CrashLoopBackOff`` (a ``BackOff`` warning event). A sidecar is restarted so whatever
its code or the pod's policy.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.container_events import (
    ContainerEvent,
    pull_policy,
    record_events,
    start_events,
)
from kubelet_sim.kubelet.crash_loop_backoff import (
    CRASH_LOOP_BACK_OFF,
    CrashLoopBackOff,
    Key,
    back_off_event,
    back_off_message,
)
from kubelet_sim.kubelet.exit_plans import (
    EXIT_AFTER,
    EXIT_CODE,
    Plan,
    container_plan,
    has_exit_plans,
    init_container_plan,
)
from kubelet_sim.kubelet.go_duration import parse_duration
from kubelet_sim.kubelet.init_status import sidecar_statuses
from kubelet_sim.kubelet.observed_generation import observe
from kubelet_sim.kubelet.readiness import refresh_readiness

__all__ = ["EXIT_AFTER", "EXIT_CODE", "Exits", "advance_container", "end_pod",
           "exit_due_containers", "exited", "parse_duration", "restart_container"]


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


def restart_container(status: JSON, image: str, now: datetime,
                      policy: str | None = None) -> list[ContainerEvent]:
    """Start the container of ``status`` again (a new container id, ``restartCount`` up
    by one); the events of its start (``policy``: its imagePullPolicy)."""
    count = int(status.get("restartCount") or 0) + 1
    old_id = str(status.get("containerID", ""))
    status.update(restartCount=count, started=True,
                  state={"running": {"startedAt": format_time(now)}})
    if old_id:
        digest = hashlib.sha256(f"{old_id}/{count}".encode()).hexdigest()
        status["containerID"] = "containerd://" + digest
    return start_events(str(status.get("name", "")), image, policy)


def _restarts(policy: str, code: int) -> bool:
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def advance_container(pod: Resource, status: JSON, *, plan: Plan | None, policy: str,
                      image: str, now: datetime, backoff: CrashLoopBackOff, out: Exits) -> None:
    """One container's due exit (``plan``) and restart under ``policy``, in place on its
    ``status``; what changed is added to ``out``."""
    name = str(status.get("name", ""))
    state = status.get("state") or {}
    key = (pod.metadata.uid, name, image)
    if "running" in state:
        if plan is None:
            return
        after, code = plan
        started = parse_time(state["running"]["startedAt"])
        exited_at = started + timedelta(seconds=after)
        if exited_at > now:
            return
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": state["running"]["startedAt"],
                      "finishedAt": format_time(exited_at),
                      "containerID": status.get("containerID", "")}
        out.changed = True
        if not _restarts(policy, code):
            status.update(state={"terminated": terminated}, ready=False, started=False)
            return
        status["lastState"] = {"terminated": terminated}
    elif (state.get("waiting") or {}).get("reason") == CRASH_LOOP_BACK_OFF:
        finished = ((status.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if not finished:
            return
        exited_at = parse_time(finished)
    else:
        return
    delay = backoff.waiting(key, exited_at, now)
    if delay is None:
        out.restarts.append((key, exited_at))
        out.events += restart_container(status, image, now, pull_policy(pod, name))
        out.changed = True
        return
    waiting = {"reason": CRASH_LOOP_BACK_OFF, "message": back_off_message(delay, name, pod)}
    if status.get("state") != {"waiting": waiting}:
        status.update(state={"waiting": waiting}, ready=False, started=False)
        out.events.append(ContainerEvent(name, "BackOff", back_off_event(name, pod),
                                         warning=True))
        out.changed = True


def exited(pod: Resource, now: datetime, backoff: CrashLoopBackOff | None = None) -> Exits:
    """Let the running pod's app containers and sidecars exit when their time is up, and
    restart those whose back-off is over (in place, on ``pod.status``)."""
    out = Exits()
    if pod.status.get("phase") != "Running":
        return out
    backoff = backoff or CrashLoopBackOff()
    policy = pod.spec.get("restartPolicy", "Always")
    images = {c.get("name"): str(c.get("image", ""))
              for field in ("initContainers", "containers") for c in pod.spec.get(field) or []}
    statuses = pod.status.get("containerStatuses") or []
    for status in statuses:
        name = str(status.get("name", ""))
        advance_container(pod, status, plan=container_plan(pod, name), policy=policy,
                          image=images.get(name, ""), now=now, backoff=backoff, out=out)
    for status in sidecar_statuses(pod):
        name = str(status.get("name", ""))
        advance_container(pod, status, plan=init_container_plan(pod, name), policy="Always",
                          image=images.get(name, ""), now=now, backoff=backoff, out=out)
    if not out.changed:
        return out
    ended = [(s.get("state") or {}).get("terminated") for s in statuses]
    if all(ended):
        stamp = format_time(now)
        out.events += stop_sidecars(pod, stamp)
        _end(pod, all(t.get("exitCode") == 0 for t in ended if t), stamp)
    else:
        refresh_readiness(pod, now)
    return out


def stop_sidecars(pod: Resource, stamp: str) -> list[ContainerEvent]:
    """Stop the pod's sidecars, last first, once its app containers are done (in place):
    each ``terminated`` with code 0 (the simulated process ends on SIGTERM); the Killing
    events."""
    events = []
    for status in reversed(sidecar_statuses(pod)):
        name = str(status.get("name", ""))
        state = status.get("state") or {}
        if "terminated" in state:
            continue
        running = state.get("running") or {}
        terminated = {"exitCode": 0, "reason": "Completed",
                      "startedAt": running.get("startedAt", stamp), "finishedAt": stamp}
        if status.get("containerID"):
            terminated["containerID"] = status["containerID"]
        status.update(state={"terminated": terminated}, ready=False, started=False)
        if running:
            events.append(ContainerEvent(name, "Killing", f"Stopping container {name}"))
    return events


def _end(pod: Resource, succeeded: bool, stamp: str) -> None:
    pod.status["phase"] = "Succeeded" if succeeded else "Failed"
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            if cond.get("status") != "False":
                cond["lastTransitionTime"] = stamp
            cond.update(status="False", reason="PodCompleted" if succeeded else "PodFailed")
            cond.pop("message", None)
        elif cond.get("type") == "Initialized" and succeeded and \
                pod.spec.get("initContainers"):
            cond["reason"] = "PodCompleted"


def _backing_off(pod: Resource) -> bool:
    """Whether a container or sidecar waits out a back-off (after a liveness kill, say)."""
    return any(((s.get("state") or {}).get("waiting") or {}).get("reason")
               == CRASH_LOOP_BACK_OFF
               for s in [*sidecar_statuses(pod), *(pod.status.get("containerStatuses") or [])])


def end_pod(pod: Resource, succeeded: bool, now: datetime) -> None:
    """Every container of ``pod`` ended: the pod's phase and Ready conditions say so."""
    _end(pod, succeeded, format_time(now))


async def exit_due_containers(client: KubeClient, pod: Resource, now: datetime,
                              backoff: CrashLoopBackOff | None = None,
                              recorder: EventRecorder | None = None, node: str = "") -> bool:
    """Write the exits and restarts of ``pod``'s containers that are due (and record
    their events); True when written."""
    backoff = backoff or CrashLoopBackOff()
    if (not has_exit_plans(pod) and not _backing_off(pod)) or \
            not exited(pod.copy(), now, backoff):
        return False
    done: list[Exits] = []

    async def write() -> bool:
        try:
            current = await client.get("Pod", pod.name, pod.namespace)
        except NotFound:
            return False
        out = exited(current, now, backoff)
        if current.metadata.uid != pod.metadata.uid or not out:
            return False
        observe(current)
        await client.update_status(current)
        done.append(out)
        return True

    if not await retry_on_conflict_async(write):
        return False
    done[-1].commit(backoff)
    if recorder is not None:
        record_events(recorder, pod, node, done[-1].events)
    return True
