"""What an object uses of a quota, as kube-controller-manager's and the admission
plugin's quota evaluators measure it (``pkg/quota/v1/evaluator/core`` and
k8s.io/apiserver's generic object counter).

Every namespaced kind is counted as ``count/<resource>[.<group>]`` (a custom resource as
``count/<its definition's name>``, which is ``<plural>.<group>``); ConfigMaps, Secrets
and ResourceQuotas also under their legacy names. Pods add ``pods`` and the compute
resources of their requests and limits while they are not finished (``count/pods``
counts them all); claims add ``persistentvolumeclaims`` and ``requests.storage``, also
per storage class (``<class>.storageclass.storage.k8s.io/...``); Services add
``services``, ``services.nodeports`` and ``services.loadbalancers``.
"""

from __future__ import annotations

import decimal
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from kubelet_sim.api.model import JSON, KINDS, Resource, parse_time
from kubelet_sim.api.quantity import Quantity
from kubelet_sim.apiserver.defaulting import qos_class

from . import resource_names as names
from .resource_lists import ResourceList, add, count, parse_list, plus

# the kinds admission leaves alone (quota's default ignored resources)
IGNORED = frozenset({"Event"})
LEGACY_COUNT_NAMES = {"ConfigMap": "configmaps", "Secret": "secrets",
                      "ResourceQuota": "resourcequotas"}
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
# the quota resources a pod must set in each container when a quota tracks them
_MUST_SPECIFY = frozenset({"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu",
                           "limits.memory"})
_POD_RESOURCES = frozenset({"count/pods", "cpu", "memory", "ephemeral-storage",
                            "requests.cpu", "requests.memory", "requests.ephemeral-storage",
                            "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods"})
_SERVICE_RESOURCES = frozenset({"count/services", "services", "services.nodeports",
                                "services.loadbalancers"})
_PVC_RESOURCES = ("persistentvolumeclaims", "requests.storage")
_IRREGULAR_PLURALS = {"Endpoints": "endpoints"}


def plural(kind: str) -> str:
    """The REST resource of a built-in kind, as Kubernetes' type namer plurals it."""
    if kind in _IRREGULAR_PLURALS:
        return _IRREGULAR_PLURALS[kind]
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return lower + "es"
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    return lower + "s"


def object_count_name(kind: str) -> str:
    """``count/<resource>`` for the core group, ``count/<resource>.<group>`` otherwise."""
    group = KINDS[kind].api_version.rpartition("/")[0]
    return f"count/{plural(kind)}" + (f".{group}" if group else "")


ScopeRequirement = JSON  # {"scopeName", "operator", "values"}


@dataclass(frozen=True)
class Evaluator:
    """One kind's quota evaluator."""

    kind: str
    # the quota resource names among ``hard`` this kind uses
    matching: Callable[[Iterable[str]], list[str]]
    usage: Callable[[Resource, datetime], ResourceList]
    # whether an object is in one scope requirement of a quota
    in_scope: Callable[[ScopeRequirement, Resource], bool]
    # an update may change what the object uses (claims, Services)
    handles_update: bool = False
    # what the object lacks that a quota tracking ``required`` needs (None: nothing)
    constraints: Callable[[list[str], Resource], str | None] = lambda _r, _o: None


def _no_scope(_scope: ScopeRequirement, _obj: Resource) -> bool:
    return False


def object_counter(kind: str, counted: list[str]) -> Evaluator:
    """The generic evaluator: each object of ``kind`` is one of each name ``counted``."""

    def matching(hard: Iterable[str]) -> list[str]:
        return [n for n in hard if n in counted]

    def usage(_obj: Resource, _now: datetime) -> ResourceList:
        return dict.fromkeys(counted, count(1))

    return Evaluator(kind, matching, usage, _no_scope)


# ------------------------------------------------------------------------------- pods

def _add_into(total: ResourceList, more: ResourceList) -> None:
    for name, q in more.items():
        total[name] = plus(total[name], q) if name in total else q


def _max_into(total: ResourceList, more: ResourceList) -> None:
    for name, q in more.items():
        if name not in total or q.amount > total[name].amount:
            total[name] = q


def container_resources(container: Any, field: str) -> ResourceList:
    """A container's ``requests`` or ``limits`` (nothing when malformed)."""
    resources = container.get("resources") if isinstance(container, dict) else None
    return parse_list(resources.get(field)) if isinstance(resources, dict) else {}


def pod_resources(spec: JSON, field: str, overhead: bool = True) -> ResourceList:
    """A pod's effective ``requests`` or ``limits`` (``resourcehelper.PodRequests`` /
    ``PodLimits``): its containers summed, sidecars added, the largest init container
    step, pod-level cpu and memory when set, then the overhead."""
    total: ResourceList = {}
    for container in spec.get("containers") or []:
        _add_into(total, container_resources(container, field))
    sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in spec.get("initContainers") or []:
        own = container_resources(container, field)
        if isinstance(container, dict) and container.get("restartPolicy") == "Always":
            _add_into(total, own)
            _add_into(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(own)
            _add_into(step, sidecars)
        _max_into(init_peak, step)
    _max_into(total, init_peak)
    pod_level = parse_list(((spec.get("resources") or {}) if isinstance(
        spec.get("resources"), dict) else {}).get(field))
    for name in ("cpu", "memory"):
        if name in pod_level:
            total[name] = pod_level[name]
    if overhead:
        extra = parse_list(spec.get("overhead"))
        if field == "requests":
            _add_into(total, extra)
        else:
            for name, q in extra.items():
                if name in total:
                    total[name] = plus(total[name], q)
    return total


def compute_usage(requests: ResourceList, limits: ResourceList) -> ResourceList:
    """``podComputeUsageHelper``: ``pods`` 1 and each request and limit under its quota
    names."""
    out: ResourceList = {"pods": count(1)}
    for name in ("cpu", "memory", "ephemeral-storage"):
        if name in requests:
            out[name] = requests[name]
            out[f"requests.{name}"] = requests[name]
        if name in limits:
            out[f"limits.{name}"] = limits[name]
    for name, q in requests.items():
        if name.startswith(names.HUGE_PAGES):
            out[name] = q
            out[names.REQUESTS + name] = q
        if names.is_extended(name):
            out[names.REQUESTS + name] = q
    return out


def pod_counts(pod: Resource, now: datetime) -> bool:
    """``QuotaV1Pod``: a finished pod, or one past its deletion grace, uses nothing."""
    if pod.status.get("phase") in ("Succeeded", "Failed"):
        return False
    meta = pod.metadata
    if meta.deletion_timestamp and meta.deletion_grace_period_seconds is not None:
        gone_at = parse_time(meta.deletion_timestamp) + timedelta(
            seconds=meta.deletion_grace_period_seconds)
        if now > gone_at:
            return False
    return True


def _pod_usage(pod: Resource, now: datetime) -> ResourceList:
    out: ResourceList = {"count/pods": count(1)}
    if not pod_counts(pod, now):
        return out
    return add(out, compute_usage(pod_resources(pod.spec, "requests"),
                                  pod_resources(pod.spec, "limits")))


def _pod_matching(hard: Iterable[str]) -> list[str]:
    return [n for n in hard if n in _POD_RESOURCES or names.is_quota_huge_pages(n)
            or (not names.is_native(n) and n.startswith(names.REQUESTS))]


def _selector_matches(req: ScopeRequirement, value: str | None) -> bool:
    """A scope selector requirement read as a label selector on ``{scope: value}``."""
    operator, values = req.get("operator"), req.get("values") or []
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False


def _cross_namespace_affinity(spec: JSON) -> bool:
    affinity = spec.get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        terms = affinity.get(kind) or {}
        required = terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []
        preferred = [(t or {}).get("podAffinityTerm") or {} for t in
                     terms.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None
               for t in [*required, *preferred]):
            return True
    return False


def _pod_in_scope(req: ScopeRequirement, pod: Resource) -> bool:
    scope = req.get("scopeName")
    terminating = isinstance(pod.spec.get("activeDeadlineSeconds"), int) \
        and pod.spec["activeDeadlineSeconds"] >= 0
    if scope == "Terminating":
        return terminating
    if scope == "NotTerminating":
        return not terminating
    best_effort = qos_class(pod.spec) == "BestEffort"
    if scope == "BestEffort":
        return best_effort
    if scope == "NotBestEffort":
        return not best_effort
    if scope == "PriorityClass":
        name = pod.spec.get("priorityClassName") or None
        if req.get("operator") == "Exists":
            return name is not None
        return _selector_matches(req, name)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod.spec)
    return False


def _pod_constraints(required: list[str], pod: Resource) -> str | None:
    """Each container must set what a quota tracks of cpu and memory."""
    wanted = set(required) & _MUST_SPECIFY
    missing: dict[str, set[str]] = {}
    for container in [*(pod.spec.get("containers") or []),
                      *(pod.spec.get("initContainers") or [])]:
        has = set(compute_usage(container_resources(container, "requests"),
                                container_resources(container, "limits")))
        for name in wanted - has:
            missing.setdefault(name, set()).add(str(container.get("name")))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{name} for: {','.join(sorted(missing[name]))}"
                                       for name in sorted(missing))


# ------------------------------------------------------------------------------- claims

def claim_class(claim: Resource) -> str:
    """``GetPersistentVolumeClaimClass``: the beta annotation first, then the field."""
    annotated = claim.metadata.annotations.get("volume.beta.kubernetes.io/storage-class")
    return annotated if annotated is not None else str(claim.spec.get("storageClassName") or "")


def _whole(q: Quantity) -> Quantity:
    """``RoundUp(0)``: storage counts whole bytes."""
    return Quantity(q.amount.to_integral_value(rounding=decimal.ROUND_CEILING), q.format) \
        if q.amount != q.amount.to_integral_value() else q


def _claim_storage(claim: Resource) -> Quantity | None:
    requested = parse_list((claim.spec.get("resources") or {}).get("requests")).get("storage")
    if requested is None:
        return None
    result = _whole(requested)
    allocated = parse_list(claim.status.get("allocatedResources")).get("storage")
    if allocated is not None and allocated.amount > result.amount:
        result = _whole(allocated)
    return result


def _claim_usage(claim: Resource, _now: datetime) -> ResourceList:
    out: ResourceList = {"persistentvolumeclaims": count(1),
                         "count/persistentvolumeclaims": count(1)}
    klass = claim_class(claim)
    if klass:
        out[klass + STORAGE_CLASS_SUFFIX + "persistentvolumeclaims"] = count(1)
    storage = _claim_storage(claim)
    if storage is not None:
        out["requests.storage"] = storage
        if klass:
            out[klass + STORAGE_CLASS_SUFFIX + "requests.storage"] = storage
    return out


def _claim_matching(hard: Iterable[str]) -> list[str]:
    return [n for n in hard if n == "count/persistentvolumeclaims" or n in _PVC_RESOURCES
            or any(n.endswith(STORAGE_CLASS_SUFFIX + r) for r in _PVC_RESOURCES)]


def _attributes_classes(claim: Resource) -> set[str]:
    """The VolumeAttributesClasses a claim names: asked for, current, and target."""
    return {c for c in (claim.spec.get("volumeAttributesClassName"),
                        claim.status.get("currentVolumeAttributesClassName"),
                        (claim.status.get("modifyVolumeStatus") or {}).get(
                            "targetVolumeAttributesClassName")) if c}


def requires_replenish(claim: Resource, old: Resource) -> bool:
    """``RequiresQuotaReplenish``: a claim's status write quota looks at (its allocated
    storage or its attributes classes changed)."""
    if claim.kind != "PersistentVolumeClaim":
        return False
    def allocated(c: Resource) -> Any:
        return (c.status.get("allocatedResources") or {}).get("storage")
    return allocated(claim) != allocated(old) or \
        _attributes_classes(claim) != _attributes_classes(old)


def _claim_in_scope(req: ScopeRequirement, claim: Resource) -> bool:
    if req.get("scopeName") != "VolumeAttributesClass":
        return False
    classes = _attributes_classes(claim)
    if req.get("operator") == "Exists":
        return bool(classes)
    if not classes:
        return _selector_matches(req, None)
    return any(_selector_matches(req, c) for c in classes)


# ------------------------------------------------------------------------------- services

def _service_usage(service: Resource, _now: datetime) -> ResourceList:
    ports = len(service.spec.get("ports") or [])
    out: ResourceList = {"count/services": count(1), "services": count(1),
                         "services.loadbalancers": Quantity(Decimal(0), "DecimalSI"),
                         "services.nodeports": Quantity(Decimal(0), "DecimalSI")}
    kind = service.spec.get("type")
    if kind == "NodePort":
        out["services.nodeports"] = count(ports)
    elif kind == "LoadBalancer":
        out["services.loadbalancers"] = count(1)
        allocates = service.spec.get("allocateLoadBalancerNodePorts") is not False
        out["services.nodeports"] = count(ports if allocates else 0)
    return out


_SPECIAL: dict[str, Evaluator] = {
    "Pod": Evaluator("Pod", _pod_matching, _pod_usage, _pod_in_scope,
                     constraints=_pod_constraints),
    "PersistentVolumeClaim": Evaluator("PersistentVolumeClaim", _claim_matching,
                                       _claim_usage, _claim_in_scope, handles_update=True),
    "Service": Evaluator("Service", lambda hard: [n for n in hard if n in _SERVICE_RESOURCES],
                         _service_usage, _no_scope, handles_update=True),
}


def evaluator(kind: str) -> Evaluator | None:
    """The evaluator of a namespaced built-in kind (None: quota leaves the kind alone)."""
    info = KINDS.get(kind)
    if info is None or not info.namespaced or kind in IGNORED:
        return None
    counted = [object_count_name(kind), *([LEGACY_COUNT_NAMES[kind]]
                                          if kind in LEGACY_COUNT_NAMES else [])]
    return _SPECIAL.get(kind) or object_counter(kind, counted)


def evaluators() -> list[Evaluator]:
    """Every kind's evaluator (the controller sums them over what exists)."""
    return [e for e in (evaluator(k) for k in KINDS) if e is not None]


def scope_requirements(quota: Resource) -> list[ScopeRequirement]:
    """The quota's scopes as ``Exists`` requirements, then its scope selector's."""
    out: list[ScopeRequirement] = [{"scopeName": s, "operator": "Exists"}
                                   for s in quota.spec.get("scopes") or []]
    out.extend((quota.spec.get("scopeSelector") or {}).get("matchExpressions") or [])
    return out


def matches(ev: Evaluator, quota: Resource, obj: Resource) -> bool:
    """``generic.Matches``: the quota tracks something of the kind (by its
    ``status.hard``) and the object is in every scope of it."""
    if not ev.matching(parse_list(quota.status.get("hard"))):
        return False
    return all(ev.in_scope(req, obj) for req in scope_requirements(quota))
