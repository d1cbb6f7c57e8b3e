"""The deployment controller's arithmetic for a scaling event (its ``scale``): when the
Deployment's ``replicas`` changes while several ReplicaSets have pods (a rollout in
progress, or a paused one), the replicas added or removed are spread over the active
ReplicaSets in proportion to their sizes.

Each active ReplicaSet's share is ``round(size * maxReplicas / maxReplicasBefore) - size``,
``maxReplicas`` being the Deployment's ``replicas + maxSurge`` now and ``maxReplicasBefore``
the ``deployment.kubernetes.io/max-replicas`` annotation the ReplicaSet was last scaled
with (the Deployment's ``status.replicas`` when it has none); shares never exceed what is
left to add or remove, and what rounding leaves over goes to the first ReplicaSet in the
controller's order: the largest, the newest of equal ones when scaling up, the oldest when
scaling down. These functions compute; :mod:`kubelet_sim.controllers.deployment` writes."""

from __future__ import annotations

import math

from kubelet_sim.api.model import Resource

MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"


def size(rs: Resource) -> int:
    return int(rs.spec.get("replicas", 0))


def active(sets: list[Resource]) -> list[Resource]:
    """FilterActiveReplicaSets: the ones whose spec asks for pods."""
    return [rs for rs in sets if size(rs) > 0]


def _created(rs: Resource) -> tuple[str, str]:
    return (rs.metadata.creation_timestamp or "", rs.name)


def by_creation(sets: list[Resource]) -> list[Resource]:
    """Oldest first (equal times by name), as ReplicaSetsByCreationTimestamp sorts."""
    return sorted(sets, key=_created)


def active_or_latest(new: Resource | None, old: list[Resource]) -> Resource | None:
    """FindActiveOrLatest: the only active ReplicaSet; with none active, the new one (else
    the newest old one); None when several are active."""
    if new is None and not old:
        return None
    running = active([*old, *([new] if new is not None else [])])
    if len(running) == 1:
        return running[0]
    if running:
        return None
    return new if new is not None else by_creation(old)[-1]


def annotated(rs: Resource, key: str) -> int | None:
    try:
        return int(rs.metadata.annotations[key])
    except (KeyError, ValueError):
        return None


def is_saturated(replicas: int, rs: Resource | None) -> bool:
    """IsSaturated: the new ReplicaSet asks for, was told and has available all replicas."""
    if rs is None:
        return False
    return (size(rs) == replicas and annotated(rs, DESIRED_REPLICAS) == replicas
            and int(rs.status.get("availableReplicas") or 0) == replicas)


def is_scaling_event(replicas: int, new: Resource | None, old: list[Resource]) -> bool:
    """isScalingEvent: an active ReplicaSet was last scaled for another ``replicas``."""
    for rs in active([*old, *([new] if new is not None else [])]):
        desired = annotated(rs, DESIRED_REPLICAS)
        if desired is not None and desired != replicas:
            return True
    return False


def _round(value: float) -> int:
    """integer.RoundToInt32: halves away from zero."""
    return math.floor(value + 0.5) if value >= 0 else -math.floor(-value + 0.5)


def _fraction(rs: Resource, replicas: int, max_replicas: int, status_replicas: int) -> int:
    if replicas == 0:
        return -size(rs)
    before = annotated(rs, MAX_REPLICAS) or 0
    if before == 0:
        before = status_replicas
        if before == 0:
            return 0
    return _round(size(rs) * max_replicas / before) - size(rs)


def proportion(rs: Resource, replicas: int, max_replicas: int, status_replicas: int,
               to_add: int, added: int) -> int:
    """GetReplicaSetProportion: this ReplicaSet's share of ``to_add``, ``added`` given out."""
    if size(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    share = _fraction(rs, replicas, max_replicas, status_replicas)
    allowed = to_add - added
    return min(share, allowed) if to_add > 0 else max(share, allowed)


def proportional_sizes(sets: list[Resource], replicas: int, surge: int,
                       status_replicas: int) -> list[tuple[Resource, int]]:
    """The sizes ``scale`` gives the active ``sets`` of a rolling Deployment that now asks
    for ``replicas`` (its maxSurge resolved to ``surge``), in the order it writes them."""
    running = active(sets)
    allowed = replicas + surge if replicas > 0 else 0
    to_add = allowed - sum(size(rs) for rs in running)
    if to_add > 0:
        # larger first; of equal ones the newer first (the sorts are stable)
        running = sorted(sorted(running, key=_created, reverse=True), key=size, reverse=True)
    elif to_add < 0:
        # larger first; of equal ones the older first
        running = sorted(by_creation(running), key=size, reverse=True)
    sizes: dict[str, int] = {}
    added = 0
    for rs in running:
        share = proportion(rs, replicas, allowed, status_replicas, to_add, added)
        sizes[rs.name] = size(rs) + share
        added += share
    if running and to_add:
        first = running[0].name
        sizes[first] = max(0, sizes[first] + to_add - added)
    return [(rs, sizes[rs.name]) for rs in running]

