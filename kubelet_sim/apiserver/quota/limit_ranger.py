"""The LimitRanger admission plugin: a new pod's containers (and init containers) get the
``default`` limits and ``defaultRequest`` requests of their namespace's LimitRanges for
what they do not set (noted in the ``kubernetes.io/limit-ranger`` annotation), then
pods and claims are held to the ranges' ``min``, ``max`` and ``maxLimitRequestRatio``
per Container, per Pod and per PersistentVolumeClaim, refused with 403 in the plugin's
words (``minimum cpu usage per Container is 100m, but request is 50m``; several at once
in brackets). Pod updates are not looked at (containers' resources do not change), nor
objects being deleted."""

from __future__ import annotations

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import Quantity

from .resource_lists import MAX_MILLI_VALUE, ResourceList, comparable, milli_value, parse_list
from .usage import container_resources, pod_resources

ANNOTATION = "kubernetes.io/limit-ranger"


def _defaults(limit_range: Resource) -> tuple[JSON, JSON]:
    """A range's default limits and requests for containers (its Container items')."""
    limits: JSON = {}
    requests: JSON = {}
    for item in limit_range.spec.get("limits") or []:
        if isinstance(item, dict) and item.get("type") == "Container":
            requests.update(item.get("defaultRequest") or {})
            limits.update(item.get("default") or {})
    return limits, requests


def _fill(container: JSON, limits: JSON, requests: JSON, what: str) -> list[str]:
    had = "resources" in container
    resources = container.setdefault("resources", {})
    if not isinstance(resources, dict):
        return []  # malformed: validation refuses it next
    notes = []
    for field, defaults, word in (("requests", requests, "request"),
                                  ("limits", limits, "limit")):
        current = resources.get(field) or {}
        if not isinstance(current, dict):
            continue
        filled = sorted(k for k in defaults if k not in current)
        if filled:
            resources[field] = {**current, **{k: defaults[k] for k in filled}}
            notes.append(f"{', '.join(filled)} {word} for {what} {container.get('name')}")
    if not resources and not had:
        del container["resources"]
    return notes


def mutate(obj: Resource, ranges: list[Resource]) -> None:
    """LimitRanger's mutating half on a pod create: each range's defaults filled in, in
    turn (the annotation tells what the last range that filled anything set)."""
    if obj.kind != "Pod" or not ranges:
        return
    for limit_range in ranges:
        limits, requests = _defaults(limit_range)
        notes: list[str] = []
        for field, what in (("containers", "container"), ("initContainers", "init container")):
            for container in obj.spec.get(field) or []:
                if isinstance(container, dict):
                    notes += _fill(container, limits, requests, what)
        if notes:
            obj.metadata.annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)


def _minimum(kind: str, name: str, enforced: Quantity, requests: ResourceList,
             limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, floor = comparable(request or Quantity.parse("0"),
                                             limit or Quantity.parse("0"), enforced)
    if request is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if req_value < floor:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {request}"
    if limit is not None and lim_value < floor:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {limit}"
    return None


def _maximum(kind: str, name: str, enforced: Quantity, requests: ResourceList,
             limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, ceiling = comparable(request or Quantity.parse("0"),
                                               limit or Quantity.parse("0"), enforced)
    if limit is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if lim_value > ceiling:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {limit}"
    if request is not None and req_value > ceiling:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return None


def _maximum_request(kind: str, name: str, enforced: Quantity,
                     requests: ResourceList) -> str | None:
    request = requests.get(name)
    req_value, _, ceiling = comparable(request or Quantity.parse("0"), Quantity.parse("0"),
                                       enforced)
    if request is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if req_value > ceiling:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {request}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: ResourceList,
           limits: ResourceList) -> str | None:
    request, limit = requests.get(name), limits.get(name)
    req_value, lim_value, _ = comparable(request or Quantity.parse("0"),
                                         limit or Quantity.parse("0"), enforced)
    head = f"{name} max limit to request ratio per {kind} is {enforced}"
    if request is None or req_value == 0:
        return f"{head}, but no request is specified or request is 0"
    if limit is None or lim_value == 0:
        return f"{head}, but no limit is specified or limit is 0"
    observed = lim_value / req_value
    allowed = float(enforced.value())
    scaled = observed
    if enforced.value() <= MAX_MILLI_VALUE:
        scaled, allowed = observed * 1000, float(milli_value(enforced))
    if scaled > allowed:
        return f"{head}, but provided ratio is {observed:f}"
    return None


def _check(item: JSON, kind: str, requests: ResourceList, limits: ResourceList,
           errors: list[str]) -> None:
    for name, enforced in sorted(parse_list(item.get("min")).items()):
        errors.append(_minimum(kind, name, enforced, requests, limits) or "")
    for name, enforced in sorted(parse_list(item.get("max")).items()):
        errors.append(_maximum(kind, name, enforced, requests, limits) or "")
    for name, enforced in sorted(parse_list(item.get("maxLimitRequestRatio")).items()):
        errors.append(_ratio(kind, name, enforced, requests, limits) or "")


def _container_lists(container: object) -> tuple[ResourceList, ResourceList]:
    return container_resources(container, "requests"), container_resources(container, "limits")


def _pod_errors(pod: Resource, item: JSON) -> list[str]:
    errors: list[str] = []
    if item.get("type") == "Container":
        for container in [*(pod.spec.get("containers") or []),
                          *(pod.spec.get("initContainers") or [])]:
            requests, limits = _container_lists(container)
            _check(item, "Container", requests, limits, errors)
    elif item.get("type") == "Pod":
        _check(item, "Pod", pod_resources(pod.spec, "requests", overhead=False),
               pod_resources(pod.spec, "limits", overhead=False), errors)
    return errors


def _claim_errors(claim: Resource, item: JSON) -> list[str]:
    if item.get("type") != "PersistentVolumeClaim":
        return []
    requests = parse_list((claim.spec.get("resources") or {}).get("requests"))
    errors = [_minimum("PersistentVolumeClaim", name, enforced, requests, {}) or ""
              for name, enforced in sorted(parse_list(item.get("min")).items())]
    errors += [_maximum_request("PersistentVolumeClaim", name, enforced, requests) or ""
               for name, enforced in sorted(parse_list(item.get("max")).items())]
    return errors


def validate(obj: Resource, old: Resource | None, ranges: list[Resource]) -> None:
    """LimitRanger's validating half: a pod create, or a claim's create or update, within
    every range of its namespace (the first range it breaks is the answer)."""
    if obj.kind not in ("Pod", "PersistentVolumeClaim"):
        return
    if old is not None and (obj.kind == "Pod" or old.metadata.deletion_timestamp):
        return
    check = _pod_errors if obj.kind == "Pod" else _claim_errors
    for limit_range in ranges:
        errors: list[str] = []
        for item in limit_range.spec.get("limits") or []:
            if isinstance(item, dict):
                errors += [e for e in check(obj, item) if e]
        unique = list(dict.fromkeys(errors))
        if unique:
            why = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
            raise ObjectForbidden(why, obj.kind, obj.name)
