"""How a claim's status records a volume modification (VolumeAttributesClass).

``status.modifyVolumeStatus`` ({targetVolumeAttributesClassName, status}) says which class
the external-resizer is applying and how that goes (Pending, InProgress, Infeasible);
``status.currentVolumeAttributesClassName`` is the class the volume has; the conditions
``ModifyingVolume`` and ``ModifyVolumeError`` carry the messages. The resizer writes them
through these helpers; the binder sets the current class when it binds a claim.
"""

from __future__ import annotations

from kubelet_sim.api.model import JSON, Resource

VAC_FIELD = "volumeAttributesClassName"
CURRENT_VAC = "currentVolumeAttributesClassName"
MODIFY_STATUS = "modifyVolumeStatus"
PENDING, IN_PROGRESS, INFEASIBLE = "Pending", "InProgress", "Infeasible"
MODIFYING = "ModifyingVolume"
MODIFY_ERROR = "ModifyVolumeError"
MODIFY_CONDITIONS = (MODIFYING, MODIFY_ERROR)


def spec_class(pvc: Resource) -> str:
    """The class the claim asks for ("" for none)."""
    return str(pvc.spec.get(VAC_FIELD) or "")


def current_class(pvc: Resource) -> str:
    """The class the claim's volume has ("" for none)."""
    return str(pvc.status.get(CURRENT_VAC) or "")


def modify_status(pvc: Resource) -> JSON | None:
    value = pvc.status.get(MODIFY_STATUS)
    return value if isinstance(value, dict) else None


def merge_conditions(status: JSON, conditions: list[JSON]) -> None:
    """Replace the conditions of the same types, keep the others; ``lastTransitionTime``
    moves (to the new ``lastProbeTime``) only when status or reason changes."""
    incoming = {c["type"]: c for c in conditions}
    out: list[JSON] = []
    for old in status.get("conditions") or []:
        new = incoming.pop(old.get("type"), None)
        if new is None:
            out.append(old)
            continue
        same = (new.get("status"), new.get("reason")) == (old.get("status"), old.get("reason"))
        out.append({**new, "lastTransitionTime": old.get("lastTransitionTime") if same
                    else new["lastProbeTime"]})
    out += [{**c, "lastTransitionTime": c["lastProbeTime"]} for c in conditions
            if c["type"] in incoming]
    status["conditions"] = out


def drop_conditions(status: JSON, types: tuple[str, ...]) -> None:
    kept = [c for c in status.get("conditions") or [] if c.get("type") not in types]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def complete_modification(status: JSON, target: str) -> None:
    """The volume has ``target``'s attributes: it becomes the current class and the
    modification's status and conditions go."""
    status[CURRENT_VAC] = target
    status.pop(MODIFY_STATUS, None)
    drop_conditions(status, MODIFY_CONDITIONS)
