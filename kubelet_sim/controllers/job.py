"""kube-controller-manager's Job controller.

A Job runs pods from its template until ``completions`` of them succeeded, at most
``parallelism`` at a time (``NonIndexed``: any pod counts; ``Indexed``: one success per
index ``0 .. completions-1``, each pod ``<job>-<index>-<5 random>`` with the
``batch.kubernetes.io/job-completion-index`` annotation and label, its hostname and the
``JOB_COMPLETION_INDEX`` variable). The status counts ``active``, ``ready``,
``terminating``, ``succeeded`` and ``failed`` pods (each finished pod counted once, even
after it is deleted), with ``startTime``.

Failures, as the job controller weighs them:

* a failed pod is replaced only after the pod-failure back-off (10 s doubling with each
  failure since the last success, capped; :mod:`job_policies`), per index with
  ``backoffLimitPerIndex``;
* ``podFailurePolicy`` decides per failed pod: ``FailJob`` fails the Job (reason
  ``PodFailurePolicy``, the rule's message), ``FailIndex`` fails its index, ``Ignore``
  does not count it, ``Count`` counts it;
* beyond ``backoffLimit`` (with ``restartPolicy: OnFailure`` the containers' restarts
  count), past ``activeDeadlineSeconds``, or with ``backoffLimitPerIndex`` past
  ``maxFailedIndexes`` or with every index finished and some failed (``failedIndexes``),
  the Job fails;
* ``podReplacementPolicy``: ``TerminatingOrFailed`` replaces a pod as soon as it is
  deleted (and counts it failed), ``Failed`` (always with a pod failure policy) only once
  it has failed.

A failing Job gets ``FailureTarget``, its active pods are deleted (counted failed), and
once none is terminating, ``Failed``. A succeeding one (its completions, or for Indexed
Jobs a ``successPolicy`` rule: reason ``SuccessPolicy``, its running pods deleted) gets
``SuccessCriteriaMet``, then ``Complete`` with ``completionTime``.

``spec.suspend`` deletes the active pods (not counted failed) and sets ``Suspended`` True
(JobSuspended, event Suspended); resuming sets it False (JobResumed, event Resumed) and
restarts ``startTime``, so the active deadline counts from the resume.

Left out: the job-tracking finalizer (``batch.kubernetes.io/job-tracking``) and
``uncountedTerminatedPods``: the controller remembers which pods it counted in memory,
as it keeps its back-off records. A Job whose ``spec.managedBy`` names another
controller is left to it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, parse_time
from kubelet_sim.client.resource_versions import newer
from kubelet_sim.client.writes import write_status
from kubelet_sim.controllers.job_policies import (
    INDEX_FAILURE_COUNT,
    INDEX_IGNORED_FAILURE_COUNT,
    BackoffRecord,
    finished_at,
    format_indexes,
    index_absolute_failure_count,
    index_backoff_remaining,
    index_failure_count,
    match_failure_policy,
    match_success_policy,
    parse_indexes,
    replacement_failure_counts,
)
from kubelet_sim.controllers.workload_pods import (
    claim,
    is_active,
    is_ready,
    is_terminal,
    pod_from_template,
    selector_of,
)
from kubelet_sim.controllers.workload_queue import WorkloadController

COMPONENT = "job-controller"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
JOB_CONTROLLER_NAME = "kubernetes.io/job-controller"  # spec.managedBy of the Jobs it runs
FINISHED = ("Complete", "Failed")

__all__ = ["COMPLETION_INDEX", "COMPONENT", "JobController", "finished", "format_indexes",
           "index_of", "parse_indexes"]


def index_of(pod: Resource) -> int | None:
    value = pod.metadata.annotations.get(COMPLETION_INDEX,
                                         pod.metadata.labels.get(COMPLETION_INDEX, ""))
    return int(value) if value.isdigit() else None


def finished(job: Resource) -> bool:
    return _true(job.status, *FINISHED) is not None


def _true(status: JSON, *kinds: str) -> JSON | None:
    return next((c for c in status.get("conditions") or []
                 if c.get("type") in kinds and c.get("status") == "True"), None)


def _condition(kind: str, status: str, reason: str, message: str, now: str) -> JSON:
    return {"type": kind, "status": status, "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def _ensure_condition(status: JSON, kind: str, value: str, reason: str, message: str,
                      now: str) -> bool:
    """``ensureJobConditionStatus``: set the condition (a False one only replaces an
    existing one); True when the conditions changed."""
    conditions = list(status.get("conditions") or [])
    for i, cond in enumerate(conditions):
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (
                    value, reason, message):
                return False
            conditions[i] = _condition(kind, value, reason, message, now)
            status["conditions"] = conditions
            return True
    if value == "False":
        return False
    status["conditions"] = [*conditions, _condition(kind, value, reason, message, now)]
    return True


@dataclass
class _Ledger:
    """What the controller remembers of one Job: the pods whose end it has accounted for
    (counted, ignored, or deleted by itself), those it deleted itself, and its back-off
    record."""

    counted: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)  # deleted by the controller, never failed
    backoff: BackoffRecord = field(default_factory=BackoffRecord)


@dataclass(frozen=True)
class _Finish:
    """Why the Job ends: ``failed`` (FailureTarget, then Failed) or not (SuccessCriteriaMet,
    then Complete)."""

    failed: bool
    reason: str
    message: str


@dataclass
class _Pass:
    """One sync's view of a Job and its pods."""

    job: Resource
    pods: list[Resource]
    now: datetime
    ledger: _Ledger
    active: list[Resource] = field(default_factory=list)
    terminating: int = 0
    done_indexes: set[int] = field(default_factory=set)
    failed_indexes: set[int] | None = None
    counted_now: set[str] = field(default_factory=set)

    @property
    def spec(self) -> JSON:
        return self.job.spec

    @property
    def indexed(self) -> bool:
        return self.spec.get("completionMode") == "Indexed"

    @property
    def completions(self) -> int | None:
        value = self.spec.get("completions")
        return None if value is None else int(value)

    @property
    def policy(self) -> JSON | None:
        return self.spec.get("podFailurePolicy")

    @property
    def per_index(self) -> int | None:
        value = self.spec.get("backoffLimitPerIndex")
        return int(value) if value is not None and self.indexed else None

    @property
    def only_failed_replaced(self) -> bool:
        return self.spec.get("podReplacementPolicy") == "Failed" or self.policy is not None

    def is_failed(self, pod: Resource) -> bool:
        """``isPodFailed``: Failed, or (unless only failed pods are replaced) deleted before
        it succeeded."""
        if pod.status.get("phase") == "Failed":
            return True
        return not self.only_failed_replaced and bool(pod.metadata.deletion_timestamp) \
            and pod.status.get("phase") != "Succeeded"

    def valid_index(self, pod: Resource) -> bool:
        if not self.indexed:
            return True
        index = index_of(pod)
        return index is not None and index < (self.completions or 0)

    def uncounted(self, pod: Resource) -> bool:
        return pod.metadata.uid not in self.ledger.counted \
            and pod.metadata.uid not in self.counted_now


class JobController(WorkloadController):
    name = COMPONENT
    kinds = ("Job", "Pod")
    workload_kind, prefix = "Job", "job"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ledgers: dict[str, _Ledger] = {}
        # per Job uid, the Job as this controller's last status write returned it
        self._written: dict[str, Resource] = {}

    async def reconcile(self) -> bool:
        live = {job.metadata.uid for job in self.cache.list("Job")}
        for uid in set(self._ledgers) - live:  # the Job is gone: forget it
            del self._ledgers[uid]
        for uid in set(self._written) - live:
            del self._written[uid]
        return await super().reconcile()

    def _with_own_status(self, job: Resource) -> Resource:
        """``job`` with the status this controller last wrote when the cache does not
        show that write yet (a watch a moment behind): counting on from the older
        status would count the pods already counted out (the ledger) as never
        succeeded, and make their replacements."""
        written = self._written.get(job.metadata.uid)
        if written is None:
            return job
        if not newer(written.metadata.resource_version, job.metadata.resource_version):
            del self._written[job.metadata.uid]  # the cache caught up
            return job
        current = job.copy()
        current.status = copy.deepcopy(written.status)
        return current

    def _ledger(self, job: Resource, pods: list[Resource]) -> _Ledger:
        ledger = self._ledgers.get(job.metadata.uid)
        if ledger is None:
            # a Job synced before (by an earlier controller): its ended pods are counted
            started = bool(job.status.get("startTime"))
            ledger = _Ledger({p.metadata.uid for p in pods
                              if started and (is_terminal(p) or p.metadata.deletion_timestamp)})
            self._ledgers[job.metadata.uid] = ledger
        return ledger

    async def sync(self, job: Resource) -> bool:
        if job.metadata.deletion_timestamp \
                or job.spec.get("managedBy") not in (None, JOB_CONTROLLER_NAME):
            return False  # another controller's Job
        job = self._with_own_status(job)
        if finished(job):
            self._ledgers.pop(job.metadata.uid, None)
            return False
        pods = await claim(self.client, job, self.cache.list("Pod", job.namespace),
                           selector_of(job))
        run = _Pass(job, pods, self.clock.now(), self._ledger(job, pods))
        status = copy.deepcopy(job.status)
        stamp = format_time(run.now)
        suspended = bool(job.spec.get("suspend"))
        run.active = [p for p in pods if is_active(p)]
        run.terminating = sum(1 for p in pods
                              if p.metadata.deletion_timestamp and not is_terminal(p))
        new_succeeded = [p for p in pods if p.status.get("phase") == "Succeeded"
                         and run.uncounted(p) and run.valid_index(p)]
        new_failed = [p for p in pods if run.is_failed(p) and run.uncounted(p)
                      and run.valid_index(p)]
        failed = int(status.get("failed") or 0) + sum(
            1 for p in new_failed if match_failure_policy(run.policy, p).counts)
        succeeded = int(status.get("succeeded") or 0) + len(new_succeeded)
        run.counted_now = {p.metadata.uid for p in new_succeeded + new_failed}
        backoff = run.ledger.backoff.observe(new_succeeded, new_failed)
        if not status.get("startTime") and not suspended:
            status["startTime"] = stamp

        finish = self._finish_so_far(run, status, failed)
        if run.indexed:
            completions = run.completions or 0
            run.done_indexes = parse_indexes(str(status.get("completedIndexes") or ""),
                                             completions) | {
                i for p in new_succeeded if (i := index_of(p)) is not None}
            # (a pod counted before is in completedIndexes already when it succeeded; one
            # the controller deleted itself, or counted failed while terminating, never is)
            succeeded = len(run.done_indexes)
            if run.per_index is not None:
                run.failed_indexes = parse_indexes(str(status.get("failedIndexes") or ""),
                                                   completions) | {
                    i for p in pods if run.valid_index(p) and self._index_failed(run, p)
                    and p.metadata.uid not in run.ledger.removed
                    and (i := index_of(p)) is not None}
                finish = finish or self._failed_indexes_finish(run)
            if finish is None:
                message = match_success_policy(job.spec.get("successPolicy"), completions,
                                               run.done_indexes)
                if message:
                    finish = _Finish(False, "SuccessPolicy", message)

        if finish is not None:
            deleted = await self._delete(job, run.active)
            if finish.failed:
                # every pod still running when the Job fails is counted failed
                failed += sum(1 for p in pods if not is_terminal(p) and run.uncounted(p))
            run.counted_now |= {p.metadata.uid for p in pods if not is_terminal(p)}
            run.terminating += len(deleted)
            changed, active = bool(deleted), 0
        else:
            # (pods this controller made or deleted but the cache does not show yet: not
            # managed, nor counted out, until it does)
            managed = self.may_manage(job)
            changed = await self._manage(run, backoff, succeeded) if managed else False
            active = len(run.active)
            wanted = run.completions
            if managed and (succeeded > 0 if wanted is None else succeeded >= wanted) \
                    and active == 0:
                finish = _Finish(False, "CompletionsReached",
                                 "Reached expected number of succeeded pods")
            elif suspended:
                if _ensure_condition(status, "Suspended", "True", "JobSuspended",
                                     "Job suspended", stamp):
                    self.event("Job", job.namespace, job.name, "Normal", "Suspended",
                               "Job suspended")
            elif _ensure_condition(status, "Suspended", "False", "JobResumed", "Job resumed",
                                   stamp):
                self.event("Job", job.namespace, job.name, "Normal", "Resumed", "Job resumed")
                status["startTime"] = stamp  # the active deadline counts from the resume

        status.update(active=active, succeeded=succeeded, failed=failed,
                      ready=sum(1 for p in run.active if is_ready(p)) if active else 0,
                      terminating=run.terminating, uncountedTerminatedPods={})
        if run.indexed:
            status["completedIndexes"] = format_indexes(run.done_indexes)
        if run.failed_indexes is not None:
            status["failedIndexes"] = format_indexes(run.failed_indexes)
        final = self._conditions(status, finish, run.terminating, stamp)
        status = {k: v for k, v in status.items()
                  if v or k in ("uncountedTerminatedPods", "ready", "terminating")
                  or (k == "failedIndexes" and run.failed_indexes is not None)}
        wrote = status != job.status and await self._write(job, status)
        run.ledger.counted |= run.counted_now
        run.ledger.backoff = backoff
        if wrote and final is not None:
            self._record_finished(job, final, succeeded)
        return wrote or changed

    # -- why the Job ends -------------------------------------------------------------------

    def _finish_so_far(self, run: _Pass, status: JSON, failed: int) -> _Finish | None:
        """An end already decided (the interim condition), a pod failure policy's FailJob,
        the backoff limit or the active deadline."""
        met = _true(status, "SuccessCriteriaMet")
        if met is not None:
            return _Finish(False, str(met.get("reason") or ""), str(met.get("message") or ""))
        target = _true(status, "FailureTarget")
        if target is not None:
            return _Finish(True, str(target.get("reason") or ""),
                           str(target.get("message") or ""))
        for pod in run.pods:
            if run.is_failed(pod):
                message = match_failure_policy(run.policy, pod).message
                if message:
                    return _Finish(True, "PodFailurePolicy", message)
        if failed > int(run.spec.get("backoffLimit", 6)) or self._past_restart_limit(run):
            return _Finish(True, "BackoffLimitExceeded",
                           "Job has reached the specified backoff limit")
        deadline = run.spec.get("activeDeadlineSeconds")
        if deadline is not None and status.get("startTime") and not run.spec.get("suspend"):
            left = int(deadline) - (run.now - parse_time(status["startTime"])).total_seconds()
            if left <= 0:
                return _Finish(True, "DeadlineExceeded",
                               "Job was active longer than specified deadline")
            self._note_retry(self.key(run.job.namespace, run.job.name), left)
        return None

    @staticmethod
    def _past_restart_limit(run: _Pass) -> bool:
        """``pastBackoffLimitOnFailure``: with ``restartPolicy: OnFailure``, the restarts
        of the running and pending pods' containers reach the backoff limit."""
        template = (run.spec.get("template") or {}).get("spec") or {}
        if template.get("restartPolicy") != "OnFailure":
            return False
        restarts = sum(int(s.get("restartCount") or 0) for p in run.pods
                       if p.status.get("phase") in ("Running", "Pending")
                       for group in ("initContainerStatuses", "containerStatuses")
                       for s in p.status.get(group) or [])
        limit = int(run.spec.get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

    @staticmethod
    def _index_failed(run: _Pass, pod: Resource) -> bool:
        """``isIndexFailed``: its pod matched FailIndex, or failed (counted) with the index's
        failure count at ``backoffLimitPerIndex``."""
        if not run.is_failed(pod):
            return False
        matched = match_failure_policy(run.policy, pod)
        if matched.action == "FailIndex":
            return True
        return matched.counts and index_failure_count(pod) >= (run.per_index or 0)

    @staticmethod
    def _failed_indexes_finish(run: _Pass) -> _Finish | None:
        failed = run.failed_indexes or set()
        limit = run.spec.get("maxFailedIndexes")
        if limit is not None and len(failed) > int(limit):
            return _Finish(True, "MaxFailedIndexesExceeded",
                           "Job has exceeded the specified maximal number of failed indexes")
        if failed and len(failed) + len(run.done_indexes) >= (run.completions or 0):
            return _Finish(True, "FailedIndexes", "Job has failed indexes")
        return None

    @staticmethod
    def _conditions(status: JSON, finish: _Finish | None, terminating: int,
                    stamp: str) -> _Finish | None:
        """Write the interim condition of an end, and the final one once no pod is
        terminating; the end when it is final."""
        if finish is None:
            return None
        interim, final = ("FailureTarget", "Failed") if finish.failed \
            else ("SuccessCriteriaMet", "Complete")
        if _true(status, interim) is None:
            status["conditions"] = [*(status.get("conditions") or []), _condition(
                interim, "True", finish.reason, finish.message, stamp)]
        if terminating > 0:
            return None
        _ensure_condition(status, final, "True", finish.reason, finish.message, stamp)
        if not finish.failed:
            status["completionTime"] = stamp
        return finish

    def _record_finished(self, job: Resource, finish: _Finish, succeeded: int) -> None:
        if finish.failed:
            self.event("Job", job.namespace, job.name, "Warning", finish.reason, finish.message)
            return
        completions = job.spec.get("completions")
        if completions is not None and succeeded > int(completions):
            self.event("Job", job.namespace, job.name, "Warning", "TooManySucceededPods",
                       "Too many succeeded pods running after completion count reached")
        self.event("Job", job.namespace, job.name, "Normal", "Completed", "Job completed")

    async def _write(self, job: Resource, status: JSON) -> bool:
        def mutate(obj: Resource) -> bool:
            if finished(obj) or obj.status == status:
                return False
            obj.status = status
            return True

        try:
            written = await write_status(self.client, "Job", job.name, job.namespace, mutate)
        except NotFound:
            return False
        if written is not None:
            self._written[job.metadata.uid] = written
        return written is not None

    # -- pods --------------------------------------------------------------------------------

    async def _manage(self, run: _Pass, backoff: BackoffRecord, succeeded: int) -> bool:
        """``manageJob``: delete the active pods of a suspended Job, or the ones too many;
        else create the missing ones once the back-off allows. ``run.active`` is left
        as the active count will be."""
        job, spec = run.job, run.spec
        if spec.get("suspend"):
            return await self._remove(run, run.active)
        parallelism = int(spec.get("parallelism", 1))
        completions = run.completions
        if completions is None:
            wanted = len(run.active) if succeeded > 0 else parallelism
        else:
            wanted = max(0, min(parallelism, completions - succeeded))
        excess = self._for_removal(run, max(0, len(run.active) - wanted))
        if excess:
            return await self._remove(run, excess)
        terminating = run.terminating if run.only_failed_replaced else 0
        missing = wanted - terminating - len(run.active)
        if missing <= 0:
            return False
        key = self.key(job.namespace, job.name)
        if run.per_index is None:
            remaining = backoff.remaining(run.now)
            if remaining > 0:
                self._note_retry(key, remaining)
                return False
        if not run.indexed:
            for _ in range(missing):
                run.active.append(await self._create(job, None))
            return True
        indexes = self._pending_indexes(run, missing)
        replaced: dict[int, Resource] = {}
        if run.per_index is not None:
            replaced = self._last_failed_per_index(run)
            waits = {i: index_backoff_remaining(replaced.get(i), run.now) for i in indexes}
            if indexes and not any(w == 0 for w in waits.values()):
                self._note_retry(key, min(waits.values()))
                return False
            indexes = [i for i in indexes if waits[i] == 0]
        for index in indexes:
            counts = replacement_failure_counts(run.policy, replaced.get(index)) \
                if run.per_index is not None else None
            run.active.append(await self._create(job, index, counts))
        return bool(indexes)

    async def _remove(self, run: _Pass, pods: list[Resource]) -> bool:
        """Delete pods the Job no longer wants; they are never counted failed."""
        deleted = await self._delete(run.job, pods)
        gone = {p.metadata.uid for p in deleted}
        run.ledger.counted |= gone  # at once: deleted, whatever becomes of this pass
        run.ledger.removed |= gone
        run.active = [p for p in run.active if p.metadata.uid not in gone]
        run.terminating += len(deleted)
        return bool(deleted)

    @staticmethod
    def _for_removal(run: _Pass, at_least: int) -> list[Resource]:
        """``activePodsForRemoval``: for an Indexed Job every pod with a repeated or an
        out-of-range index; then the newest pods, down to ``at_least``."""
        chosen: list[Resource] = []
        left = list(run.active)
        if run.indexed:
            seen: set[int] = set()
            left = []
            for pod in sorted(run.active, key=lambda p: p.metadata.creation_timestamp or ""):
                index = index_of(pod)
                if index is None or index >= (run.completions or 0) or index in seen:
                    chosen.append(pod)
                else:
                    seen.add(index)
                    left.append(pod)
        if len(chosen) < at_least:
            newest = sorted(left, key=lambda p: p.metadata.creation_timestamp or "",
                            reverse=True)
            chosen += newest[:at_least - len(chosen)]
        return chosen

    @staticmethod
    def _pending_indexes(run: _Pass, count: int) -> list[int]:
        """``firstPendingIndexes``: the lowest indexes neither succeeded, failed, active
        nor (when only failed pods are replaced) terminating."""
        busy = set(run.done_indexes) | (run.failed_indexes or set())
        busy |= {i for p in run.active if (i := index_of(p)) is not None}
        if run.only_failed_replaced:
            busy |= {i for p in run.pods if p.metadata.deletion_timestamp
                     and not is_terminal(p) and (i := index_of(p)) is not None}
        free = (i for i in range(run.completions or 0) if i not in busy)
        return [i for _, i in zip(range(count), free, strict=False)]

    @staticmethod
    def _last_failed_per_index(run: _Pass) -> dict[int, Resource]:
        """``getPodsWithDelayedDeletionPerIndex``: per index still to run, its last failed
        pod (the most failures counted, finished last), which the new pod replaces."""
        busy = set(run.done_indexes) | (run.failed_indexes or set())
        busy |= {i for p in run.active if (i := index_of(p)) is not None}
        last: dict[int, Resource] = {}
        for pod in run.pods:
            index = index_of(pod)
            if index is None or index >= (run.completions or 0) or index in busy \
                    or not run.is_failed(pod) or pod.metadata.uid in run.ledger.removed:
                continue
            known = last.get(index)
            if known is None or (
                    index_absolute_failure_count(known) <= index_absolute_failure_count(pod)
                    and finished_at(pod) >= finished_at(known)):
                last[index] = pod
        return last

    async def _create(self, job: Resource, index: int | None,
                      failure_counts: tuple[int, int] | None = None) -> Resource:
        template = job.spec.get("template") or {}
        if index is None:
            pod = pod_from_template(job, template)
        else:
            pod = pod_from_template(job, template, generate_name=f"{job.name}-{index}-")
            meta = pod["metadata"]
            annotations = meta.setdefault("annotations", {})
            annotations[COMPLETION_INDEX] = str(index)
            meta["labels"][COMPLETION_INDEX] = str(index)
            if failure_counts is not None:
                counted, ignored = failure_counts
                annotations[INDEX_FAILURE_COUNT] = str(counted)
                if ignored:
                    annotations[INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
            pod["spec"]["hostname"] = f"{job.name}-{index}"
            for group in ("initContainers", "containers"):
                for container in pod["spec"].get(group) or []:
                    env = container.get("env") or []
                    if any(v.get("name") == "JOB_COMPLETION_INDEX" for v in env):
                        continue
                    container["env"] = [*env, {
                        "name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                            "apiVersion": "v1",
                            "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}}}]
        return await self.create_pod(job, pod)

    async def _delete(self, job: Resource, pods: list[Resource]) -> list[Resource]:
        return [pod for pod in pods if await self.delete_pod(job, pod)]
