"""The kubelet running a pod's init containers, once its sandbox is up and before any app
container (``computePodActions``' init container rules).

Each sync moves the pod one step on, in spec order: a regular init container is started
(Pulled/Created/Started events, ``running``, ``started`` true), exits when its plan says
(exit_plans.py: at once with code 0 by default) and is ``terminated`` ``Completed``
(``ready`` true); then the next one starts. A failed one (non-zero code) under the pod's
``restartPolicy: Never`` fails the pod (phase ``Failed``, the app containers never
started, a running sidecar stopped); under ``OnFailure`` or ``Always`` it is restarted
with the kubelet's back-off (``lastState``, ``restartCount``, ``CrashLoopBackOff``). A
sidecar (``restartPolicy: Always`` on the init container) counts as done once started
(running, and its startup probe, if any, succeeded: prober.py), so the next init
container starts on the next step; it keeps running, restarted with back-off whenever it
exits, beside the app containers (container_exit.py from then on). An init container
whose environment names a missing ConfigMap or Secret waits ``CreateContainerConfigError``
until it exists.

Meanwhile the pod is ``Pending`` with its IPs and ``startTime``, ``Initialized`` False
(init_status.py), the app containers waiting ``PodInitializing``, ContainersReady and
Ready False listing the unready sidecars and app containers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.kubelet.container_config import (
    CREATE_CONTAINER_CONFIG_ERROR,
    Lookup,
    container_config_error,
)
from kubelet_sim.kubelet.container_events import (
    config_error_events,
    pull_policy,
    start_events,
)
from kubelet_sim.kubelet.container_exit import Exits, advance_container, stop_sidecars
from kubelet_sim.kubelet.crash_loop_backoff import CrashLoopBackOff
from kubelet_sim.kubelet.exit_plans import init_container_plan
from kubelet_sim.kubelet.init_status import (
    POD_INITIALIZING,
    incomplete,
    is_sidecar,
    sidecar_statuses,
    waiting_status,
)
from kubelet_sim.kubelet.observed_generation import observe
from kubelet_sim.kubelet.pod_status import conditions, container_id, image_id, status_image
from kubelet_sim.kubelet.prober import probe_container
from kubelet_sim.kubelet.readiness import container_ready

__all__ = ["InitStep", "advance_init", "run_init_step", "write_initializing"]


@dataclass
class InitStep(Exits):
    """What :func:`advance_init` did: :class:`Exits` (events, back-off restarts), and
    whether the pod is initialized now, failed (``restartPolicy: Never``) or waits for
    a ConfigMap or Secret its next init container's environment names."""

    done: bool = False
    failed: bool = False
    config_wait: bool = False


def _start(status: JSON, sandbox_id: str, image: str, now: datetime) -> None:
    name = str(status.get("name", ""))
    status.update(image=status_image(image), imageID=image_id(image),
                  containerID=container_id(sandbox_id, name), started=True, ready=False,
                  state={"running": {"startedAt": format_time(now)}})


def advance_init(pod: Resource, *, sandbox_id: str, now: datetime, backoff: CrashLoopBackOff,
                 config_error: Callable[[JSON], str | None] | None = None) -> InitStep:
    """One step of the pod's init containers, in place on ``pod.status``
    (``initContainerStatuses`` and, when one failed under ``Never``, the phase).
    ``config_error`` says why a container cannot be created (container_config.py): the
    init container waits ``CreateContainerConfigError`` then, with a Failed event."""
    out = InitStep()
    policy = "Never" if pod.spec.get("restartPolicy") == "Never" else "OnFailure"
    containers = pod.spec.get("initContainers") or []
    known = {s.get("name"): s for s in pod.status.get("initContainerStatuses") or []}
    statuses = [known.get(c.get("name")) or waiting_status(c, POD_INITIALIZING)
                for c in containers]
    pod.status["initContainerStatuses"] = statuses
    for container, status in zip(containers, statuses, strict=True):
        name, image = str(container.get("name", "")), str(container.get("image", ""))
        sidecar = is_sidecar(container)
        state = status.get("state") or {}
        terminated = state.get("terminated")
        if terminated is not None and (terminated.get("exitCode") == 0 or sidecar):
            continue  # done (a sidecar is terminated only once the pod ends)
        if terminated is not None:  # failed under Never
            out.failed = True
            break
        if not status.get("containerID"):  # never started: its turn
            message = config_error(container) if config_error is not None else None
            if message is not None:
                _wait_for_config(pod, status, message, out)
            elif not out.changed:
                _start(status, sandbox_id, image, now)
                if sidecar:  # started once its startup probe (if any) succeeds
                    probes = probe_container(pod, status, now)
                    status["started"] = probes.started if probes is not None else True
                    status["ready"] = container_ready(pod, status, now)
                out.events += start_events(name, image, pull_policy(pod, name))
                out.changed = True
            break
        advance_container(pod, status, plan=init_container_plan(pod, name),
                          policy="Always" if sidecar else policy, image=image, now=now,
                          backoff=backoff, out=out)
        state = status.get("state") or {}
        if sidecar:
            probes = probe_container(pod, status, now)
            if probes is not None and status.get("started") != probes.started:
                status["started"], out.changed = probes.started, True
            ready = container_ready(pod, status, now)
            if status.get("ready") != ready:
                status["ready"], out.changed = ready, True
            if status.get("started"):
                continue
            break
        terminated = state.get("terminated")
        if terminated is None:
            break  # running, or backing off: the ones after it wait
        if terminated.get("exitCode") != 0:
            out.failed = True
            break
        status["ready"] = True
    out.changed |= len(known) != len(containers)
    out.done = not out.failed and not incomplete(pod)
    if out.failed and pod.status.get("phase") != "Failed":
        out.events += stop_sidecars(pod, format_time(now))
        out.changed = True
    return out


def _wait_for_config(pod: Resource, status: JSON, message: str, out: InitStep) -> None:
    out.config_wait = True
    waiting = {"reason": CREATE_CONTAINER_CONFIG_ERROR, "message": message}
    if status.get("state") != {"waiting": waiting}:
        status["state"] = {"waiting": waiting}
        out.events += config_error_events(pod, str(status.get("name", "")), message)
        out.changed = True


def write_initializing(pod: Resource, step: InitStep, *, host_ip: str, ips: list[str],
                       now: str) -> None:
    """The status of a pod whose init containers run (``advance_init`` filled their
    statuses): Pending — or Failed — with its IPs, the app containers waiting."""
    st = pod.status
    st["phase"] = "Failed" if step.failed else "Pending"
    if host_ip:
        st["hostIP"], st["hostIPs"] = host_ip, [{"ip": host_ip}]
    if ips:
        st["podIP"], st["podIPs"] = ips[0], [{"ip": ip} for ip in ips]
    st.setdefault("startTime", now)
    known = {s.get("name"): s for s in st.get("containerStatuses") or []}
    st["containerStatuses"] = [known.get(c.get("name")) or waiting_status(c, POD_INITIALIZING)
                               for c in pod.spec.get("containers") or []]
    unready = [str(s.get("name", "")) for s in sidecar_statuses(pod) if not s.get("ready")]
    unready += [str(c.get("name", "")) for c in pod.spec.get("containers") or []]
    st["conditions"] = conditions(pod, sandbox_ready=True, ready=False, reason="", message="",
                                  now=now)
    for cond in st["conditions"]:
        if cond["type"] in ("ContainersReady", "Ready"):
            if step.failed:
                cond["reason"] = "PodFailed"
                cond.pop("message", None)
            else:
                cond["message"] = f"containers with unready status: [{' '.join(unready)}]"


async def run_init_step(client: KubeClient, pod: Resource, *, sandbox_id: str, host_ip: str,
                        ips: list[str], now: datetime, backoff: CrashLoopBackOff,
                        lookup: Lookup) -> InitStep:
    """Move the pod's init containers one step on and write its status when something
    moved (retried on a conflict; the back-off's restarts counted once written). The
    events to record are the returned step's; nothing when the pod is gone."""
    steps: list[InitStep] = []

    async def write() -> None:
        steps.clear()
        current = await client.get("Pod", pod.name, pod.namespace)
        if current.metadata.uid != pod.metadata.uid:
            return
        step = advance_init(current, sandbox_id=sandbox_id, now=now, backoff=backoff,
                            config_error=lambda c: container_config_error(current, c, lookup))
        if step.changed:
            write_initializing(current, step, host_ip=host_ip, ips=ips, now=format_time(now))
            observe(current)
            await client.update_status(current)
        steps.append(step)
    try:
        await retry_on_conflict_async(write)
    except NotFound:
        return InitStep()
    step = steps[-1] if steps else InitStep()
    if step.changed:
        step.commit(backoff)
    return step
