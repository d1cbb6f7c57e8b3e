"""The pod status the kubelet's status manager writes: phase, conditions, container statuses.

Conditions are the five a current kubelet reports, in its order: PodReadyToStartContainers
(the sandbox exists and has its network), Initialized (what the init containers say,
init_status.py), ContainersReady, Ready, PodScheduled. A condition keeps its
``lastTransitionTime`` while its status does not change. Each container is ``waiting``
(ContainerCreating, or PodInitializing when the pod has init containers) until it is
started, then ``running`` since the pod started; the init containers' statuses are
written by init_containers.py and kept here. Nothing is pulled or run, so the
``containerID`` and ``imageID`` are derived from the sandbox and the image reference (the
same pod and image always give the same ids); they have the real fields' shapes. A
created container's ``image`` is the reference as containerd reports it, normalized
(``docker.io/library/nginx:latest`` for ``nginx``); a container not created yet shows the
spec's. Every status carries ``lastState``, ``{}`` until the container has terminated once.
"""

from __future__ import annotations

import hashlib

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.kubelet.init_status import (
    CONTAINER_CREATING,
    default_waiting_reason,
    initialized_condition,
    waiting_status,
)

__all__ = ["CONTAINER_CREATING", "conditions", "container_id", "image_id", "same_image",
           "status_image", "write_running", "write_waiting"]


def _transition(old: list[JSON], cond: JSON, now: str) -> JSON:
    """``cond`` with the lastTransitionTime it had when its status is unchanged."""
    before = next((c for c in old if c.get("type") == cond["type"]), None)
    kept = before is not None and before.get("status") == cond["status"]
    cond["lastTransitionTime"] = (before or {}).get("lastTransitionTime", now) if kept else now
    cond.setdefault("lastProbeTime", None)
    return cond


def conditions(pod: Resource, *, sandbox_ready: bool, ready: bool, reason: str, message: str,
               now: str) -> list[JSON]:
    old = pod.status.get("conditions") or []
    wanted: list[JSON] = [
        {"type": "PodReadyToStartContainers", "status": str(sandbox_ready)},
        initialized_condition(pod),
    ]
    for kind in ("ContainersReady", "Ready"):
        cond: JSON = {"type": kind, "status": str(ready)}
        if not ready:
            cond["reason"] = "ContainersNotReady"
            cond["message"] = f"{reason}: {message}"
        wanted.append(cond)
    wanted.append({"type": "PodScheduled", "status": "True"})
    return [_transition(old, c, now) for c in wanted]


def container_id(sandbox_id: str, name: str) -> str:
    return "containerd://" + hashlib.sha256(f"{sandbox_id}/{name}".encode()).hexdigest()


def image_id(image: str) -> str:
    """``<repository>@sha256:<digest>`` as containerd reports a pulled image: the
    repository fully qualified as the image reference is normalized (``nginx`` is
    ``docker.io/library/nginx``); the digest is derived from the reference (no image is
    pulled)."""
    repository = image.split("@", 1)[0]
    last = repository.rsplit("/", 1)[-1]
    if ":" in last:
        repository = repository[: len(repository) - len(last)] + last.split(":", 1)[0]
    return f"{_qualified(repository)}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def status_image(image: str) -> str:
    """The image reference containerd reports for a container made from ``image``, the
    status' ``image``: the repository fully qualified and, without a tag or a digest,
    the ``latest`` tag (``nginx`` is ``docker.io/library/nginx:latest``)."""
    name, at, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    repository, tag = (name[:colon], name[colon:]) if colon > slash else (name, "")
    if not tag and not at:
        tag = ":latest"
    return f"{_qualified(repository)}{tag}{at}{digest}"


def same_image(a: str, b: str) -> bool:
    """Whether two references name the same image (``nginx`` and
    ``docker.io/library/nginx:latest`` do)."""
    return status_image(a) == status_image(b)


def _qualified(repository: str) -> str:
    """Docker's reference normalization: a first component that is not a registry
    (no ``.`` or ``:``, not ``localhost``) means Docker Hub, a bare name its library."""
    first, _, rest = repository.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return repository
    return f"docker.io/{repository if rest else 'library/' + repository}"


def write_waiting(pod: Resource, *, reason: str, message: str, now: str) -> None:
    """Pending: the pod's containers wait for volumes or the sandbox (ContainerCreating)."""
    st = pod.status
    st.setdefault("phase", "Pending")
    waiting = default_waiting_reason(pod)
    if pod.spec.get("initContainers") and not st.get("initContainerStatuses"):
        st["initContainerStatuses"] = [waiting_status(c, waiting)
                                       for c in pod.spec["initContainers"]]
    st["containerStatuses"] = [waiting_status(c, waiting)
                               for c in pod.spec.get("containers", [])]
    st["conditions"] = conditions(pod, sandbox_ready=False, ready=False,
                                  reason=CONTAINER_CREATING, message=f"{reason}: {message}",
                                  now=now)


def write_running(pod: Resource, *, sandbox_id: str, host_ip: str, ips: list[str],
                  now: str) -> None:
    """Running: sandbox up with its IPs, every container started and ready."""
    st = pod.status
    st["phase"] = "Running"
    st["hostIP"] = host_ip
    if host_ip:
        st["hostIPs"] = [{"ip": host_ip}]
    if ips:
        st["podIP"] = ips[0]
        st["podIPs"] = [{"ip": ip} for ip in ips]
    st.setdefault("startTime", now)
    st["containerStatuses"] = [
        {"name": c.get("name", ""), "image": status_image(c.get("image", "")),
         "imageID": image_id(c.get("image", "")), "lastState": {},
         "containerID": container_id(sandbox_id, c.get("name", "")),
         "ready": True, "started": True, "restartCount": 0,
         "state": {"running": {"startedAt": now}}}
        for c in pod.spec.get("containers", [])
    ]
    st["conditions"] = conditions(pod, sandbox_ready=True, ready=True, reason="", message="",
                                  now=now)
