"""How a claim's status records a resize in progress (RecoverVolumeExpansionFailure).

The external-resizer writes these conditions and statuses; the kubelet clears them when it
finishes a node expansion. Both use the rules here, so the two never disagree.
"""

from __future__ import annotations

from kubelet_sim.api.model import JSON

RESIZING = "Resizing"
FS_RESIZE_PENDING = "FileSystemResizePending"
CONTROLLER_RESIZE_ERROR = "ControllerResizeError"
RESIZE_CONDITIONS = (RESIZING, FS_RESIZE_PENDING, CONTROLLER_RESIZE_ERROR)


def set_resize_condition(status: JSON, cond_type: str, now: str, message: str = "") -> None:
    """Replace any resize condition with ``cond_type`` (status True)."""
    kept = [c for c in status.get("conditions") or [] if c.get("type") not in RESIZE_CONDITIONS]
    cond: JSON = {"type": cond_type, "status": "True", "lastProbeTime": None,
                  "lastTransitionTime": now}
    if message:
        cond["message"] = message
    status["conditions"] = [*kept, cond]


def clear_resize_state(status: JSON) -> None:
    """Drop the resize conditions and ``allocatedResourceStatuses.storage``."""
    conds = [c for c in status.get("conditions") or [] if c.get("type") not in RESIZE_CONDITIONS]
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)
    statuses = dict(status.get("allocatedResourceStatuses") or {})
    statuses.pop("storage", None)
    if statuses:
        status["allocatedResourceStatuses"] = statuses
    else:
        status.pop("allocatedResourceStatuses", None)


def file_system_resize_pending(status: JSON) -> bool:
    """The claim waits for the kubelet to expand the file system on its node."""
    return any(c.get("type") == FS_RESIZE_PENDING and c.get("status") == "True"
               for c in status.get("conditions") or [])
