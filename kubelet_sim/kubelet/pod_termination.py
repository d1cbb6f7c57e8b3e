"""The status the kubelet writes for a running pod being deleted, after it killed the
containers and before its final delete (the v1.27+ kubelet moves such a pod to a
terminal phase first, so ``kubectl get pods -w`` shows it ``Completed`` or ``Error``
before it goes).

Each running container (app container or sidecar) is ``terminated`` the way the other
kills here end one — exit code 0, reason ``Completed``, the simulated process ends on
SIGTERM — and is no longer ready nor started. A container waiting to be restarted
(``CrashLoopBackOff``) shows its last termination; one the runtime never ran is
``ContainerStatusUnknown`` with exit code 137, as the status manager reports a container
it cannot find. The phase follows ``getPhase`` for a terminal pod, whatever its
``restartPolicy``: ``Succeeded`` when every app container exited 0, else ``Failed``; the
Ready and ContainersReady conditions are False (``PodCompleted`` or ``PodFailed``) and
PodReadyToStartContainers False (the sandbox is gone). A pod already Succeeded or Failed
keeps its status; one still Pending is deleted as it is.
"""

from __future__ import annotations

from datetime import datetime

from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.kubelet.container_exit import end_pod, stop_sidecars

STATUS_UNKNOWN = "ContainerStatusUnknown"
STATUS_UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"


def _terminate(status: JSON, stamp: str) -> None:
    state = status.get("state") or {}
    if "terminated" in state:
        return
    running = state.get("running")
    last = (status.get("lastState") or {}).get("terminated")
    if running is not None:
        terminated: JSON = {"exitCode": 0, "reason": "Completed",
                            "startedAt": running.get("startedAt", stamp), "finishedAt": stamp}
        if status.get("containerID"):
            terminated["containerID"] = status["containerID"]
    elif last:
        terminated = dict(last)
    else:
        terminated = {"exitCode": 137, "reason": STATUS_UNKNOWN,
                      "message": STATUS_UNKNOWN_MESSAGE, "startedAt": None, "finishedAt": None}
    status.update(state={"terminated": terminated}, ready=False, started=False)


def terminate_deleted_pod(pod: Resource, now: datetime) -> bool:
    """Write (in place) the terminal status of the running ``pod`` whose containers were
    killed; True when it changed."""
    st = pod.status
    if st.get("phase") != "Running":
        return False
    stamp = format_time(now)
    stop_sidecars(pod, stamp)  # (their Killing events were recorded with the others)
    statuses = st.get("containerStatuses") or []
    for status in statuses:
        _terminate(status, stamp)
    end_pod(pod, all((s.get("state") or {}).get("terminated", {}).get("exitCode") == 0
                     for s in statuses), now)
    for cond in st.get("conditions") or []:
        if cond.get("type") == "PodReadyToStartContainers" and cond.get("status") != "False":
            cond.update(status="False", lastTransitionTime=stamp)
    return True
