"""The apps/v1 and batch/v1 workload kinds on the API server's side: defaulting, validation
and update rules of Deployment, ReplicaSet, StatefulSet, DaemonSet and Job, as
kube-apiserver's registry strategies and k8s.io/api's defaulters keep them.

* defaults: a Deployment's ``replicas`` 1, ``strategy`` RollingUpdate 25%/25%,
  ``revisionHistoryLimit`` 10, ``progressDeadlineSeconds`` 600; a StatefulSet's
  ``podManagementPolicy`` OrderedReady, ``updateStrategy`` RollingUpdate (partition 0),
  ``persistentVolumeClaimRetentionPolicy`` Retain/Retain; a DaemonSet's RollingUpdate with
  ``maxUnavailable`` 1 / ``maxSurge`` 0; a Job's ``completions``/``parallelism`` 1,
  ``backoffLimit`` 6, ``completionMode`` NonIndexed and its generated selector
  (``batch.kubernetes.io/controller-uid``) with the labels it puts on the template; the
  pod template takes the Pod defaults.
* validation: a selector is required, not empty, and must match the template's labels;
  the template is validated as a Pod; ``restartPolicy`` Always for the apps kinds,
  OnFailure or Never for a Job; counts not negative.
* updates: the selector is immutable (update_validation.py reports it with the spec's
  errors, as the strategies do); a StatefulSet may change only ``replicas``,
  ``ordinals``, ``template``, ``updateStrategy``, ``revisionHistoryLimit``,
  ``persistentVolumeClaimRetentionPolicy`` and ``minReadySeconds``; a Job's template,
  selector and ``completions`` (NonIndexed) are immutable.

A Job's rules (with its failure, success and replacement policies) live in
:mod:`~kubelet_sim.apiserver.job_rules`.
The rules above are registered in :mod:`~kubelet_sim.apiserver.defaulting`,
:mod:`~kubelet_sim.apiserver.validation` and :mod:`~kubelet_sim.apiserver.update_rules`;
the core rules they reuse (the Pod's) are imported where used, as those modules import
this one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.selectors import LabelSelector

APPS_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
JOB_CONTROLLER_UID = "batch.kubernetes.io/controller-uid"
JOB_NAME = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID = "controller-uid"
LEGACY_JOB_NAME = "job-name"

# -- defaulting --------------------------------------------------------------------------------


def _template_defaults(spec: JSON) -> None:
    """The Pod defaults on ``spec.template`` (a PodTemplateSpec has no status)."""
    from kubelet_sim.apiserver.defaulting import apply_defaults

    template = spec.get("template")
    if not isinstance(template, dict):
        return
    pod = Resource.from_dict({"apiVersion": "v1", "kind": "Pod",
                              "metadata": template.get("metadata") or {},
                              "spec": template.get("spec") or {}})
    apply_defaults(pod)
    pod.spec.pop("enableServiceLinks", None)  # defaulted on Pods only
    template["spec"] = pod.spec


def _rolling(spec: JSON, key: str, rolling: JSON) -> None:
    strategy = spec.setdefault(key, {})
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        params = strategy.setdefault("rollingUpdate", {})
        for name, value in rolling.items():
            params.setdefault(name, value)


def _deployment_defaults(obj: Resource) -> None:
    spec = obj.spec
    spec.setdefault("replicas", 1)
    _rolling(spec, "strategy", {"maxUnavailable": "25%", "maxSurge": "25%"})
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _template_defaults(spec)


def _replica_set_defaults(obj: Resource) -> None:
    obj.spec.setdefault("replicas", 1)
    _template_defaults(obj.spec)


def _stateful_set_defaults(obj: Resource) -> None:
    spec = obj.spec
    spec.setdefault("replicas", 1)
    spec.setdefault("podManagementPolicy", "OrderedReady")
    # maxUnavailable 1: the MaxUnavailableStatefulSet gate is on by default in v1.35
    _rolling(spec, "updateStrategy", {"partition": 0, "maxUnavailable": 1})
    spec.setdefault("revisionHistoryLimit", 10)
    policy = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
    policy.setdefault("whenDeleted", "Retain")
    policy.setdefault("whenScaled", "Retain")
    for claim in spec.get("volumeClaimTemplates") or []:
        claim.setdefault("spec", {}).setdefault("volumeMode", "Filesystem")
        claim.setdefault("status", {}).setdefault("phase", "Pending")
    _template_defaults(spec)


def _daemon_set_defaults(obj: Resource) -> None:
    _rolling(obj.spec, "updateStrategy", {"maxUnavailable": 1, "maxSurge": 0})
    obj.spec.setdefault("revisionHistoryLimit", 10)
    _template_defaults(obj.spec)


DEFAULTERS: dict[str, Callable[[Resource], None]] = {
    "Deployment": _deployment_defaults,
    "ReplicaSet": _replica_set_defaults,
    "StatefulSet": _stateful_set_defaults,
    "DaemonSet": _daemon_set_defaults,
}

# -- validation --------------------------------------------------------------------------------


def go_map(labels: dict[str, Any]) -> str:
    """A label map as Go's ``%#v`` prints it in kube-apiserver's messages."""
    return "map[string]string{" + ", ".join(
        f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(labels.items())) + "}"


def _non_negative(spec: JSON, name: str, path: str = "") -> None:
    value = spec.get(name)
    path = path or f"spec.{name}"
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(path, f"Invalid value: {json.dumps(value)}: must be an integer")
    if value < 0:
        raise Invalid(path, f"Invalid value: {value}: must be greater than or equal to 0")


def _selector_and_template(obj: Resource) -> None:
    raw = obj.spec.get("selector")
    if raw is None:
        raise Invalid("spec.selector", "Required value")
    selector = LabelSelector.from_dict(raw, "spec.selector")
    if selector.is_empty():
        raise Invalid("spec.selector", f"Invalid value: {json.dumps(raw)}: empty selector is "
                      f"invalid for {obj.kind.lower()}")
    template = obj.spec.get("template")
    if not isinstance(template, dict):
        raise Invalid("spec.template", "Required value")
    labels = (template.get("metadata") or {}).get("labels") or {}
    if not selector.matches(labels):
        raise Invalid("spec.template.metadata.labels",
                      f"Invalid value: {go_map(labels)}: `selector` does not match template "
                      "`labels`")
    _template_as_pod(template)


def _template_as_pod(template: JSON) -> None:
    """Validate the template with the Pod's rules, its fields named under spec.template."""
    from kubelet_sim.apiserver.validation import validate

    meta = {k: v for k, v in (template.get("metadata") or {}).items()
            if k in ("labels", "annotations")}
    pod = Resource.from_dict({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": "template", **meta},
                              "spec": copy.deepcopy(template.get("spec") or {})})
    try:
        validate(pod)
    except Invalid as err:
        raise Invalid(f"spec.template.{err.field}", err.detail) from None


def _restart_policy(obj: Resource, allowed: tuple[str, ...]) -> None:
    policy = ((obj.spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in allowed:
        listed = ", ".join(json.dumps(v) for v in allowed)
        raise Invalid("spec.template.spec.restartPolicy",
                      f"Unsupported value: {json.dumps(policy)}: supported values: {listed}")


def _apps(obj: Resource) -> None:
    for name in ("replicas", "minReadySeconds", "revisionHistoryLimit",
                 "progressDeadlineSeconds"):
        _non_negative(obj.spec, name)
    _selector_and_template(obj)
    _restart_policy(obj, ("Always",))
    if obj.kind == "Deployment":
        _deployment_strategy(obj.spec)
    if obj.kind == "StatefulSet":
        _stateful_set(obj.spec)


def _int_or_percent(value: Any, path: str) -> int | None:
    """An IntOrString count or percentage; the count, or None for a percentage."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Invalid(path, f"Invalid value: {json.dumps(value)}: must be an integer or "
                      "percentage (e.g '5%')")
    if isinstance(value, str):
        digits = value.removesuffix("%")
        if not (value.endswith("%") and digits.isdigit()):
            raise Invalid(path, f"Invalid value: {json.dumps(value)}: a valid percent string "
                          "must be a numeric string followed by an ending '%' (e.g. '1%',  or "
                          "'93%', regex used for validation is '[0-9]+%')")
        if int(digits) > 100:
            raise Invalid(path, f"Invalid value: {json.dumps(value)}: must not be greater "
                          "than 100%")
        return None
    if value < 0:
        raise Invalid(path, f"Invalid value: {value}: must be greater than or equal to 0")
    return value


def _deployment_strategy(spec: JSON) -> None:
    strategy = spec.get("strategy") or {}
    kind = strategy.get("type")
    if kind not in ("Recreate", "RollingUpdate"):
        raise Invalid("spec.strategy.type", f"Unsupported value: {json.dumps(kind)}: "
                      'supported values: "Recreate", "RollingUpdate"')
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            raise Invalid("spec.strategy.rollingUpdate", "Forbidden: may not be specified "
                          "when strategy `type` is 'Recreate'")
        return
    params = strategy.get("rollingUpdate") or {}
    _int_or_percent(params.get("maxSurge", 0), "spec.strategy.rollingUpdate.maxSurge")
    _int_or_percent(params.get("maxUnavailable", 0), "spec.strategy.rollingUpdate.maxUnavailable")
    if _is_zero(params.get("maxSurge", 0)) and _is_zero(params.get("maxUnavailable", 0)):
        raise Invalid("spec.strategy.rollingUpdate.maxUnavailable",
                      "Invalid value: 0: may not be 0 when `maxSurge` is 0")


def _is_zero(value: Any) -> bool:
    return value in (0, "0%")


def _stateful_set(spec: JSON) -> None:
    policy = spec.get("podManagementPolicy")
    if policy not in ("OrderedReady", "Parallel"):
        raise Invalid("spec.podManagementPolicy",
                      f"Unsupported value: {json.dumps(policy)}: supported values: "
                      '"OrderedReady", "Parallel"')
    strategy = (spec.get("updateStrategy") or {}).get("type")
    if strategy not in ("RollingUpdate", "OnDelete"):
        raise Invalid("spec.updateStrategy.type",
                      f"Unsupported value: {json.dumps(strategy)}: supported values: "
                      '"OnDelete", "RollingUpdate"')
    rolling = (spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
    path = "spec.updateStrategy.rollingUpdate"
    _non_negative(rolling, "partition", f"{path}.partition")
    if rolling.get("maxUnavailable") is not None:
        value = rolling["maxUnavailable"]
        _int_or_percent(value, f"{path}.maxUnavailable")
        if _is_zero(value):
            raise Invalid(f"{path}.maxUnavailable",
                          f"Invalid value: {json.dumps(value)}: cannot be 0")
    retention = spec.get("persistentVolumeClaimRetentionPolicy") or {}
    for when in ("whenDeleted", "whenScaled"):
        if retention.get(when) not in ("Retain", "Delete"):
            raise Invalid(f"spec.persistentVolumeClaimRetentionPolicy.{when}",
                          f"Unsupported value: {json.dumps(retention.get(when))}: supported "
                          'values: "Retain", "Delete"')
    for i, claim in enumerate(spec.get("volumeClaimTemplates") or []):
        name = (claim.get("metadata") or {}).get("name")
        if not name:
            raise Invalid(f"spec.volumeClaimTemplates[{i}].metadata.name", "Required value")


def _daemon_set(obj: Resource) -> None:
    _non_negative(obj.spec, "minReadySeconds")
    _non_negative(obj.spec, "revisionHistoryLimit")
    _selector_and_template(obj)
    _restart_policy(obj, ("Always",))
    strategy = obj.spec.get("updateStrategy") or {}
    if strategy.get("type") == "RollingUpdate":
        _daemon_set_rolling_update(strategy.get("rollingUpdate") or {})


def _daemon_set_rolling_update(params: JSON) -> None:
    """One of maxSurge and maxUnavailable, counts or percentages up to 100%, non-zero."""
    path = "spec.updateStrategy.rollingUpdate"
    unavailable, surge = params.get("maxUnavailable", 0), params.get("maxSurge", 0)
    _int_or_percent(unavailable, f"{path}.maxUnavailable")
    _int_or_percent(surge, f"{path}.maxSurge")
    if not _is_zero(unavailable) and not _is_zero(surge):
        raise Invalid(f"{path}.maxSurge", f"Invalid value: {json.dumps(surge)}: may not be "
                      "set when maxUnavailable is non-zero")
    if _is_zero(unavailable) and _is_zero(surge):
        raise Invalid(f"{path}.maxUnavailable", "Required value: cannot be 0 when maxSurge "
                      "is 0")


VALIDATORS: dict[str, Callable[[Resource], None]] = {
    **dict.fromkeys(("Deployment", "ReplicaSet", "StatefulSet"), _apps),
    "DaemonSet": _daemon_set,
}

# -- updates -----------------------------------------------------------------------------------


def go_selector(raw: Any) -> str:
    """A LabelSelector as Go's ``%#v`` prints it in an immutable-field message."""
    raw = raw or {}
    labels = raw.get("matchLabels")
    exprs = raw.get("matchExpressions")
    shown_labels = go_map(labels) if labels else "map[string]string(nil)"
    shown_exprs = "[]v1.LabelSelectorRequirement(nil)" if not exprs else \
        "[]v1.LabelSelectorRequirement{" + ", ".join(
            f'v1.LabelSelectorRequirement{{Key:{json.dumps(e.get("key"))}, '
            f'Operator:{json.dumps(e.get("operator"))}, Values:[]string{{'
            + ", ".join(json.dumps(v) for v in e.get("values") or []) + "}}"
            for e in exprs) + "}"
    return f"v1.LabelSelector{{MatchLabels:{shown_labels}, MatchExpressions:{shown_exprs}}}"


def _immutable_selector(old: Resource, new: Resource) -> None:
    if old.spec.get("selector") != new.spec.get("selector"):
        raise Invalid("spec.selector", f"Invalid value: {go_selector(new.spec.get('selector'))}"
                      ": field is immutable")


_STATEFUL_SET_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy",
                         "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy",
                         "minReadySeconds")


def _apps_update(old: Resource, new: Resource, _sc: Any) -> None:
    if new.kind != "StatefulSet":  # its selector is one of the fields the Forbidden names
        _immutable_selector(old, new)
    else:
        def fixed(spec: JSON) -> JSON:
            return {k: v for k, v in spec.items() if k not in _STATEFUL_SET_MUTABLE}
        if fixed(old.spec) != fixed(new.spec):
            raise Invalid("spec", "Forbidden: updates to statefulset spec for fields other "
                          "than 'replicas', 'ordinals', 'template', 'updateStrategy', "
                          "'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' "
                          "and 'minReadySeconds' are forbidden")


UPDATE_RULES: dict[str, Callable[[Resource, Resource, Any], None]] = {
    **dict.fromkeys(APPS_KINDS, _apps_update),
}
