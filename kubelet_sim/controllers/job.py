"""kube-controller-manager's Job controller.

A Job runs pods from its template until ``completions`` of them succeeded, at most
``parallelism`` at a time (``NonIndexed``: any pod counts; ``Indexed``: one success per
index ``0 .. completions-1``, each pod ``<job>-<index>-<5 random>`` with the
``batch.kubernetes.io/job-completion-index`` annotation and label, its hostname and the
``JOB_COMPLETION_INDEX`` variable). Failed pods count against ``backoffLimit`` (with
``restartPolicy: OnFailure`` the containers' restarts count too); beyond it, or past
``activeDeadlineSeconds``, the Job fails: its active pods are deleted and it gets the
``FailureTarget`` then ``Failed`` conditions (BackoffLimitExceeded / DeadlineExceeded).
Done, it gets ``SuccessCriteriaMet`` then ``Complete`` (CompletionsReached) and its
``completionTime``. The status counts ``active``, ``ready``, ``terminating``,
``succeeded`` and ``failed`` pods (never going down: a finished pod deleted later stays
counted), with ``startTime``.

Left out: the pod failure and success policies, per-index backoff, suspension, the
exponential delay before a failed pod is replaced, and the job-tracking finalizer.
"""

from __future__ import annotations

import copy
from datetime import datetime

from kubelet_sim.api.errors import NotFound, ObjectForbidden
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.controllers.common import write_status
from kubelet_sim.controllers.workload_pods import (
    claim,
    is_active,
    is_ready,
    pod_from_template,
    selector_of,
)
from kubelet_sim.controllers.workload_queue import WorkloadController

COMPONENT = "job-controller"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
FINISHED = ("Complete", "Failed")


def parse_indexes(text: str) -> set[int]:
    """``1,3-5`` → {1, 3, 4, 5} (status.completedIndexes)."""
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        out.update(range(int(first), int(last or first) + 1))
    return out


def format_indexes(indexes: set[int]) -> str:
    """{1, 3, 4, 5} → ``1,3-5``."""
    runs: list[list[int]] = []
    for i in sorted(indexes):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def index_of(pod: Resource) -> int | None:
    value = pod.metadata.annotations.get(COMPLETION_INDEX,
                                         pod.metadata.labels.get(COMPLETION_INDEX, ""))
    return int(value) if value.isdigit() else None


def finished(job: Resource) -> bool:
    return any(c.get("type") in FINISHED and c.get("status") == "True"
               for c in job.status.get("conditions") or [])


def _condition(kind: str, reason: str, message: str, now: str) -> JSON:
    return {"type": kind, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


class JobController(WorkloadController):
    name = COMPONENT
    kinds = ("Job", "Pod")
    workload_kind, prefix = "Job", "job"

    async def sync(self, job: Resource) -> bool:
        if job.metadata.deletion_timestamp or finished(job):
            return False
        pods = claim(self.api, job, self.cache.list("Pod", job.namespace), selector_of(job))
        now = self.clock.now()
        status = copy.deepcopy(job.status)
        status.setdefault("startTime", format_time(now))
        indexed = job.spec.get("completionMode") == "Indexed"
        active = [p for p in pods if is_active(p)]
        succeeded_pods = [p for p in pods if p.status.get("phase") == "Succeeded"]
        failed_pods = [p for p in pods if p.status.get("phase") == "Failed"]
        done_indexes = parse_indexes(str(status.get("completedIndexes") or ""))
        if indexed:
            done_indexes |= {i for p in succeeded_pods if (i := index_of(p)) is not None}
            succeeded = len(done_indexes)
        else:
            succeeded = max(int(status.get("succeeded") or 0), len(succeeded_pods))
        failed = max(int(status.get("failed") or 0), len(failed_pods))
        restarts = sum(int(s.get("restartCount") or 0) for p in active
                       for s in p.status.get("containerStatuses") or []) \
            if (job.spec.get("template") or {}).get("spec", {}).get("restartPolicy") \
            == "OnFailure" else 0
        completions = job.spec.get("completions")
        stamp = format_time(now)
        failure = self._failure(job, status, failed + restarts, now)
        complete = (succeeded >= int(completions) if completions is not None
                    else succeeded > 0 and not active)
        changed = False
        if failure is not None or complete:
            changed = self._delete(job, active)
            active = []
        else:
            changed = self._manage(job, active, succeeded, done_indexes)
        status.update(active=len(active), succeeded=succeeded, failed=failed,
                      ready=sum(1 for p in active if is_ready(p)),
                      terminating=sum(1 for p in pods if p.metadata.deletion_timestamp
                                      and p.status.get("phase") not in ("Succeeded", "Failed")),
                      uncountedTerminatedPods={})
        if indexed:
            status["completedIndexes"] = format_indexes(done_indexes)
        if failure is not None:
            reason, message = failure
            status["conditions"] = [*(status.get("conditions") or []),
                                    _condition("FailureTarget", reason, message, stamp),
                                    _condition("Failed", reason, message, stamp)]
            self.event("Job", job.namespace, job.name, "Warning", reason, message)
        elif complete:
            message = "Reached expected number of succeeded pods"
            status["conditions"] = [
                *(status.get("conditions") or []),
                _condition("SuccessCriteriaMet", "CompletionsReached", message, stamp),
                _condition("Complete", "CompletionsReached", message, stamp)]
            status["completionTime"] = stamp
            self.event("Job", job.namespace, job.name, "Normal", "Completed", "Job completed")
        status = {k: v for k, v in status.items()
                  if v or k in ("uncountedTerminatedPods", "ready", "terminating")}
        if status == job.status:
            return changed

        def mutate(obj: Resource) -> bool:
            if finished(obj) or obj.status == status:
                return False
            obj.status = status
            return True

        try:
            return write_status(self.api, "Job", job.name, job.namespace, mutate) is not None \
                or changed
        except NotFound:
            return changed

    def _failure(self, job: Resource, status: JSON, failures: int,
                 now: datetime) -> tuple[str, str] | None:
        if failures > int(job.spec.get("backoffLimit", 6)):
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
        deadline = job.spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime"):
            left = int(deadline) - (now - parse_time(status["startTime"])).total_seconds()
            if left <= 0:
                return "DeadlineExceeded", "Job was active longer than specified deadline"
            self._note_retry(f"job/{job.namespace}/{job.name}", left)
        return None

    def _manage(self, job: Resource, active: list[Resource], succeeded: int,
                done_indexes: set[int]) -> bool:
        parallelism = int(job.spec.get("parallelism", 1))
        completions = job.spec.get("completions")
        if completions is None:
            wanted = parallelism if succeeded == 0 else 0
        else:
            wanted = max(0, min(parallelism, int(completions) - succeeded))
        if len(active) > wanted:
            newest = sorted(active, key=lambda p: p.metadata.creation_timestamp or "",
                            reverse=True)
            return self._delete(job, newest[:len(active) - wanted])
        missing = wanted - len(active)
        if missing <= 0:
            return False
        if job.spec.get("completionMode") == "Indexed":
            busy = {index_of(p) for p in active}
            free = [i for i in range(int(completions or 0))
                    if i not in done_indexes and i not in busy]
            for index in free[:missing]:
                self._create(job, index)
            return bool(free[:missing])
        for _ in range(missing):
            self._create(job, None)
        return True

    def _create(self, job: Resource, index: int | None) -> None:
        template = job.spec.get("template") or {}
        if index is None:
            pod = pod_from_template(job, template)
        else:
            pod = pod_from_template(job, template, generate_name=f"{job.name}-{index}-")
            meta = pod["metadata"]
            meta.setdefault("annotations", {})[COMPLETION_INDEX] = str(index)
            meta["labels"][COMPLETION_INDEX] = str(index)
            pod["spec"]["hostname"] = f"{job.name}-{index}"
            for container in pod["spec"].get("containers") or []:
                container["env"] = [*(container.get("env") or []), {
                    "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']"}}}]
        try:
            created = self.api.create(pod)
        except ObjectForbidden as err:  # an admission plugin's refusal (a quota)
            self.event("Job", job.namespace, job.name, "Warning", "FailedCreate",
                       f"Error creating: {err.worded('pods')}")
            raise
        self.event("Job", job.namespace, job.name, "Normal", "SuccessfulCreate",
                   f"Created pod: {created.name}")

    def _delete(self, job: Resource, pods: list[Resource]) -> bool:
        changed = False
        for pod in pods:
            try:
                self.api.delete("Pod", pod.name, pod.namespace, uid=pod.metadata.uid)
            except NotFound:
                continue
            changed = True
            self.event("Job", job.namespace, job.name, "Normal", "SuccessfulDelete",
                       f"Deleted pod: {pod.name}")
        return changed
