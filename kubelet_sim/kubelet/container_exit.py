"""A container's simulated exit: nothing runs in the simulated containers, so by default
they run until the pod is deleted. Two pod annotations make them exit:

* ``sim.cni-csi-mini.io/exit-after``: a Go duration (``5s``, ``1m30s``, ``500ms``) after
  the containers started;
* ``sim.cni-csi-mini.io/exit-code``: the exit code (default 0).

The kubelet then follows the pod's ``restartPolicy``: ``Never``, or ``OnFailure`` with
code 0, ends the pod (``Succeeded`` for 0, ``Failed`` otherwise; each container
``terminated`` with reason ``Completed`` or ``Error``, the Ready conditions False with
reason ``PodCompleted``; the kubelet then stops the sandbox, CNI DEL, and unmounts the
volumes, while the pod stays in the API); ``Always``, or ``OnFailure`` with a non-zero
code, restarts the containers (``restartCount`` up by one, ``lastState`` the
termination), and they exit again after the same duration.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.retry import retry_on_conflict

EXIT_AFTER = "sim.cni-csi-mini.io/exit-after"
EXIT_CODE = "sim.cni-csi-mini.io/exit-code"

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """Seconds of a Go duration (``time.ParseDuration``); None when it is not one."""
    text = text.strip()
    if text in ("0", ""):
        return 0.0 if text == "0" else None
    pos, total = 0, 0.0
    for found in _PART.finditer(text):
        if found.start() != pos:
            return None
        total += float(found[1]) * _UNITS[found[2]]
        pos = found.end()
    return total if pos == len(text) else None


def exit_plan(pod: Resource) -> tuple[float, int] | None:
    """(seconds after start, exit code) the annotations ask for; None: runs on."""
    after = parse_duration(pod.metadata.annotations.get(EXIT_AFTER, ""))
    if after is None:
        return None
    try:
        code = int(pod.metadata.annotations.get(EXIT_CODE, "0"))
    except ValueError:
        code = 1
    return after, code


def _started(status: JSON) -> datetime | None:
    stamp = ((status.get("state") or {}).get("running") or {}).get("startedAt")
    return parse_time(stamp) if stamp else None


def exited(pod: Resource, now: datetime) -> bool:
    """Let the pod's running containers exit when their time is up (in place, on
    ``pod.status``); True when the status changed."""
    plan = exit_plan(pod)
    if plan is None or pod.status.get("phase") != "Running":
        return False
    after, code = plan
    statuses = pod.status.get("containerStatuses") or []
    due = [s for s in statuses if (t := _started(s)) is not None
           and t + timedelta(seconds=after) <= now]
    if not due or len(due) != len(statuses):
        return False
    policy = pod.spec.get("restartPolicy", "Always")
    restart = policy == "Always" or (policy == "OnFailure" and code != 0)
    stamp = format_time(now)
    for status in statuses:
        terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                      "startedAt": status["state"]["running"]["startedAt"],
                      "finishedAt": stamp, "containerID": status.get("containerID", "")}
        if restart:
            status["lastState"] = {"terminated": terminated}
            status["restartCount"] = int(status.get("restartCount") or 0) + 1
            status["state"] = {"running": {"startedAt": stamp}}
        else:
            status.update(state={"terminated": terminated}, ready=False, started=False)
    if restart:
        return True
    pod.status["phase"] = "Succeeded" if code == 0 else "Failed"
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") in ("Ready", "ContainersReady"):
            cond.update(status="False", reason="PodCompleted", lastTransitionTime=stamp)
            cond.pop("message", None)
    return True


def exit_due_containers(api: APIServer, pod: Resource, now: datetime) -> bool:
    """Write the exit of ``pod``'s containers when it is due; True when written."""
    if exit_plan(pod) is None or not exited(pod.copy(), now):
        return False

    def write() -> bool:
        try:
            current = api.get("Pod", pod.name, pod.namespace)
        except NotFound:
            return False
        if current.metadata.uid != pod.metadata.uid or not exited(current, now):
            return False
        api.update_status(current)
        return True

    return bool(retry_on_conflict(write))
