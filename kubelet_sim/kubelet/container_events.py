"""The events the kubelet records about a pod's containers, with its reasons and wording
(``pkg/kubelet/events``): when the pod starts, each container is ``Pulled`` (no image is
fetched here, so it is always already present), ``Created`` and ``Started``, init
containers first; when it is deleted, ``Killing`` each container. Each event names its
container in ``involvedObject.fieldPath``, as the kubelet's container references do."""

from __future__ import annotations

from dataclasses import dataclass

from kubelet_sim.api.model import Resource
from kubelet_sim.client.events import NORMAL, WARNING, EventRecorder

COMPONENT = "kubelet"


@dataclass(frozen=True)
class ContainerEvent:
    """One event about the container ``container`` of ``spec.containers``."""

    container: str
    reason: str
    message: str
    warning: bool = False


def start_events(name: str, image: str) -> list[ContainerEvent]:
    """A (re)start of the container ``name``: Pulled, Created, Started."""
    return [ContainerEvent(name, "Pulled", f'Container image "{image}" already present on '
                                           "machine"),
            ContainerEvent(name, "Created", f"Created container: {name}"),
            ContainerEvent(name, "Started", f"Started container {name}")]


def record_events(recorder: EventRecorder, pod: Resource, node: str,
                  events: list[ContainerEvent]) -> None:
    for event in events:
        recorder.record("Pod", pod.namespace, pod.name, WARNING if event.warning else NORMAL,
                        event.reason, event.message, COMPONENT, host=node,
                        field_path=f"spec.containers{{{event.container}}}")


def _containers(pod: Resource) -> list[tuple[str, str, str]]:
    """(field, name, image) of every init container, then every container."""
    return [(field, str(c.get("name", "")), str(c.get("image", "")))
            for field in ("initContainers", "containers")
            for c in pod.spec.get(field) or []]


def containers_started(recorder: EventRecorder, pod: Resource, node: str,
                       skip: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The start events of every container not in ``skip``; returns the names started."""
    started = set()
    for field, name, image in _containers(pod):
        if name in skip:
            continue
        started.add(name)
        path = f"spec.{field}{{{name}}}"
        for event in start_events(name, image):
            recorder.record("Pod", pod.namespace, pod.name, NORMAL, event.reason,
                            event.message, COMPONENT, host=node, field_path=path)
    return started


def containers_killed(recorder: EventRecorder, pod: Resource, node: str) -> None:
    for field, name, _ in _containers(pod):
        recorder.record("Pod", pod.namespace, pod.name, NORMAL, "Killing",
                        f"Stopping container {name}", COMPONENT, host=node,
                        field_path=f"spec.{field}{{{name}}}")
