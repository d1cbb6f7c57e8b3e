"""Containers killed for failing their liveness or startup probe, as the kubelet's
``computePodActions`` does once the prober's result for them is Failure (prober.py).

The kill is a ``Killing`` event ("Container <c> failed liveness probe, will be restarted",
or "... startup probe ..."; without ", will be restarted" under ``restartPolicy: Never``),
and the container ends as on any stop by the kubelet: the simulated process ends on
SIGTERM (exit code 0, ``Completed``; see image_change.py), at the probe that failed.
Under ``Always`` or ``OnFailure`` (whatever the exit code, as the kubelet restarts a
container it killed for a probe) it becomes ``lastState`` and the container restarts with
the kubelet's back-off (crash_loop_backoff.py): at once, ``restartCount`` up by one, or
after waiting ``CrashLoopBackOff`` (a ``BackOff`` event; container_exit.py restarts it when
the wait is over). Under ``Never`` the container stays ``terminated``, and once every
container has ended the pod ends.
"""

from __future__ import annotations

from datetime import datetime

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.container_events import ContainerEvent, pull_policy, record_events
from kubelet_sim.kubelet.container_exit import Exits, end_pod, restart_container
from kubelet_sim.kubelet.crash_loop_backoff import (
    CRASH_LOOP_BACK_OFF,
    CrashLoopBackOff,
    back_off_event,
    back_off_message,
)
from kubelet_sim.kubelet.observed_generation import observe
from kubelet_sim.kubelet.prober import has_probes, probe_container
from kubelet_sim.kubelet.readiness import refresh_readiness


def kill_message(container: str, probe_type: str, restart: bool) -> str:
    message = f"Container {container} failed {probe_type} probe"
    return f"{message}, will be restarted" if restart else message


def kill_failed(pod: Resource, now: datetime, backoff: CrashLoopBackOff) -> Exits:
    """Kill (in place, on ``pod.status``) the running containers whose liveness or startup
    probe failed by ``now``, and restart them as the ``restartPolicy`` says."""
    out = Exits()
    if pod.status.get("phase") != "Running":
        return out
    restart = pod.spec.get("restartPolicy", "Always") != "Never"
    images = {c.get("name"): str(c.get("image", "")) for c in pod.spec.get("containers") or []}
    statuses = pod.status.get("containerStatuses") or []
    for status in statuses:
        probes = probe_container(pod, status, now)
        kill = probes.kill() if probes is not None else None
        if kill is None:
            continue
        probe_type, killed_at = kill
        name = str(status.get("name", ""))
        out.changed = True
        out.events.append(ContainerEvent(name, "Killing", kill_message(name, probe_type, restart)))
        terminated = {"exitCode": 0, "reason": "Completed",
                      "startedAt": status["state"]["running"]["startedAt"],
                      "finishedAt": format_time(killed_at),
                      "containerID": status.get("containerID", "")}
        if not restart:
            status.update(state={"terminated": terminated}, ready=False, started=False)
            continue
        status["lastState"] = {"terminated": terminated}
        key = (pod.metadata.uid, name, images.get(name, ""))
        delay = backoff.waiting(key, killed_at, now)
        if delay is None:
            out.restarts.append((key, killed_at))
            out.events += restart_container(status, key[2], now, pull_policy(pod, name))
            continue
        waiting = {"reason": CRASH_LOOP_BACK_OFF, "message": back_off_message(delay, name, pod)}
        status.update(state={"waiting": waiting}, ready=False, started=False)
        out.events.append(ContainerEvent(name, "BackOff", back_off_event(name, pod),
                                         warning=True))
    if not out.changed:
        return out
    ended = [(s.get("state") or {}).get("terminated") for s in statuses]
    if all(ended):
        end_pod(pod, all(t.get("exitCode") == 0 for t in ended if t), now)
    else:
        refresh_readiness(pod, now)
    return out


async def kill_failed_containers(client: KubeClient, pod: Resource, now: datetime,
                                 backoff: CrashLoopBackOff, recorder: EventRecorder,
                                 node: str) -> bool:
    """Write the probe kills of ``pod`` that are due (and record their events); True when
    written."""
    containers = pod.spec.get("containers") or []
    if pod.status.get("phase") != "Running" or not any(has_probes(c) for c in containers):
        return False
    if not kill_failed(pod.copy(), now, backoff):  # a look, on a copy (waiting only reads)
        return False
    done: list[Exits] = []

    async def write() -> bool:
        done.clear()
        try:
            current = await client.get("Pod", pod.name, pod.namespace)
        except NotFound:
            return False
        if current.metadata.uid != pod.metadata.uid:
            return False
        out = kill_failed(current, now, backoff)
        if not out:
            return False
        observe(current)
        await client.update_status(current)
        done.append(out)
        return True

    if not await retry_on_conflict_async(write):
        return False
    done[-1].commit(backoff)
    record_events(recorder, pod, node, done[-1].events)
    return True
