"""The events the kubelet records about a pod's containers, with its reasons and wording
(``pkg/kubelet/events``): when the pod starts, each container is ``Pulled`` (already
present, or under ``imagePullPolicy: Always`` ``Pulling`` then pulled: nothing is
fetched here), ``Created`` and ``Started`` — an init
container when its turn comes (init_containers.py), the app containers once the pod is
initialized; when it is deleted, ``Killing`` each app container (not those still
waiting for the init containers), then each running sidecar, the last one first (the
kubelet stops sidecars after the app containers), and an init container still running.
Each event names its container in ``involvedObject.fieldPath`` (``spec.containers{c}``
or ``spec.initContainers{c}``), as the kubelet's container references do."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.create_defaults import image_tag
from kubelet_sim.client.events import NORMAL, WARNING, EventRecorder
from kubelet_sim.kubelet.init_status import POD_INITIALIZING

COMPONENT = "kubelet"


@dataclass(frozen=True)
class ContainerEvent:
    """One event about the container ``container`` of ``spec.containers``."""

    container: str
    reason: str
    message: str
    warning: bool = False


def default_pull_policy(image: str) -> str:
    """kube-apiserver's default: Always for ``:latest`` or no tag, else IfNotPresent."""
    return "Always" if image_tag(image) == "latest" else "IfNotPresent"


def pull_policy(pod: Resource, container: str) -> str:
    """The ``imagePullPolicy`` of the pod's container or init container ``container``."""
    for c in [*(pod.spec.get("initContainers") or []), *(pod.spec.get("containers") or [])]:
        if c.get("name") == container:
            return str(c.get("imagePullPolicy") or default_pull_policy(str(c.get("image", ""))))
    return "IfNotPresent"


def pull_events(name: str, image: str, policy: str | None = None) -> list[ContainerEvent]:
    """The image manager's events: under ``Always`` the image is pulled (here at once,
    nothing is fetched: a duration of 0s and the size the image id stands for), else it
    is already present — and, with KubeletEnsureSecretPulledImages on (beta and on by
    default since v1.35), the message says the pod may use it."""
    if (policy or default_pull_policy(image)) != "Always":
        return [ContainerEvent(name, "Pulled",
                               f'Container image "{image}" already present on machine '
                               "and can be accessed by the pod")]
    size = int(hashlib.sha256(image.encode()).hexdigest()[:6], 16) * 16  # a few MB
    return [ContainerEvent(name, "Pulling", f'Pulling image "{image}"'),
            ContainerEvent(name, "Pulled", f'Successfully pulled image "{image}" in 0s (0s '
                                           f"including waiting). Image size: {size} bytes.")]


def start_events(name: str, image: str, policy: str | None = None) -> list[ContainerEvent]:
    """A (re)start of the container ``name``: its pull events (``policy``: its
    imagePullPolicy, by default the API's default for the image), Created, Started."""
    return [*pull_events(name, image, policy),
            ContainerEvent(name, "Created", f"Created container: {name}"),
            ContainerEvent(name, "Started", f"Started container {name}")]


def config_error_events(pod: Resource, container: str, message: str) -> list[ContainerEvent]:
    """A container whose ConfigMap or Secret is missing: the kubelet pulls its image
    first, then fails to make its config (``Failed``, ``Error: <why>``)."""
    spec: JSON = next((c for c in [*(pod.spec.get("initContainers") or []),
                                   *(pod.spec.get("containers") or [])]
                       if c.get("name") == container), {})
    return [*pull_events(container, str(spec.get("image", "")), pull_policy(pod, container)),
            ContainerEvent(container, "Failed", f"Error: {message}", warning=True)]


def field_path(pod: Resource, container: str) -> str:
    """``spec.initContainers{c}`` for an init container (names are unique across both
    lists), else ``spec.containers{c}``."""
    inits = {c.get("name") for c in pod.spec.get("initContainers") or []}
    return f"spec.{'initContainers' if container in inits else 'containers'}{{{container}}}"


def record_events(recorder: EventRecorder, pod: Resource, node: str,
                  events: list[ContainerEvent]) -> None:
    for event in events:
        recorder.record("Pod", pod.namespace, pod.name, WARNING if event.warning else NORMAL,
                        event.reason, event.message, COMPONENT, host=node,
                        field_path=field_path(pod, event.container))


def containers_started(recorder: EventRecorder, pod: Resource, node: str,
                       skip: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The start events of every app container not in ``skip`` (the init containers had
    theirs as they ran); returns the names started."""
    started = set()
    for c in pod.spec.get("containers") or []:
        name = str(c.get("name", ""))
        if name in skip:
            continue
        started.add(name)
        record_events(recorder, pod, node, start_events(
            name, str(c.get("image", "")), pull_policy(pod, name)))
    return started


def containers_killed(recorder: EventRecorder, pod: Resource, node: str) -> None:
    running = {s.get("name") for s in pod.status.get("initContainerStatuses") or []
               if "running" in (s.get("state") or {})}
    inits = [c for c in pod.spec.get("initContainers") or [] if c.get("name") in running]
    sidecars = [c for c in inits if c.get("restartPolicy") == "Always"]
    not_created = {s.get("name") for s in pod.status.get("containerStatuses") or []
                   if ((s.get("state") or {}).get("waiting") or {}).get("reason")
                   == POD_INITIALIZING}  # the init containers never got that far
    apps = [c for c in pod.spec.get("containers") or [] if c.get("name") not in not_created]
    names = [str(c.get("name", "")) for c in [
        *[c for c in inits if c not in sidecars], *apps, *reversed(sidecars)]]
    record_events(recorder, pod, node, [
        ContainerEvent(name, "Killing", f"Stopping container {name}") for name in names])
