"""batch/v1 Job on the API server's side, as kube-apiserver v1.35 keeps it: the v1
defaulter (``SetDefaults_Job``) with the job strategy's generated selector, the validation
of ``pkg/apis/batch/validation`` (``validateJobSpec``: counts, completion mode, per-index
backoff, the pod failure, success and pod replacement policies, the template as a Pod and
its restart policy, the selector) and its update rules (``ValidateJobSpecUpdate``: which
fields stay, ``completions`` of an elastic Indexed Job only in tandem with
``parallelism``, a suspended Job that never started may change its pod scheduling
directives).

Every error of one write is reported at once, as kube-apiserver aggregates a
``field.ErrorList``: the 422 names each field with its message.
"""

from __future__ import annotations

import json
import re
from typing import Any

from kubelet_sim.api.errors import FieldError, Invalid, InvalidObject
from kubelet_sim.api.label_rules import (
    dns_label_errors,
    dns_subdomain_errors,
    qualified_name_errors,
)
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.apiserver.invalid_objects import cause_reason
from kubelet_sim.apiserver.workloads import (
    JOB_CONTROLLER_UID,
    JOB_NAME,
    LEGACY_CONTROLLER_UID,
    LEGACY_JOB_NAME,
    _template_as_pod,
    _template_defaults,
    go_map,
    go_selector,
)

MAX_INT32 = 2**31 - 1
ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("False", "True", "Unknown")
REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
MAX_PARALLELISM_INDEXED = 100_000
MAX_FAILED_INDEXES = 100_000
COMPLETIONS_SOFT_LIMIT = 100_000
PARALLELISM_HIGH_COMPLETIONS = 10_000
MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
MAX_FAILURE_RULES = 20
MAX_EXIT_CODES = 255
MAX_CONDITION_PATTERNS = 20
MAX_SUCCESS_RULES = 20
MAX_SUCCEEDED_INDEXES_LENGTH = 64 * 1024
MAX_MANAGED_BY_LENGTH = 63
# what a suspended Job that never started may change in its template
SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")

# -- defaulting --------------------------------------------------------------------------------


def default_job(obj: Resource) -> None:
    """``SetDefaults_Job`` and the strategy's generated selector."""
    spec = obj.spec
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in policy.get("rules") or []:
            for pattern in (rule.get("onPodConditions") or []) if isinstance(rule, dict) else []:
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"
    spec.setdefault("podReplacementPolicy",
                    "Failed" if spec.get("podFailurePolicy") else "TerminatingOrFailed")
    spec.setdefault("manualSelector", False)
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    if not spec["manualSelector"] and obj.metadata.uid:
        # the job strategy's generated selector, and the labels it needs on the template
        # (each added where missing)
        uid = obj.metadata.uid
        for key, value in ((LEGACY_CONTROLLER_UID, uid), (LEGACY_JOB_NAME, obj.name),
                           (JOB_CONTROLLER_UID, uid), (JOB_NAME, obj.name)):
            labels.setdefault(key, value)
        selector = spec.get("selector")
        if not isinstance(selector, dict):
            selector = spec["selector"] = {}
        selector.setdefault("matchLabels", {}).setdefault(JOB_CONTROLLER_UID, uid)
    if labels and not obj.metadata.labels:
        obj.metadata.labels = dict(labels)
    _template_defaults(spec)


# -- how kube-apiserver prints a bad value ----------------------------------------------------


def shown(value: Any) -> str:
    """A bad value as ``field.Error`` prints it: numbers bare, strings quoted, the rest as
    JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return json.dumps(value, separators=(",", ":"))


def _go_fields(value: Any, fields: tuple[tuple[str, str, Any], ...]) -> dict[str, Any]:
    """An internal (untagged) Go struct as json.Marshal writes it: every field, under its
    Go name, in declaration order (nil pointers and slices as null)."""
    raw = value if isinstance(value, dict) else {}
    return {go: (render(raw.get(name)) if render else raw.get(name))
            for go, name, render in fields}


def _go_exit_codes(value: Any) -> Any:
    if value is None:
        return None
    return _go_fields(value, (("ContainerName", "containerName", None),
                              ("Operator", "operator", None), ("Values", "values", None)))


def _go_patterns(value: Any) -> Any:
    if value is None:
        return None
    return [_go_fields(p, (("Type", "type", None), ("Status", "status", None)))
            for p in value]


def go_failure_policy(policy: Any) -> str:
    """``*batch.PodFailurePolicy`` (the internal type) in an immutable-field message."""
    if policy is None:
        return "null"
    rules = [_go_fields(r, (("Action", "action", None),
                            ("OnExitCodes", "onExitCodes", _go_exit_codes),
                            ("OnPodConditions", "onPodConditions", _go_patterns)))
             for r in (policy.get("rules") or [])] if isinstance(policy, dict) else []
    return json.dumps({"Rules": rules}, separators=(",", ":"))


def go_success_policy(policy: Any) -> str:
    """``batch.SuccessPolicy`` (the internal type) as a bad value."""
    if policy is None:
        return "null"
    rules = [_go_fields(r, (("SucceededIndexes", "succeededIndexes", None),
                            ("SucceededCount", "succeededCount", None)))
             for r in (policy.get("rules") or [])] if isinstance(policy, dict) else []
    return json.dumps({"Rules": rules}, separators=(",", ":"))


# -- validation --------------------------------------------------------------------------------


class _Errors:
    """A ``field.ErrorList`` being built."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def invalid(self, path: str, value: str, why: str) -> None:
        self.items.append(FieldError("FieldValueInvalid", path, f"Invalid value: {value}: {why}"))

    def invalid_omitted(self, path: str, why: str) -> None:
        self.items.append(FieldError("FieldValueInvalid", path, f"Invalid value: {why}"))

    def required(self, path: str, why: str = "") -> None:
        self.items.append(FieldError("FieldValueRequired", path,
                                     "Required value" + (f": {why}" if why else "")))

    def unsupported(self, path: str, value: Any, allowed: tuple[str, ...]) -> None:
        listed = ", ".join(json.dumps(v) for v in allowed)
        self.items.append(FieldError("FieldValueNotSupported", path,
                                     f"Unsupported value: {shown(value)}: supported values: "
                                     f"{listed}"))

    def duplicate(self, path: str, value: Any) -> None:
        self.items.append(FieldError("FieldValueDuplicate", path,
                                     f"Duplicate value: {shown(value)}"))

    def too_many(self, path: str, actual: int, limit: int) -> None:
        self.items.append(FieldError("FieldValueTooMany", path,
                                     f"Too many: {actual}: must have at most {limit} items"))

    def too_long(self, path: str, limit: int) -> None:
        self.items.append(FieldError("FieldValueTooLong", path,
                                     f"Too long: may not be more than {limit} bytes"))

    def caught(self, err: Invalid) -> None:
        self.items.append(FieldError(cause_reason(err.detail), err.field, err.detail))

    def raise_for(self, obj: Resource) -> None:
        if self.items:
            raise InvalidObject("Job.batch", obj.name, self.items)


def _valid_values(values: tuple[str, ...]) -> str:
    """Go's %q of a []string: ``["a" "b"]``."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def _count(errors: _Errors, spec: JSON, name: str) -> int | None:
    """A non-negative int32 field; its value when it is one."""
    value = spec.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        errors.invalid(f"spec.{name}", shown(value), "must be an integer")
        return None
    if value < 0:
        errors.invalid(f"spec.{name}", str(value), "must be greater than or equal to 0")
    return value


def validate_job(obj: Resource) -> None:
    """``ValidateJob`` after the strategy's defaults: every error at once."""
    errors = _Errors()
    spec = obj.spec
    parallelism = _count(errors, spec, "parallelism")
    completions = _count(errors, spec, "completions")
    for name in ("activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"):
        _count(errors, spec, name)
    per_index = _count(errors, spec, "backoffLimitPerIndex")
    max_failed = _count(errors, spec, "maxFailedIndexes")
    if spec.get("maxFailedIndexes") is not None and spec.get("backoffLimitPerIndex") is None:
        errors.required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified")
    if spec.get("managedBy") is not None:
        _managed_by(errors, str(spec["managedBy"]))
    mode = spec.get("completionMode")
    if mode not in ("NonIndexed", "Indexed"):
        errors.unsupported("spec.completionMode", mode, ("NonIndexed", "Indexed"))
    if mode == "Indexed":
        _indexed_limits(errors, spec, parallelism, completions, per_index, max_failed)
    else:
        for name, value in (("backoffLimitPerIndex", per_index),
                            ("maxFailedIndexes", max_failed)):
            if spec.get(name) is not None:
                errors.invalid(f"spec.{name}", shown(spec.get(name) if value is None else value),
                               "requires indexed completion mode")
    if spec.get("podFailurePolicy") is not None:
        _pod_failure_policy(errors, spec)
    if spec.get("successPolicy") is not None:
        if mode != "Indexed":
            errors.invalid("spec.successPolicy", go_success_policy(spec["successPolicy"]),
                           "requires indexed completion mode")
        else:
            _success_policy(errors, spec)
    _pod_replacement_policy(errors, spec)
    template = spec.get("template")
    if isinstance(template, dict):
        try:
            _template_as_pod(template)
        except Invalid as err:
            errors.caught(err)
    _restart_policy(errors, spec)
    _selector(errors, spec)
    if mode == "Indexed" and isinstance(completions, int) and completions > 0:
        hostname = f"{obj.name}-{completions - 1}"
        if dns_label_errors(hostname):
            errors.invalid("metadata.name", json.dumps(obj.name), "will not able to create pod "
                           f"with invalid DNS label: {hostname}")
    errors.raise_for(obj)


_HTTP_PATH = re.compile(r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+")


def _managed_by(errors: _Errors, value: str) -> None:
    """``IsDomainPrefixedPath`` and at most 63 characters."""
    path = "spec.managedBy"
    host, _, rest = value.partition("/")
    if not value:
        errors.required(path)
    elif not host or not rest:
        errors.invalid(path, shown(value), 'must be a domain-prefixed path (such as "acme.io/foo")')
    else:
        for why in dns_subdomain_errors(host):
            errors.invalid(path, shown(host), why)
        if not _HTTP_PATH.fullmatch(rest):
            errors.invalid(path, shown(rest), "Invalid path (regex used for validation is "
                           f"'{_HTTP_PATH.pattern}')")
    if len(value) > MAX_MANAGED_BY_LENGTH:
        errors.too_long(path, MAX_MANAGED_BY_LENGTH)


def _indexed_limits(errors: _Errors, spec: JSON, parallelism: int | None,
                    completions: int | None, per_index: int | None,
                    max_failed: int | None) -> None:
    if spec.get("completions") is None:
        errors.required("spec.completions", "when completion mode is Indexed")
    if parallelism is not None and parallelism > MAX_PARALLELISM_INDEXED:
        errors.invalid("spec.parallelism", str(parallelism), "must be less than or equal to "
                       f"{MAX_PARALLELISM_INDEXED} when completion mode is Indexed")
    if completions is not None and max_failed is not None and max_failed > completions:
        errors.invalid("spec.maxFailedIndexes", str(max_failed),
                       "must be less than or equal to completions")
    if max_failed is not None and max_failed > MAX_FAILED_INDEXES:
        errors.invalid("spec.maxFailedIndexes", str(max_failed),
                       f"must be less than or equal to {MAX_FAILED_INDEXES}")
    if completions is not None and completions > COMPLETIONS_SOFT_LIMIT \
            and per_index is not None:
        tail = (f"when completions are above {COMPLETIONS_SOFT_LIMIT} and used with backoff "
                "limit per index")
        if spec.get("maxFailedIndexes") is None:
            errors.required("spec.maxFailedIndexes",
                            f"must be specified when completions is above "
                            f"{COMPLETIONS_SOFT_LIMIT}")
        if parallelism is not None and parallelism > PARALLELISM_HIGH_COMPLETIONS:
            errors.invalid("spec.parallelism", str(parallelism), "must be less than or equal "
                           f"to {PARALLELISM_HIGH_COMPLETIONS} {tail}")
        if max_failed is not None and max_failed > MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
            errors.invalid("spec.maxFailedIndexes", str(max_failed), "must be less than or "
                           f"equal to {MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {tail}")


def _container_names(spec: JSON) -> set[str]:
    pod = (spec.get("template") or {}).get("spec") or {}
    return {str(c.get("name")) for group in ("containers", "initContainers")
            for c in pod.get(group) or [] if isinstance(c, dict)}


def _pod_failure_policy(errors: _Errors, spec: JSON) -> None:
    policy = spec["podFailurePolicy"]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    rules = rules if isinstance(rules, list) else []
    path = "spec.podFailurePolicy.rules"
    if len(rules) > MAX_FAILURE_RULES:
        errors.too_many(path, len(rules), MAX_FAILURE_RULES)
    names = _container_names(spec)
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        rule_path = f"{path}[{i}]"
        action = rule.get("action")
        if not action:
            errors.required(f"{rule_path}.action", f"valid values: {_valid_values(ACTIONS)}")
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errors.invalid(f"{rule_path}.action", shown(action),
                               "requires the backoffLimitPerIndex to be set")
        elif action not in ACTIONS:
            errors.unsupported(f"{rule_path}.action", action, ACTIONS)
        exit_codes = rule.get("onExitCodes")
        patterns = rule.get("onPodConditions") or []
        if exit_codes is not None:
            _on_exit_codes(errors, exit_codes, f"{rule_path}.onExitCodes", names)
        if patterns:
            _on_pod_conditions(errors, patterns, f"{rule_path}.onPodConditions")
        if exit_codes is not None and patterns:
            errors.invalid_omitted(rule_path, "specifying both OnExitCodes and "
                                   "OnPodConditions is not supported")
        if exit_codes is None and not patterns:
            errors.invalid_omitted(rule_path, "specifying one of OnExitCodes and "
                                   "OnPodConditions is required")


def _on_exit_codes(errors: _Errors, req: Any, path: str, names: set[str]) -> None:
    req = req if isinstance(req, dict) else {}
    operator = req.get("operator")
    if not operator:
        errors.required(f"{path}.operator", f"valid values: {_valid_values(OPERATORS)}")
    elif operator not in OPERATORS:
        errors.unsupported(f"{path}.operator", operator, OPERATORS)
    name = req.get("containerName")
    if name is not None and name not in names:
        errors.invalid(f"{path}.containerName", shown(name),
                       "must be one of the container or initContainer names in the pod "
                       "template")
    values = req.get("values")
    values_path = f"{path}.values"
    if not values:
        errors.invalid(values_path, shown(values), "at least one value is required")
        return
    if len(values) > MAX_EXIT_CODES:
        errors.too_many(values_path, len(values), MAX_EXIT_CODES)
    seen: set[int] = set()
    ordered = True
    for j, code in enumerate(values):
        if operator == "In" and code == 0:
            errors.invalid(f"{values_path}[{j}]", str(code), "must not be 0 for the In operator")
        if code in seen:
            errors.duplicate(f"{values_path}[{j}]", code)
        seen.add(code)
        if j > 0 and values[j - 1] > code:
            ordered = False
    if not ordered:
        errors.invalid(values_path, shown(values), "must be ordered")


def _on_pod_conditions(errors: _Errors, patterns: list[Any], path: str) -> None:
    if len(patterns) > MAX_CONDITION_PATTERNS:
        errors.too_many(path, len(patterns), MAX_CONDITION_PATTERNS)
    for j, pattern in enumerate(patterns):
        pattern = pattern if isinstance(pattern, dict) else {}
        kind = str(pattern.get("type") or "")
        for why in qualified_name_errors(kind):
            errors.invalid(f"{path}[{j}].type", json.dumps(kind), why)
        status = pattern.get("status")
        if not status:
            errors.required(f"{path}[{j}].status",
                            f"valid values: {_valid_values(CONDITION_STATUSES)}")
        elif status not in CONDITION_STATUSES:
            errors.unsupported(f"{path}[{j}].status", status, CONDITION_STATUSES)


def _success_policy(errors: _Errors, spec: JSON) -> None:
    policy = spec["successPolicy"]
    rules = policy.get("rules") if isinstance(policy, dict) else None
    rules = rules if isinstance(rules, list) else []
    path = "spec.successPolicy.rules"
    if not rules:
        errors.required(path, "at least one rules must be specified when the successPolicy "
                        "is specified")
    if len(rules) > MAX_SUCCESS_RULES:
        errors.too_many(path, len(rules), MAX_SUCCESS_RULES)
    completions = spec.get("completions")
    completions = completions if isinstance(completions, int) else 0
    for i, rule in enumerate(rules):
        rule = rule if isinstance(rule, dict) else {}
        rule_path = f"{path}[{i}]"
        indexes, count = rule.get("succeededIndexes"), rule.get("succeededCount")
        if indexes is None and count is None:
            errors.required(rule_path, "at least one of succeededCount or succeededIndexes "
                            "must be specified")
        total = 0
        if indexes is not None:
            if len(str(indexes)) > MAX_SUCCEEDED_INDEXES_LENGTH:
                errors.too_long(f"{rule_path}.succeededIndexes", MAX_SUCCEEDED_INDEXES_LENGTH)
            try:
                total = indexes_total(str(indexes), completions)
            except ValueError as err:
                errors.invalid(f"{rule_path}.succeededIndexes", shown(indexes),
                               f"error parsing succeededIndexes: {err}")
        if count is not None:
            count_path = f"{rule_path}.succeededCount"
            if count < 0:
                errors.invalid(count_path, str(count), "must be greater than or equal to 0")
            if count > completions:
                errors.invalid(count_path, str(count), f"must be less than or equal to "
                               f"{completions} (the number of specified completions)")
            if indexes is not None and count > total:
                errors.invalid(count_path, str(count), f"must be less than or equal to {total} "
                               "(the number of indexes in the specified succeededIndexes "
                               "field)")


_NUMBER = re.compile(r"[+-]?\d+")


def _index(text: str, completions: int) -> int:
    if not _NUMBER.fullmatch(text):
        raise ValueError(f"cannot convert string to integer for index: {json.dumps(text)}")
    value = int(text)
    if value >= completions:
        raise ValueError(f"too large index: {json.dumps(text)}")
    return value


def indexes_total(text: str, completions: int) -> int:
    """``validateIndexesFormat``: how many indexes ``1,3-5`` names; ValueError, worded as
    kube-apiserver words it, when it is not ordered intervals below ``completions``."""
    if not text:
        return 0
    last: int | None = None
    total = 0
    for part in text.split(","):
        limits = part.split("-")
        if len(limits) > 2:
            raise ValueError(f"the fragment {json.dumps(part)} violates the requirement that an "
                             "index interval can have at most two parts separated by '-'")
        first = _index(limits[0], completions)
        end = first
        if len(limits) == 2:
            end = _index(limits[1], completions)
            if first >= end:
                raise ValueError(f"non-increasing order, previous: {first}, current: {end}")
        if last is not None and last >= first:
            raise ValueError(f"non-increasing order, previous: {last}, current: {first}")
        total += end - first + 1
        last = end
    return total


def _pod_replacement_policy(errors: _Errors, spec: JSON) -> None:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return
    if spec.get("podFailurePolicy") is not None:
        if policy != "Failed":
            errors.unsupported("spec.podReplacementPolicy", policy, ("Failed",))
    elif policy not in REPLACEMENT_POLICIES:
        errors.unsupported("spec.podReplacementPolicy", policy, REPLACEMENT_POLICIES)


def _restart_policy(errors: _Errors, spec: JSON) -> None:
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    path = "spec.template.spec.restartPolicy"
    if policy in (None, "", "Always"):
        errors.required(path, 'valid values: "OnFailure", "Never"')
    elif policy not in ("OnFailure", "Never"):
        errors.unsupported(path, policy, ("OnFailure", "Never"))
    elif spec.get("podFailurePolicy") is not None and policy != "Never":
        errors.invalid(path, shown(policy),
                       'only "Never" is supported when podFailurePolicy is specified')


def _selector(errors: _Errors, spec: JSON) -> None:
    raw = spec.get("selector")
    if raw is None:
        errors.required("spec.selector")
        return
    try:
        selector = LabelSelector.from_dict(raw, "spec.selector")
    except Invalid as err:
        errors.caught(err)
        return
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    if not selector.matches(labels):
        errors.invalid("spec.template.metadata.labels", go_map(labels),
                       "`selector` does not match template `labels`")


# -- updates -----------------------------------------------------------------------------------


def _pointer(value: Any) -> str:
    return "null" if value is None else shown(value)


def validate_job_update(old: Resource, new: Resource, _sc: Any = None) -> None:
    """``ValidateJobSpecUpdate``'s immutable fields, every one at once."""
    errors = _Errors()
    spec, was = new.spec, old.spec
    _completions_update(errors, spec, was)
    if spec.get("selector") != was.get("selector"):
        errors.invalid("spec.selector", go_selector(spec.get("selector")), "field is immutable")
    if _comparable_template(new, old) != _comparable_template(old, old):
        errors.invalid("spec.template", "the template", "field is immutable")
    for name, render in (("completionMode", _pointer),
                         ("podFailurePolicy", go_failure_policy),
                         ("backoffLimitPerIndex", _pointer),
                         ("managedBy", _pointer),
                         ("successPolicy", go_success_policy)):
        if spec.get(name) != was.get(name):
            errors.invalid(f"spec.{name}", render(spec.get(name)), "field is immutable")
    errors.raise_for(new)


def _completions_update(errors: _Errors, spec: JSON, was: JSON) -> None:
    """Immutable, but for an Indexed Job (ElasticIndexedJob) changed in tandem with
    ``parallelism``."""
    completions = spec.get("completions")
    if completions == was.get("completions"):
        return
    if spec.get("completionMode") != "Indexed":
        errors.invalid("spec.completions", _pointer(completions), "field is immutable")
    elif completions is not None and completions != spec.get("parallelism"):
        errors.invalid("spec.completions", _pointer(completions),
                       "can only be modified in tandem with spec.parallelism")


def _comparable_template(job: Resource, old: Resource) -> JSON:
    """The template as the immutability check compares it: while the old Job is suspended
    and never started, its scheduling directives (node affinity, node selector,
    tolerations, scheduling gates, the template's labels and annotations) may change."""
    template = dict(job.spec.get("template") or {})
    if not (old.spec.get("suspend") and not old.status.get("startTime")):
        return template
    meta = {k: v for k, v in (template.get("metadata") or {}).items()
            if k not in ("labels", "annotations")}
    pod = {k: v for k, v in (template.get("spec") or {}).items()
           if k not in SCHEDULING_DIRECTIVES}
    affinity = {k: v for k, v in (pod.pop("affinity", None) or {}).items()
                if k != "nodeAffinity"}
    if affinity:
        pod["affinity"] = affinity
    return {**template, "metadata": meta, "spec": pod}
