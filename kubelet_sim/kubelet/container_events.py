"""The events the kubelet records about a pod's containers, with its reasons and wording
(``pkg/kubelet/events``): when the pod starts, each container is ``Pulled`` (no image is
fetched here, so it is always already present), ``Created`` and ``Started``, init
containers first; when it is deleted, ``Killing`` each container. Each event names its
container in ``involvedObject.fieldPath``, as the kubelet's container references do."""

from __future__ import annotations

from kubelet_sim.api.model import Resource
from kubelet_sim.client.events import NORMAL, EventRecorder

COMPONENT = "kubelet"


def _containers(pod: Resource) -> list[tuple[str, str, str]]:
    """(field, name, image) of every init container, then every container."""
    return [(field, str(c.get("name", "")), str(c.get("image", "")))
            for field in ("initContainers", "containers")
            for c in pod.spec.get(field) or []]


def containers_started(recorder: EventRecorder, pod: Resource, node: str) -> None:
    for field, name, image in _containers(pod):
        path = f"spec.{field}{{{name}}}"
        for reason, message in (("Pulled", f'Container image "{image}" already present on '
                                           "machine"),
                                ("Created", f"Created container: {name}"),
                                ("Started", f"Started container {name}")):
            recorder.record("Pod", pod.namespace, pod.name, NORMAL, reason, message, COMPONENT,
                            host=node, field_path=path)


def containers_killed(recorder: EventRecorder, pod: Resource, node: str) -> None:
    for field, name, _ in _containers(pod):
        recorder.record("Pod", pod.namespace, pod.name, NORMAL, "Killing",
                        f"Stopping container {name}", COMPONENT, host=node,
                        field_path=f"spec.{field}{{{name}}}")
