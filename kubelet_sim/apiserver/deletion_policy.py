"""DeleteOptions' ``propagationPolicy``: what a delete leaves for the garbage collector.

The API server does not delete dependents itself. A delete with ``Orphan`` puts the
``orphan`` finalizer on the object and one with ``Foreground`` the ``foregroundDeletion``
finalizer; the garbage collector then unlinks or deletes the dependents and removes the
finalizer. ``Background`` (the default for every kind here) adds neither and takes away
one a previous delete left; no policy leaves the finalizers as they are. The legacy
``orphanDependents`` flag maps to Orphan (true) or Background (false).
"""

from __future__ import annotations

from kubelet_sim.api.errors import Invalid

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
ORPHAN, BACKGROUND, FOREGROUND = "Orphan", "Background", "Foreground"
POLICIES = (FOREGROUND, BACKGROUND, ORPHAN)


def resolve_policy(policy: str | None, orphan_dependents: bool | None) -> str | None:
    """The policy a DeleteOptions asks for (None: the kind's default), or :class:`Invalid`."""
    if policy is not None and orphan_dependents is not None:
        raise Invalid("propagationPolicy",
                      "Invalid value: orphanDependents and deleteOptions.propagationPolicy "
                      "cannot both be set")
    if orphan_dependents is not None:
        return ORPHAN if orphan_dependents else BACKGROUND
    if policy is not None and policy not in POLICIES:
        raise Invalid("propagationPolicy",
                      f'Unsupported value: "{policy}": supported values: "Foreground", '
                      '"Background", "Orphan", "nil"')
    return policy


def finalizers_after_delete(finalizers: list[str], policy: str | None) -> list[str]:
    """The object's finalizers once a delete with ``policy`` has been accepted."""
    if policy is None:
        return list(finalizers)
    wanted = {ORPHAN: ORPHAN_FINALIZER, FOREGROUND: FOREGROUND_FINALIZER}.get(policy)
    drop = {ORPHAN_FINALIZER, FOREGROUND_FINALIZER} - {wanted}
    kept = [f for f in finalizers if f not in drop]
    if wanted is not None and wanted not in kept:
        kept.append(wanted)
    return kept
