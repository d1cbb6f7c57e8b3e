"""What the Job controller decides about single pods and index sets, as
kube-controller-manager's job controller decides it (``pod_failure_policy.go``,
``success_policy.go``, ``backoff_utils.go``, ``indexed_job_utils.go``):

* a failed pod against ``podFailurePolicy``: the first rule whose ``onExitCodes`` (a
  terminated container, of the named one if given, with a non-zero code In / NotIn the
  values) or ``onPodConditions`` (a condition of that type and status) matches gives the
  action: ``FailJob`` (with the Job's failure message), ``FailIndex``, ``Ignore`` (not
  counted against the backoff limits) or ``Count``;
* ``successPolicy``: the first rule whose ``succeededIndexes`` all succeeded (or at least
  its ``succeededCount`` of them), or with only ``succeededCount``, that many indexes;
* the pod-failure back-off: ``10s`` doubling with each failure since the last success,
  capped at :data:`MAX_POD_FAILURE_BACKOFF`, counted from when the last failed pod finished;
* completed and failed index sets written as ``status.completedIndexes`` writes them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from kubelet_sim.api.model import JSON, Resource, parse_time

DEFAULT_POD_FAILURE_BACKOFF = 10.0  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = 600.0  # MaxJobPodFailureBackOff: 10 minutes
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"


# -- index sets --------------------------------------------------------------------------------


def parse_indexes(text: str, completions: int | None = None) -> set[int]:
    """``1,3-5`` → {1, 3, 4, 5}; indexes from ``completions`` on are dropped, a corrupted
    interval is skipped (``parseIndexesFromString``)."""
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        first, _, last = part.partition("-")
        if not first.isdigit() or (last and not last.isdigit()):
            continue
        end = int(last or first)
        if completions is not None:
            if int(first) >= completions:
                break
            end = min(end, completions - 1)
        out.update(range(int(first), end + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """{1, 3, 4, 5, 7, 8} → ``1,3-5,7,8``: a run of two is written as two indexes."""
    runs: list[list[int]] = []
    for i in sorted(set(indexes)):
        if runs and runs[-1][1] == i - 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(str(a) if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}"
                    for a, b in runs)


# -- the pod failure policy --------------------------------------------------------------------


@dataclass(frozen=True)
class FailureMatch:
    """A failed pod against the pod failure policy: the matched action (None: no rule),
    whether the failure counts against the backoff limits, and for FailJob the Job's
    failure message."""

    action: str | None = None
    counts: bool = True
    message: str | None = None


def _terminated_with(statuses: list[JSON], req: JSON) -> JSON | None:
    """The first terminated container (of ``containerName``, if given) whose non-zero exit
    code the requirement matches."""
    values = req.get("values") or []
    for status in statuses:
        terminated = (status.get("state") or {}).get("terminated")
        if not terminated:
            continue  # still terminating: no exit code yet
        if req.get("containerName") not in (None, status.get("name")):
            continue
        code = int(terminated.get("exitCode") or 0)
        if code == 0:
            continue
        operator = req.get("operator")
        if (operator == "In" and code in values) or (operator == "NotIn"
                                                     and code not in values):
            return status
    return None


def match_failure_policy(policy: JSON | None, pod: Resource) -> FailureMatch:
    """``matchPodFailurePolicy`` for a failed pod."""
    if not policy:
        return FailureMatch()
    for index, rule in enumerate(policy.get("rules") or []):
        action = rule.get("action")
        message: str | None = None
        if rule.get("onExitCodes") is not None:
            status = (_terminated_with(pod.status.get("containerStatuses") or [],
                                       rule["onExitCodes"])
                      or _terminated_with(pod.status.get("initContainerStatuses") or [],
                                          rule["onExitCodes"]))
            if status is None:
                continue
            code = status["state"]["terminated"].get("exitCode")
            message = (f"Container {status.get('name')} for pod {pod.namespace}/{pod.name} "
                       f"failed with exit code {code} matching {action} rule at index {index}")
        elif rule.get("onPodConditions") is not None:
            found = next((c for c in pod.status.get("conditions") or []
                          for p in rule["onPodConditions"]
                          if c.get("type") == p.get("type")
                          and c.get("status") == p.get("status")), None)
            if found is None:
                continue
            message = (f"Pod {pod.namespace}/{pod.name} has condition {found.get('type')} "
                       f"matching {action} rule at index {index}")
        else:
            continue
        if action == "Ignore":
            return FailureMatch("Ignore", counts=False)
        if action == "FailJob":
            return FailureMatch("FailJob", message=message)
        if action in ("Count", "FailIndex"):
            return FailureMatch(action)
    return FailureMatch()


# -- the success policy ------------------------------------------------------------------------


def match_success_policy(policy: JSON | None, completions: int,
                         succeeded: set[int]) -> str | None:
    """``matchSuccessPolicy``: the SuccessCriteriaMet message of the first rule the
    succeeded indexes meet, None when none does."""
    if not policy or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or []):
        wanted_count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(str(rule["succeededIndexes"]), completions)
            if not required:
                continue
            contained = len(required & succeeded)
            if contained == len(required) or (wanted_count is not None
                                              and contained >= int(wanted_count)):
                return f"Matched rules at index {index}"
        elif wanted_count is not None and len(succeeded) >= int(wanted_count):
            return f"Matched rules at index {index}"
    return None


# -- the pod-failure back-off ------------------------------------------------------------------


def finished_at(pod: Resource) -> datetime:
    """When a pod finished (``getFinishedTime``): its containers' last exit when all have
    exited, else its Ready=False transition, else its deletion less the grace period,
    else its creation."""
    latest: datetime | None = None
    statuses = pod.status.get("containerStatuses") or []
    for status in statuses:
        finished = ((status.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if not finished:
            latest = None
            break
        at = parse_time(finished)
        latest = at if latest is None or at > latest else latest
    if latest is not None:
        return latest
    for cond in pod.status.get("conditions") or []:
        if cond.get("type") == "Ready" and cond.get("status") == "False" \
                and cond.get("lastTransitionTime"):
            return parse_time(cond["lastTransitionTime"])
    if pod.metadata.deletion_timestamp:
        grace = pod.metadata.deletion_grace_period_seconds or 0
        return parse_time(pod.metadata.deletion_timestamp) - timedelta(seconds=grace)
    return parse_time(pod.metadata.creation_timestamp) if pod.metadata.creation_timestamp \
        else datetime.fromtimestamp(0, UTC)


def backoff_remaining(failures: int, last_failure: datetime | None, now: datetime) -> float:
    """Seconds before a failed pod may be replaced after ``failures`` failures in a row,
    the last at ``last_failure`` (0: at once)."""
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = DEFAULT_POD_FAILURE_BACKOFF
    for _ in range(1, failures):
        delay *= 2
        if delay >= MAX_POD_FAILURE_BACKOFF:
            delay = MAX_POD_FAILURE_BACKOFF
            break
    elapsed = (now - last_failure).total_seconds()
    return 0.0 if delay < elapsed else delay - elapsed


@dataclass
class BackoffRecord:
    """The job's back-off record: failures since the last success and when the last of
    them finished (kept by the controller, as kube-controller-manager keeps it in memory)."""

    failures: int = 0
    last_failure: datetime | None = None

    def observe(self, succeeded: list[Resource], failed: list[Resource]) -> BackoffRecord:
        """The record once newly succeeded and failed pods are seen (``newBackoffRecord``)."""
        failed_at = sorted(finished_at(p) for p in failed)
        if not succeeded:
            if not failed_at:
                return self
            return BackoffRecord(self.failures + len(failed_at), failed_at[-1])
        last_success = max(finished_at(p) for p in succeeded)
        after = [t for t in failed_at if t > last_success]
        return BackoffRecord(len(after), after[-1] if after else None)

    def remaining(self, now: datetime) -> float:
        return backoff_remaining(self.failures, self.last_failure, now)


def _annotation_count(pod: Resource, key: str) -> int:
    value = pod.metadata.annotations.get(key, "")
    return int(value) if value.isdigit() and int(value) <= 2**31 - 1 else 0


def index_failure_count(pod: Resource) -> int:
    return _annotation_count(pod, INDEX_FAILURE_COUNT)


def index_absolute_failure_count(pod: Resource) -> int:
    return index_failure_count(pod) + _annotation_count(pod, INDEX_IGNORED_FAILURE_COUNT)


def index_backoff_remaining(last_failed: Resource | None, now: datetime) -> float:
    """The back-off of one index of a Job with ``backoffLimitPerIndex``: from the failure
    counts its last failed pod carries."""
    if last_failed is None:
        return 0.0
    return backoff_remaining(index_absolute_failure_count(last_failed) + 1,
                             finished_at(last_failed), now)


def replacement_failure_counts(policy: JSON | None, replaced: Resource | None) -> tuple[int, int]:
    """(failure count, ignored failure count) a new pod of an index carries, from the
    pod it replaces."""
    if replaced is None:
        return 0, 0
    counted = index_failure_count(replaced)
    ignored = _annotation_count(replaced, INDEX_IGNORED_FAILURE_COUNT)
    if match_failure_policy(policy, replaced).counts:
        counted += 1
    else:
        ignored += 1
    return counted, ignored
