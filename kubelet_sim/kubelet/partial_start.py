"""A pod some of whose containers cannot be created yet (CreateContainerConfigError: a
ConfigMap or Secret their environment names is missing), as the kubelet v1.35 runs it:
SyncPod starts each container it has to start, collecting the errors and going on, so
the other containers are created and started (Pulled, Created, Started) while the
failing ones wait; the phase is what getPhase says for that mix (a regular container
waiting without having ever run keeps the pod Pending). Once the object appears the
waiting containers start too, and the ones already running keep their start time.

This module writes the status of such a start (container_events.containers_started
records its events); the kubelet (kubelet.py) decides when."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.kubelet.container_config import CREATE_CONTAINER_CONFIG_ERROR
from kubelet_sim.kubelet.pod_status import conditions, write_running

__all__ = ["pod_phase", "write_started"]


def pod_phase(pod: Resource) -> str:
    """The phase getPhase gives for the regular containers' states (init containers
    are not looked at here)."""
    statuses = {s.get("name"): s for s in pod.status.get("containerStatuses") or []}
    running = waiting = stopped = succeeded = unknown = 0
    for container in pod.spec.get("containers") or []:
        status = statuses.get(container.get("name"))
        state = (status or {}).get("state") or {}
        if status is None or not state:
            unknown += 1
        elif "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        elif ((status.get("lastState") or {}).get("terminated")) is not None:
            stopped += 1  # waiting to run again
        else:
            waiting += 1
    policy = pod.spec.get("restartPolicy", "Always")
    if waiting:
        return "Pending"
    if running and not unknown:
        return "Running"
    if stopped and not running and not unknown:
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        return "Failed" if policy == "Never" else "Running"
    return "Pending"


def write_started(pod: Resource, *, errors: dict[str, str], sandbox_id: str, host_ip: str,
                  ips: list[str], now: str) -> None:
    """The status once the sandbox runs and every container that can be is started: the
    containers in ``errors`` wait with CreateContainerConfigError and the kubelet's
    message (never created: the spec's image), a container already running keeps its
    state, and with any waiting the phase follows getPhase and the pod is not ready."""
    before = {s.get("name"): s for s in pod.status.get("containerStatuses") or []}
    spec_images = {c.get("name"): c.get("image", "") for c in pod.spec.get("containers") or []}
    conditions_before = pod.status.get("conditions") or []
    write_running(pod, sandbox_id=sandbox_id, host_ip=host_ip, ips=ips, now=now)
    for status in pod.status["containerStatuses"]:
        name = status.get("name", "")
        if name in errors:
            status.pop("containerID", None)
            status.update(image=spec_images.get(name, ""), imageID="", ready=False,
                          started=False, state={"waiting": {
                "reason": CREATE_CONTAINER_CONFIG_ERROR, "message": errors[name]}})
            continue
        old = before.get(name) or {}
        if old.get("containerID") == status.get("containerID") and \
                "running" in (old.get("state") or {}):
            status["state"] = old["state"]
    if not errors:
        return
    pod.status["phase"] = pod_phase(pod)
    pod.status["conditions"] = conditions_before  # what the transitions are told from
    pod.status["conditions"] = conditions(pod, sandbox_ready=True, ready=False, reason="",
                                          message="", now=now)
    unready = " ".join(str(s.get("name", "")) for s in pod.status["containerStatuses"]
                       if not s.get("ready"))
    for cond in pod.status["conditions"]:
        if cond["type"] in ("ContainersReady", "Ready"):
            cond["message"] = f"containers with unready status: [{unready}]"
