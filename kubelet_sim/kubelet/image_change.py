"""A container whose image changed in the pod's spec (``kubectl set image``, a patch of
``spec.containers[*].image``) is restarted, whatever the ``restartPolicy``, as the kubelet
does for a changed container definition: a ``Killing`` event ("Container <c> definition
changed, will be restarted"), the old container ``lastState`` terminated (exit code 0,
``Completed``: the simulated process ends on SIGTERM), then Pulled, Created, Started with
the new image; ``restartCount`` up by one and the status ``image``/``imageID`` the new
one's."""

from __future__ import annotations

from datetime import datetime

from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.kubelet.container_events import ContainerEvent, pull_policy
from kubelet_sim.kubelet.container_exit import restart_container
from kubelet_sim.kubelet.init_status import is_sidecar, sidecar_statuses
from kubelet_sim.kubelet.pod_status import image_id, same_image, status_image
from kubelet_sim.kubelet.readiness import refresh_readiness


def restart_changed(pod: Resource, now: datetime) -> list[ContainerEvent]:
    """Restart (in place, on ``pod.status``) the containers of a Running pod whose image
    is not the spec's; their events, empty when none changed."""
    if pod.status.get("phase") != "Running":
        return []
    wanted = {c.get("name"): str(c.get("image", ""))
              for c in [*(pod.spec.get("containers") or []),
                        *(c for c in pod.spec.get("initContainers") or [] if is_sidecar(c))]}
    events: list[ContainerEvent] = []
    stamp = format_time(now)
    for status in [*sidecar_statuses(pod), *(pod.status.get("containerStatuses") or [])]:
        name = str(status.get("name", ""))
        image = wanted.get(name)
        state = status.get("state") or {}
        if image is None or same_image(str(status.get("image", "")), image) or \
                "terminated" in state:
            continue
        events.append(ContainerEvent(name, "Killing",
                                     f"Container {name} definition changed, will be restarted"))
        running = state.get("running")
        if running is not None:
            status["lastState"] = {"terminated": {
                "exitCode": 0, "reason": "Completed", "startedAt": running.get("startedAt"),
                "finishedAt": stamp, "containerID": status.get("containerID", "")}}
        status.update(image=status_image(image), imageID=image_id(image))
        events += restart_container(status, image, now, pull_policy(pod, name))
    if events:
        refresh_readiness(pod, now)
    return events
