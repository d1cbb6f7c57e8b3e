"""The PriorityClass kind (scheduling.k8s.io/v1), as kube-apiserver keeps it:

* defaulting: ``preemptionPolicy`` PreemptLowerPriority when unset;
* validation: a ``system-`` name must be one of the built-in classes with their value
  and ``globalDefault``; any other class's value is at most 1000000000 (the highest a
  user may define); ``preemptionPolicy`` is Never or PreemptLowerPriority;
* updates: ``value`` and ``preemptionPolicy`` never change;
* the built-in classes ``system-node-critical`` (2000001000) and
  ``system-cluster-critical`` (2000000000), which the API server makes at start
  (:func:`system_priority_classes`) and which stay as they are when they exist.

``globalDefault`` (at most one class) and what a Pod takes from its class are the
Priority admission plugin's (:mod:`kubelet_sim.apiserver.priority_admission`).
"""

from __future__ import annotations

import json
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.model import Resource, new

__all__ = ["KIND", "PREEMPTION_POLICIES", "default_priority_class", "system_priority_classes",
           "validate_priority_class", "validate_priority_class_update"]

KIND = "PriorityClass"
GROUP = "scheduling.k8s.io"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, "Never")
SYSTEM_PREFIX = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
INT32 = (-(2**31), 2**31 - 1)
# name -> (value, description) of the classes every cluster has
SYSTEM_CLASSES: dict[str, tuple[int, str]] = {
    "system-node-critical": (SYSTEM_CRITICAL_PRIORITY + 1000,
                             "Used for system critical pods that must not be moved from their "
                             "current node."),
    "system-cluster-critical": (SYSTEM_CRITICAL_PRIORITY,
                                "Used for system critical pods that must run in the cluster, "
                                "but can be moved to another node if necessary."),
}


def system_priority_classes() -> list[Resource]:
    """The built-in classes, as the API server creates them at start."""
    return [new(KIND, name, value=value, description=description)
            for name, (value, description) in SYSTEM_CLASSES.items()]


def default_priority_class(pc: Resource) -> None:
    pc.body.setdefault("preemptionPolicy", PREEMPT_LOWER_PRIORITY)


def _system_class_error(name: str, value: Any, global_default: bool) -> str | None:
    known = SYSTEM_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return None


def validate_priority_class(pc: Resource) -> None:
    errors: list[FieldError] = []
    value = pc.body.get("value", 0)
    global_default = pc.body.get("globalDefault", False)
    if not isinstance(value, int) or isinstance(value, bool) or \
            not INT32[0] <= value <= INT32[1]:
        errors.append(FieldError("FieldValueInvalid", "value",
                                 f"Invalid value: {json.dumps(value)}: must be a 32-bit integer"))
    elif pc.name.startswith(SYSTEM_PREFIX):
        why = _system_class_error(pc.name, value, global_default is True)
        if why is not None:
            errors.append(FieldError("FieldValueForbidden", "metadata.name",
                                     f"Forbidden: priority class names with '{SYSTEM_PREFIX}' "
                                     f"prefix are reserved for system use only. error: {why}"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(FieldError("FieldValueForbidden", "value",
                                 "Forbidden: maximum allowed value of a user defined priority "
                                 f"is {HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if not isinstance(global_default, bool):
        errors.append(FieldError("FieldValueInvalid", "globalDefault",
                                 f"Invalid value: {json.dumps(global_default)}: must be a "
                                 "boolean"))
    policy = pc.body.get("preemptionPolicy")
    if policy == "":
        errors.append(FieldError("FieldValueRequired", "preemptionPolicy", "Required value"))
    elif policy is not None and policy not in PREEMPTION_POLICIES:
        listed = ", ".join(json.dumps(p) for p in PREEMPTION_POLICIES)
        errors.append(FieldError("FieldValueNotSupported", "preemptionPolicy",
                                 f"Unsupported value: {json.dumps(policy)}: supported values: "
                                 f"{listed}"))
    if errors:
        raise InvalidObject(f"{KIND}.{GROUP}", pc.name, errors)


def validate_priority_class_update(old: Resource, new: Resource) -> None:
    errors: list[FieldError] = []
    if new.body.get("value", 0) != old.body.get("value", 0):
        errors.append(FieldError("FieldValueForbidden", "value",
                                 "Forbidden: may not be changed in an update."))
    before, after = old.body.get("preemptionPolicy"), new.body.get("preemptionPolicy")
    if before != after:
        errors.append(FieldError("FieldValueInvalid", "preemptionPolicy",
                                 f"Invalid value: {json.dumps(after)}: field is immutable"))
    if errors:
        raise InvalidObject(f"{KIND}.{GROUP}", new.name, errors)
