"""The ResourceQuota admission plugin (k8s.io/apiserver's ``resourcequota``): a write
that would take a namespace past one of its quotas is refused with 403 in the plugin's
words, and one that fits is charged to the quotas' ``status.used`` before it is stored,
so two creates can never both take the last unit.

* only quotas whose ``status.hard`` tracks something of the kind, and whose scopes the
  object is in, count (a quota the controller has not computed yet tracks nothing);
* ``failed quota: <quota>: must specify ...`` when a tracked cpu or memory is not set on
  every container;
* ``status unknown for quota: <quota>, resources: ...`` when ``status.used`` lacks a
  tracked resource;
* ``exceeded quota: <quota>, requested: <r>=<q>, used: <r>=<q>, limited: <r>=<q>``;
* an update is charged only what it adds (a claim resized up, a Service turned into a
  NodePort); creates of every namespaced kind count under ``count/<resource>``;
* a claim's status write that changes its allocated storage (or attributes classes) is
  charged what it adds without being refused.
"""

from __future__ import annotations

from datetime import datetime

from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.api.model import Resource

from . import usage
from .resource_lists import (
    ResourceList,
    add,
    exceeded,
    mask,
    negative,
    parse_list,
    pretty,
    remove_zeros,
    subtract_non_negative,
    to_json,
)


def _refuse(obj: Resource, why: str) -> ObjectForbidden:
    return ObjectForbidden(why, obj.kind, obj.name)


def charge(obj: Resource, old: Resource | None, quotas: list[Resource],
           now: datetime, status: bool = False,
           ev: usage.Evaluator | None = None) -> list[Resource]:
    """Check ``obj`` (a create, or an update of ``old``; ``status``: of its status
    subresource) against its namespace's ``quotas``; the quotas whose usage it changes,
    with their new ``status.used``, to be written before the object is. Raises
    :class:`ObjectForbidden` when it does not fit (a status write is charged, never
    refused). ``ev`` measures a kind the built-in evaluators do not know (a custom
    resource's object count)."""
    ev = ev or usage.evaluator(obj.kind)
    if ev is None or (old is not None and not ev.handles_update):
        return []
    if status and (old is None or not usage.requires_replenish(obj, old)):
        return []
    interesting: list[Resource] = []
    for quota in sorted(quotas, key=lambda q: q.name):
        if not usage.matches(ev, quota, obj):
            continue
        hard = parse_list(quota.status.get("hard"))
        tracked = ev.matching(hard)
        lacking = ev.constraints(tracked, obj)
        if lacking:
            raise _refuse(obj, f"failed quota: {quota.name}: {lacking}")
        used = parse_list(quota.status.get("used"))
        if any(name not in used for name in tracked):
            raise _refuse(obj, f"status unknown for quota: {quota.name}, resources: "
                               f"{','.join(sorted(tracked))}")
        interesting.append(quota)
    if not interesting:
        return []
    wanted = ev.usage(obj, now)
    below_zero = negative(wanted)
    if below_zero:
        raise _refuse(obj, "quota usage is negative for resource(s): " + ",".join(below_zero))
    deltas: dict[str, ResourceList] = {q.name: wanted for q in interesting}
    if old is not None and old.metadata.resource_version:
        grown = subtract_non_negative(wanted, ev.usage(old, now))
        for quota in interesting:
            if usage.matches(ev, quota, old):
                deltas[quota.name] = grown
    changed: list[Resource] = []
    for quota in interesting:
        delta = remove_zeros(deltas[quota.name])
        if not delta:
            continue
        hard = parse_list(quota.status.get("hard"))
        used = parse_list(quota.status.get("used"))
        requested = mask(delta, hard)
        new_used = add(used, requested)
        over = [] if status else exceeded(mask(new_used, requested), hard)
        if over:
            raise _refuse(obj, f"exceeded quota: {quota.name}, "
                               f"requested: {pretty(mask(requested, over))}, "
                               f"used: {pretty(mask(used, over))}, "
                               f"limited: {pretty(mask(hard, over))}")
        charged = quota.copy()
        charged.status = {**charged.status, "used": to_json(new_used)}
        changed.append(charged)
    return changed
