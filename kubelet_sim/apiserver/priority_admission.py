"""kube-apiserver's Priority admission plugin.

On a Pod create (not a subresource): the pod's ``priorityClassName`` is looked up and
its value becomes ``spec.priority`` and its ``preemptionPolicy`` the pod's; a pod naming
no class takes the global default class (the lowest value among the classes marked
``globalDefault``), or priority 0 with PreemptLowerPriority when there is none. A class
that does not exist, or a ``priority``/``preemptionPolicy`` sent that differs from what
the class gives, is refused (403). On a Pod update, a ``priority`` or
``preemptionPolicy`` the update leaves out keeps its stored value.

On a PriorityClass create or update: only one class may be ``globalDefault``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.priority_classes import PREEMPT_LOWER_PRIORITY

__all__ = ["admit_pod", "admit_pod_update", "admit_priority_class", "default_class"]

PriorityClasses = Callable[[], Iterable[Resource]]
PriorityClassLookup = Callable[[str], Resource | None]


def default_class(classes: Iterable[Resource]) -> Resource | None:
    """The global default: of the classes marked ``globalDefault``, the lowest value."""
    marked = [pc for pc in classes if pc.body.get("globalDefault") is True]
    return min(marked, key=lambda pc: int(pc.body.get("value", 0)), default=None)


def admit_pod(pod: Resource, classes: PriorityClasses, lookup: PriorityClassLookup,
              requested_name: str = "") -> None:
    """Give a new pod its priority (``requested_name``: the name as sent, its
    ``generateName`` when the server makes one, which a refusal names)."""
    shown = requested_name or pod.metadata.name
    spec = pod.spec
    name = spec.get("priorityClassName")
    policy: str | None
    if not name:
        chosen = default_class(classes())
        if chosen is None:
            priority, policy = 0, PREEMPT_LOWER_PRIORITY
        else:
            spec["priorityClassName"] = chosen.name
            priority, policy = int(chosen.body.get("value", 0)), chosen.body.get(
                "preemptionPolicy")
    else:
        found = lookup(str(name))
        if found is None:
            raise ObjectForbidden(f"no PriorityClass with name {name} was found", "pods", shown)
        priority, policy = int(found.body.get("value", 0)), found.body.get("preemptionPolicy")
    sent = spec.get("priority")
    if sent is not None and sent != priority:
        raise ObjectForbidden(f"the integer value of priority ({sent}) must not be provided in "
                              "pod spec; priority admission controller computed "
                              f"{priority} from the given PriorityClass name", "pods", shown)
    spec["priority"] = priority
    if policy is not None:
        sent_policy = spec.get("preemptionPolicy")
        if sent_policy is not None and sent_policy != policy:
            raise ObjectForbidden(f"the string value of PreemptionPolicy ({sent_policy}) must "
                                  "not be provided in pod spec; priority admission controller "
                                  f"computed {policy} from the given PriorityClass name",
                                  "pods", shown)
        spec["preemptionPolicy"] = policy


def admit_pod_update(current: Resource, updated: Resource) -> None:
    """An update that leaves out the pod's priority or preemptionPolicy keeps them
    (validation then refuses any other change of them)."""
    for field in ("priority", "preemptionPolicy"):
        if updated.spec.get(field) is None and current.spec.get(field) is not None:
            updated.spec[field] = current.spec[field]


def admit_priority_class(pc: Resource, classes: PriorityClasses, *, creating: bool) -> None:
    """A class marked ``globalDefault`` while another one is (on a create: any one,
    even of the same name): 403."""
    if pc.body.get("globalDefault") is not True:
        return
    other = default_class(c for c in classes() if creating or c.name != pc.name)
    if other is not None:
        raise ObjectForbidden(f"PriorityClass {other.name} is already marked as default. Only "
                              "one default can exist", "priorityclasses.scheduling.k8s.io",
                              pc.name)
