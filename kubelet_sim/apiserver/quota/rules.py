"""The ResourceQuota and LimitRange kinds' rules, as kube-apiserver's
``ValidateResourceQuota`` / ``ValidateLimitRange`` word them (field paths such as
``spec.hard[pods]`` and ``spec.limits[0].min[cpu]``), ``SetDefaults_LimitRangeItem``,
and the update rule that a quota's scopes never change. Go walks its maps in random
order; the errors here come in the names' order."""

from __future__ import annotations

import json
from typing import Any

from kubelet_sim.api.errors import FieldError, InvalidObject
from kubelet_sim.api.label_rules import qualified_name_errors
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import Quantity, QuantityError

from . import resource_names as names
from .resource_lists import MAX_MILLI_VALUE, comparable, milli_value

_QUOTA_STATUS_PATHS = ("hard", "used")
_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _invalid(path: str, value: Any, why: str) -> FieldError:
    """``field.Invalid``: the value as Go's JSON writes it (a quantity as its string)."""
    shown = json.dumps(value, separators=(",", ":"))
    return FieldError("FieldValueInvalid", path, f"Invalid value: {shown}: {why}")


def _resource_name(name: str, path: str) -> list[FieldError]:
    """``validateResourceName``: a qualified name; unprefixed, a standard one."""
    errors = [_invalid(path, name, why) for why in qualified_name_errors(name)]
    if not errors and "/" not in name and not names.is_standard(name):
        errors.append(_invalid(path, name, "must be a standard resource type or fully "
                                           "qualified"))
    return errors


def _quota_resource_name(name: str, path: str) -> list[FieldError]:
    errors = _resource_name(name, path)
    if "/" not in name and not names.is_standard_quota(name):
        errors.append(_invalid(path, name, "must be a standard resource for quota"))
    return errors


def _container_resource_name(name: str, path: str) -> list[FieldError]:
    errors = _resource_name(name, path)
    if "/" not in name:
        if name not in names.STANDARD_CONTAINER and not name.startswith(names.HUGE_PAGES):
            errors.append(_invalid(path, name, "must be a standard resource for containers"))
    elif not names.is_native(name) and not names.is_extended(name):
        errors.append(_invalid(path, name, "doesn't follow extended resource name standard"))
    return errors


def _quantities(raw: Any, path: str, errors: list[FieldError]) -> dict[str, Quantity]:
    """A resource list's quantities; one that does not parse is an error at its key."""
    out: dict[str, Quantity] = {}
    if raw is None:
        return out
    if not isinstance(raw, dict):
        errors.append(_invalid(path, raw, "must be a map of resource names to quantities"))
        return out
    for key in sorted(raw):
        try:
            out[str(key)] = Quantity.parse(raw[key])
        except QuantityError as exc:
            errors.append(_invalid(f"{path}[{key}]", raw[key], str(exc)))
    return out


def _quantity_value(name: str, value: Quantity, path: str) -> list[FieldError]:
    """``ValidateResourceQuantityValue``: never negative; whole for integer resources."""
    errors = []
    if value.amount < 0:
        errors.append(_invalid(path, value.canonical(), "must be greater than or equal to 0"))
    if names.is_integer(name) and milli_value(value) % 1000:
        errors.append(_invalid(path, value.canonical(), "must be an integer"))
    return errors


def _quota_list(raw: Any, path: str, errors: list[FieldError]) -> dict[str, Quantity]:
    parsed = _quantities(raw, path, errors)
    for key, value in parsed.items():
        errors.extend(_quota_resource_name(key, f"{path}[{key}]"))
        errors.extend(_quantity_value(key, value, f"{path}[{key}]"))
    return parsed


def _scopes(spec: JSON, hard: dict[str, Quantity], errors: list[FieldError]) -> None:
    scopes = spec.get("scopes") or []
    if not scopes:
        return
    for scope in scopes:
        if scope not in names.SCOPES:
            errors.append(_invalid("spec.scopes", scopes, "unsupported scope"))
        for key in sorted(hard):
            if names.is_standard_quota(key) and not names.scope_applies_to(str(scope), key):
                errors.append(_invalid("spec.scopes", scopes,
                                       "unsupported scope applied to resource"))
    chosen = set(scopes)
    for pair in ({"BestEffort", "NotBestEffort"}, {"Terminating", "NotTerminating"}):
        if pair <= chosen:
            errors.append(_invalid("spec.scopes", scopes, "conflicting scopes"))


def _scope_selector(spec: JSON, hard: dict[str, Quantity], errors: list[FieldError]) -> None:
    selector = spec.get("scopeSelector")
    if not isinstance(selector, dict):
        return
    path = "spec.scopeSelector.matchExpressions"
    for i, req in enumerate(selector.get("matchExpressions") or []):
        item = f"{path}[{i}]"
        scope, operator = req.get("scopeName"), req.get("operator")
        if scope not in names.SCOPES:
            errors.append(_invalid(f"{item}.scopeName", scope, "unsupported scope"))
        for key in sorted(hard):
            if names.is_standard_quota(key) and not names.scope_applies_to(str(scope), key):
                errors.append(_invalid(f"{item}.scopeName", scope,
                                       "unsupported scope applied to resource"))
        values = req.get("values") or []
        if operator not in _SELECTOR_OPERATORS:
            listed = ", ".join(json.dumps(o) for o in _SELECTOR_OPERATORS)
            errors.append(FieldError("FieldValueNotSupported", f"{item}.operator",
                                     f"Unsupported value: {json.dumps(operator)}: supported "
                                     f"values: {listed}"))
        elif operator in ("In", "NotIn") and not values:
            errors.append(FieldError("FieldValueRequired", f"{item}.values",
                                     "Required value: must be at least one value when "
                                     "`operator` is 'In' or 'NotIn' for scope selector"))
        elif operator in ("Exists", "DoesNotExist") and values:
            errors.append(_invalid(f"{item}.values", values,
                                   "must be no value when `operator` is 'Exist' or "
                                   "'DoesNotExist' for scope selector"))


def validate_resource_quota(quota: Resource) -> None:
    errors: list[FieldError] = []
    hard = _quota_list(quota.spec.get("hard"), "spec.hard", errors)
    _scopes(quota.spec, hard, errors)
    _scope_selector(quota.spec, hard, errors)
    for part in _QUOTA_STATUS_PATHS:
        _quota_list(quota.status.get(part), f"status.{part}", errors)
    if errors:
        raise InvalidObject("ResourceQuota", quota.name, errors)


def validate_resource_quota_update(old: Resource, new: Resource) -> None:
    """The scopes a quota was made with stay (``field is immutable``)."""
    if set(old.spec.get("scopes") or []) != set(new.spec.get("scopes") or []):
        raise InvalidObject("ResourceQuota", new.name, [_invalid(
            "spec.scopes", new.spec.get("scopes") or [], "field is immutable")])


def _canonical(raw: Any) -> None:
    """Quantities written back in their canonical spelling, as a stored
    ``resource.Quantity`` is (``1.5Gi`` → ``1536Mi``); what does not parse is left to
    validation."""
    if not isinstance(raw, dict):
        return
    for key, value in raw.items():
        try:
            raw[key] = Quantity.parse(value).canonical()
        except QuantityError:
            continue


def default_resource_quota(quota: Resource) -> None:
    _canonical(quota.spec.get("hard"))
    for part in _QUOTA_STATUS_PATHS:
        _canonical(quota.status.get(part))


# ---------------------------------------------------------------------------- LimitRange

def default_limit_range(obj: Resource) -> None:
    """``SetDefaults_LimitRangeItem``: a Container item's default limit falls back to its
    max, its default request to the default limit, then to its min. Quantities are kept
    canonical."""
    for item in obj.spec.get("limits") or []:
        if not isinstance(item, dict):
            continue
        for field in _LIMIT_LISTS:
            _canonical(item.get(field))
        if item.get("type") != "Container":
            continue
        default = dict(item.get("default") or {})
        request = dict(item.get("defaultRequest") or {})
        for key, value in (item.get("max") or {}).items():
            default.setdefault(key, value)
        for key, value in default.items():
            request.setdefault(key, value)
        for key, value in (item.get("min") or {}).items():
            request.setdefault(key, value)
        if default:
            item["default"] = default
        if request:
            item["defaultRequest"] = request


_LIMIT_LISTS = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def validate_limit_range(obj: Resource) -> None:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for i, item in enumerate(obj.spec.get("limits") or []):
        _limit_item(item, f"spec.limits[{i}]", seen, errors)
    if errors:
        raise InvalidObject("LimitRange", obj.name, errors)


def _limit_item(item: JSON, path: str, seen: set[str], errors: list[FieldError]) -> None:
    kind = str(item.get("type") or "")
    type_errors = [_invalid(f"{path}.type", kind, why) for why in qualified_name_errors(kind)]
    if not type_errors and "/" not in kind and kind not in names.LIMIT_TYPES:
        type_errors.append(_invalid(f"{path}.type", kind,
                                    "must be a standard limit type or fully qualified"))
    errors.extend(type_errors)
    if kind in seen:
        errors.append(FieldError("FieldValueDuplicate", f"{path}.type",
                                 f"Duplicate value: {json.dumps(kind)}"))
    seen.add(kind)
    lists: dict[str, dict[str, Quantity]] = {}
    for field in _LIMIT_LISTS:
        if kind == "Pod" and field in ("default", "defaultRequest"):
            if item.get(field):
                errors.append(FieldError("FieldValueForbidden", f"{path}.{field}",
                                         "Forbidden: may not be specified when `type` is "
                                         "'Pod'"))
            lists[field] = {}
            continue
        lists[field] = _quantities(item.get(field), f"{path}.{field}", errors)
        for key in lists[field]:
            at = f"{path}.{field}[{key}]"
            errors.extend(_container_resource_name(key, at) if kind in ("Pod", "Container")
                          else _resource_name(key, at))
    if kind == "PersistentVolumeClaim" and "storage" not in lists["min"] \
            and "storage" not in lists["max"]:
        errors.append(FieldError("FieldValueRequired", f"{path}.limits",
                                 "Required value: either minimum or maximum storage value is "
                                 "required, but neither was provided"))
    keys = sorted(set().union(*lists.values()))
    for key in keys:
        errors.extend(_limit_consistency(key, lists, path))


def _limit_consistency(key: str, lists: dict[str, dict[str, Quantity]],
                       path: str) -> list[FieldError]:
    low, high = lists["min"].get(key), lists["max"].get(key)
    default, request = lists["default"].get(key), lists["defaultRequest"].get(key)
    ratio = lists["maxLimitRequestRatio"].get(key)
    out = []

    def invalid(field: str, shown: Quantity, why: str) -> None:
        out.append(_invalid(f"{path}.{field}[{key}]", shown.canonical(), why))

    if low and high and low.amount > high.amount:
        invalid("min", low, f"min value {low} is greater than max value {high}")
    if request and low and low.amount > request.amount:
        invalid("defaultRequest", request,
                f"min value {low} is greater than default request value {request}")
    if request and high and request.amount > high.amount:
        invalid("defaultRequest", request,
                f"default request value {request} is greater than max value {high}")
    if request and default and request.amount > default.amount:
        invalid("defaultRequest", request,
                f"default request value {request} is greater than default limit value "
                f"{default}")
    if default and low and low.amount > default.amount:
        invalid("default", low, f"min value {low} is greater than default value {default}")
    if default and high and default.amount > high.amount:
        invalid("default", high, f"default value {default} is greater than max value {high}")
    if ratio and ratio.amount < 1:
        invalid("maxLimitRequestRatio", ratio, f"ratio {ratio} is less than 1")
    if ratio and low and high:
        ratio_value, low_value, high_value = comparable(ratio, low, high)
        in_milli = all(q.value() <= MAX_MILLI_VALUE for q in (ratio, low, high))
        if low_value and ratio_value / (1000 if in_milli else 1) > high_value / low_value:
            invalid("maxLimitRequestRatio", ratio,
                    f"ratio {ratio} is greater than max/min = {high_value / low_value:f}")
    if not names.overcommit_allowed(key) and default and request \
            and default.amount != request.amount:
        invalid("defaultRequest", request,
                f"default value {default} must equal to defaultRequest value {request} "
                f"in {key}")
    return out


# ---------------------------------------------------------------------------- containers

def validate_container_resources(pod: Resource) -> None:
    """``validateContainerResourceRequirements`` for each container and init container:
    container resource names, non-negative (and whole, for integer resources)
    quantities, a request at most its limit (equal to it for resources that cannot be
    overcommitted, which need a limit), and huge pages only beside cpu or memory. Run
    after the LimitRanger's defaults are in, as kube-apiserver validates after the
    mutating admission plugins."""
    errors: list[FieldError] = []
    for field in ("containers", "initContainers"):
        for i, container in enumerate(pod.spec.get(field) or []):
            resources = container.get("resources") if isinstance(container, dict) else None
            if isinstance(resources, dict):
                errors += _requirements(resources, f"spec.{field}[{i}].resources")
    if errors:
        raise InvalidObject("Pod", pod.name, errors)


def _requirements(resources: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    limits = _quantities(resources.get("limits"), f"{path}.limits", errors)
    requests = _quantities(resources.get("requests"), f"{path}.requests", errors)
    for field, items in (("limits", limits), ("requests", requests)):
        for name, value in items.items():
            at = f"{path}.{field}[{name}]"
            errors += _container_resource_name(name, at)
            errors += _quantity_value(name, value, at)
            if field == "limits":
                continue
            limit = limits.get(name)
            if limit is not None and value.amount != limit.amount \
                    and not names.overcommit_allowed(name):
                errors.append(_invalid(f"{path}.requests", value.canonical(),
                                       f"must be equal to {name} limit of {limit}"))
            elif limit is not None and value.amount > limit.amount:
                errors.append(_invalid(f"{path}.requests", value.canonical(),
                                       f"must be less than or equal to {name} limit of "
                                       f"{limit}"))
            elif limit is None and not names.overcommit_allowed(name):
                errors.append(FieldError("FieldValueRequired", f"{path}.limits",
                                         "Required value: Limit must be set for non "
                                         "overcommitable resources"))
    named = set(limits) | set(requests)
    if any(n.startswith(names.HUGE_PAGES) for n in named) and not named & {"cpu", "memory"}:
        errors.append(FieldError("FieldValueForbidden", path,
                                 "Forbidden: HugePages require cpu or memory"))
    return errors
