"""The garbage collector's index of ownership: every object by uid, and for each owner uid
the uids of its dependents (kube-controller-manager's GraphBuilder keeps the same graph).

It is fed the API server's change stream (:meth:`OwnerGraph.observe`) and says which
objects a change concerns, so a pass looks only at those, never at every object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.apiserver.deletion_policy import FOREGROUND_FINALIZER, ORPHAN_FINALIZER
from kubelet_sim.apiserver.watch import DELETED

GC_FINALIZERS = (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)


@dataclass
class GraphNode:
    kind: str
    namespace: str
    name: str
    owners: list[JSON] = field(default_factory=list)  # the ownerReferences as stored
    waits_for_gc: bool = False  # being deleted with the orphan or foregroundDeletion finalizer


def owner_uids(obj: Resource) -> set[str]:
    return {str(ref.get("uid")) for ref in obj.metadata.owner_references if ref.get("uid")}


class OwnerGraph:
    def __init__(self) -> None:
        self.nodes: dict[str, GraphNode] = {}
        self._dependents: dict[str, set[str]] = {}

    def dependents(self, uid: str) -> set[str]:
        return set(self._dependents.get(uid, ()))

    def has_dependents(self, uid: str) -> bool:
        return bool(self._dependents.get(uid))

    def reset(self, objects: Iterable[Resource]) -> set[str]:
        """Rebuild from a full list; every object that needs a look is returned."""
        self.nodes.clear()
        self._dependents.clear()
        dirty: set[str] = set()
        for obj in objects:
            dirty |= self.observe("ADDED", obj)
        return dirty

    def observe(self, event_type: str, obj: Resource) -> set[str]:
        """Apply one change; the uids the garbage collector should now look at."""
        uid = obj.metadata.uid or ""
        old = self.nodes.get(uid)
        old_owners = {str(r.get("uid")) for r in old.owners} if old else set()
        if event_type == DELETED:
            self.nodes.pop(uid, None)
            self._unlink(uid, old_owners)
            # Its dependents may have lost their last owner; a foreground owner may be done.
            return self.dependents(uid) | self._waiting(old_owners)
        new_owners = owner_uids(obj)
        waits = obj.is_terminating and any(f in GC_FINALIZERS for f in obj.metadata.finalizers)
        self.nodes[uid] = GraphNode(obj.kind, obj.namespace, obj.name,
                                    [dict(r) for r in obj.metadata.owner_references], waits)
        self._unlink(uid, old_owners - new_owners)
        for owner in new_owners:
            self._dependents.setdefault(owner, set()).add(uid)
        dirty = self._waiting(old_owners | new_owners)
        if new_owners or waits:
            dirty.add(uid)
        return dirty

    def _unlink(self, uid: str, owners: Iterable[str]) -> None:
        for owner in owners:
            deps = self._dependents.get(owner)
            if deps is not None:
                deps.discard(uid)
                if not deps:
                    del self._dependents[owner]

    def _waiting(self, uids: Iterable[str]) -> set[str]:
        return {u for u in uids if (node := self.nodes.get(u)) is not None and node.waits_for_gc}
