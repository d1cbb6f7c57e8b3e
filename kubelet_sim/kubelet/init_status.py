"""What a pod's init containers say about it, as the kubelet's status generation reads
them (``pkg/kubelet/status/generate.go``, ``getPhase``): pure functions of the pod.

A *sidecar* is an init container with ``restartPolicy: Always`` (a restartable init
container): it counts as done once started, keeps running beside the app containers and
counts in ``ContainersReady``. A *regular* init container is done when it terminated
with exit code 0.

``Initialized`` is True once every init container is done — or once any app container
has started (a sidecar restarting later does not un-initialize the pod); else False,
reason ``ContainersNotInitialized``, ``containers with incomplete status: [a b]``.
While a pod has init containers every container the kubelet has not started waits with
reason ``PodInitializing`` (``ContainerCreating`` without init containers).
"""

from __future__ import annotations

from kubelet_sim.api.model import JSON, Resource

POD_INITIALIZING = "PodInitializing"
CONTAINER_CREATING = "ContainerCreating"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"

__all__ = ["CONTAINERS_NOT_INITIALIZED", "CONTAINER_CREATING", "POD_INITIALIZING",
           "any_app_container_started", "default_waiting_reason", "incomplete",
           "initialized", "initialized_condition", "is_sidecar", "sidecar_statuses",
           "status_of", "waiting_status"]


def is_sidecar(container: JSON | None) -> bool:
    """A restartable init container (``restartPolicy: Always``)."""
    return container is not None and container.get("restartPolicy") == "Always"


def default_waiting_reason(pod: Resource) -> str:
    """Why a container not started yet waits (the kubelet's default waiting state)."""
    return POD_INITIALIZING if pod.spec.get("initContainers") else CONTAINER_CREATING


def waiting_status(container: JSON, reason: str) -> JSON:
    """The status of a container the kubelet has not created yet."""
    return {"name": container.get("name", ""), "image": container.get("image", ""),
            "imageID": "", "ready": False, "started": False, "restartCount": 0,
            "state": {"waiting": {"reason": reason}}, "lastState": {}}


def status_of(pod: Resource, name: str, field: str = "initContainerStatuses") -> JSON | None:
    return next((s for s in pod.status.get(field) or [] if s.get("name") == name), None)


def sidecar_statuses(pod: Resource) -> list[JSON]:
    """The statuses of the pod's sidecars, in spec order."""
    names = [c.get("name") for c in pod.spec.get("initContainers") or [] if is_sidecar(c)]
    by_name = {s.get("name"): s for s in pod.status.get("initContainerStatuses") or []}
    return [by_name[n] for n in names if n in by_name]


def _done(container: JSON, status: JSON | None) -> bool:
    if status is None:
        return False
    if is_sidecar(container):
        return bool(status.get("started"))
    terminated = (status.get("state") or {}).get("terminated")
    return terminated is not None and terminated.get("exitCode") == 0


def incomplete(pod: Resource) -> list[str]:
    """The init containers not done yet, in spec order."""
    return [str(c.get("name", "")) for c in pod.spec.get("initContainers") or []
            if not _done(c, status_of(pod, str(c.get("name", ""))))]


def any_app_container_started(pod: Resource) -> bool:
    return any({"running", "terminated"} & set(s.get("state") or {})
               for s in pod.status.get("containerStatuses") or [])


def initialized(pod: Resource) -> bool:
    return not incomplete(pod) or any_app_container_started(pod)


def initialized_condition(pod: Resource) -> JSON:
    """The ``Initialized`` condition (type, status, reason, message) the pod's status
    says."""
    waiting = incomplete(pod)
    if not waiting or any_app_container_started(pod):
        return {"type": "Initialized", "status": "True"}
    return {"type": "Initialized", "status": "False", "reason": CONTAINERS_NOT_INITIALIZED,
            "message": f"containers with incomplete status: [{' '.join(waiting)}]"}
