"""``kubectl get`` columns of the workload kinds (Deployment, ReplicaSet, StatefulSet,
DaemonSet, Job, ControllerRevision), as kube-apiserver's printers define them; merged into
:data:`kubelet_sim.apiserver.http.tables.COLUMNS`."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kubelet_sim.api.human_duration import human_duration
from kubelet_sim.api.model import Resource

Column = tuple[str, str, int, Callable[[Resource], Any]]


def _time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _age(obj: Resource) -> str:
    created = obj.metadata.creation_timestamp
    if not created:
        return "<unknown>"
    seconds = (datetime.datetime.now(datetime.UTC) - _time(created)).total_seconds()
    return human_duration(max(int(seconds), 0))


def _count(obj: Resource, path: str) -> int:
    where, _, name = path.partition(".")
    return int((obj.spec if where == "spec" else obj.status).get(name) or 0)


def _int(path: str) -> Callable[[Resource], int]:
    return lambda obj: _count(obj, path)


def _ratio(done: str, wanted: str) -> Callable[[Resource], str]:
    return lambda obj: f"{_count(obj, done)}/{_count(obj, wanted)}"


def _template_spec(obj: Resource) -> dict[str, Any]:
    return (obj.spec.get("template") or {}).get("spec") or {}


def _containers(obj: Resource) -> str:
    return ",".join(str(c.get("name", "")) for c in _template_spec(obj).get("containers") or [])


def _images(obj: Resource) -> str:
    return ",".join(str(c.get("image", "")) for c in _template_spec(obj).get("containers") or [])


def format_selector(raw: Any) -> str:
    """metav1.FormatLabelSelector: ``app=web,tier in (a,b)``, ``<none>`` when empty."""
    raw = raw or {}
    parts = [f"{k}={v}" for k, v in sorted((raw.get("matchLabels") or {}).items())]
    for e in raw.get("matchExpressions") or []:
        op = str(e.get("operator", ""))
        if op in ("Exists", "DoesNotExist"):
            parts.append(e.get("key", "") if op == "Exists" else f"!{e.get('key', '')}")
        else:
            parts.append(f"{e.get('key')} {op.lower()} ({','.join(e.get('values') or [])})")
    return ",".join(parts) or "<none>"


def _selector(obj: Resource) -> str:
    return format_selector(obj.spec.get("selector"))


def _node_selector(obj: Resource) -> str:
    labels = _template_spec(obj).get("nodeSelector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "<none>"


def _has_condition(obj: Resource, kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True"
               for c in obj.status.get("conditions") or [])


def _job_status(job: Resource) -> str:
    if _has_condition(job, "Complete"):
        return "Complete"
    if _has_condition(job, "Failed"):
        return "Failed"
    if job.metadata.deletion_timestamp:
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(job, condition):
            return condition
    return "Running"


def _job_completions(job: Resource) -> str:
    succeeded = int(job.status.get("succeeded") or 0)
    if job.spec.get("completions") is not None:
        return f"{succeeded}/{job.spec['completions']}"
    parallelism = int(job.spec.get("parallelism") or 0)
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _job_duration(job: Resource) -> str:
    start = job.status.get("startTime")
    if not start:
        return ""
    end = job.status.get("completionTime")
    finish = _time(end) if end else datetime.datetime.now(datetime.UTC)
    return human_duration(max(int((finish - _time(start)).total_seconds()), 0))


def _controller(obj: Resource) -> str:
    for ref in obj.metadata.owner_references or []:
        if ref.get("controller"):
            group = str(ref.get("apiVersion", "")).rpartition("/")[0]
            kind = str(ref.get("kind", "")).lower()
            return f"{kind}.{group}/{ref.get('name')}" if group else f"{kind}/{ref.get('name')}"
    return "<none>"


NAME: Column = ("Name", "string", 0, lambda o: o.name)
AGE: Column = ("Age", "string", 0, _age)
WIDE: list[Column] = [("Containers", "string", 1, _containers),
                      ("Images", "string", 1, _images), ("Selector", "string", 1, _selector)]

COLUMNS: dict[str, list[Column]] = {
    "Deployment": [NAME, ("Ready", "string", 0, _ratio("status.readyReplicas", "spec.replicas")),
                   ("Up-to-date", "integer", 0, _int("status.updatedReplicas")),
                   ("Available", "integer", 0, _int("status.availableReplicas")), AGE, *WIDE],
    "ReplicaSet": [NAME, ("Desired", "integer", 0, _int("spec.replicas")),
                   ("Current", "integer", 0, _int("status.replicas")),
                   ("Ready", "integer", 0, _int("status.readyReplicas")), AGE, *WIDE],
    "StatefulSet": [NAME, ("Ready", "string", 0, _ratio("status.readyReplicas", "spec.replicas")),
                    AGE, *WIDE[:2]],
    "DaemonSet": [NAME, ("Desired", "integer", 0, _int("status.desiredNumberScheduled")),
                  ("Current", "integer", 0, _int("status.currentNumberScheduled")),
                  ("Ready", "integer", 0, _int("status.numberReady")),
                  ("Up-to-date", "integer", 0, _int("status.updatedNumberScheduled")),
                  ("Available", "integer", 0, _int("status.numberAvailable")),
                  ("Node Selector", "string", 0, _node_selector), AGE, *WIDE],
    "Job": [NAME, ("Status", "string", 0, _job_status),
            ("Completions", "string", 0, _job_completions),
            ("Duration", "string", 0, _job_duration), AGE, *WIDE],
    "ControllerRevision": [NAME, ("Controller", "string", 0, _controller),
                           ("Revision", "integer", 0, lambda o: int(o.body.get("revision") or 0)),
                           AGE],
}
