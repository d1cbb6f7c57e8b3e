"""The garbage collector (kube-controller-manager's garbagecollector controller).

It keeps an :class:`~kubelet_sim.controllers.owner_graph.OwnerGraph` from the API server's
change stream and, for each object a change concerns:

- deletes a dependent once none of its owners exists any more (an owner reference counts
  only while an object of that kind and name with that ``uid`` exists); while some owner
  still exists it only drops the references to the gone ones;
- for an owner being deleted with ``propagationPolicy=Orphan`` (finalizer ``orphan``):
  removes the references to it from every dependent, then the finalizer;
- for one deleted with ``Foreground`` (finalizer ``foregroundDeletion``): deletes its
  dependents and removes the finalizer once no dependent with ``blockOwnerDeletion: true``
  is left, so the owner is the last to go.

A dependent whose owner waits in the foreground and which has dependents of its own is
deleted in the foreground too; otherwise with the policy its own finalizers ask for
(Background by default). An owner reference to a kind this cluster does not serve is
never treated as gone (Kubernetes cannot resolve it either and keeps retrying); the kinds
of CustomResourceDefinitions count as served while their definition exists.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import Gone, NotFound
from kubelet_sim.api.model import JSON, KINDS, Resource, served_kinds, stored_kind
from kubelet_sim.apiserver.deletion_policy import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    ORPHAN_FINALIZER,
)
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.common import drop_finalizer, get_or_none, write_object
from kubelet_sim.controllers.owner_graph import OwnerGraph

ABSENT, WAITING, SOLID = "absent", "waiting", "solid"


class GarbageCollector(Controller):
    name = "garbage-collector"
    kinds = tuple(KINDS)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graph = OwnerGraph()
        self._seen: str | None = None  # the last resourceVersion the graph has taken in
        self._dirty: set[str] = set()  # uids to look at in the next pass

    async def reconcile(self) -> bool:
        self._observe()
        changed = False
        pending, self._dirty = self._dirty, set()
        for uid in sorted(pending):
            key = f"gc/{uid}"
            changed = await self.step(key, self._process, uid) or changed
            if key in self.errors:
                self._dirty.add(uid)  # failed or backing off: look again later
        return changed

    def _observe(self) -> None:
        """Take in the changes since the last pass; relist everything when they have
        already left the API server's history (or on the first pass)."""
        if self._seen is not None:
            try:
                changes = self.api.events_since(self._seen)
            except Gone:
                changes = None
            if changes is not None:
                for change in changes:
                    self._dirty |= self.graph.observe(change.type, change.object)
                if changes:
                    self._seen = str(changes[-1].resource_version)
                return
        version = self.api.resource_version
        self._dirty |= self.graph.reset(o for kind in served_kinds()
                                        for o in self.api.list(kind).items)
        self._seen = version

    async def _process(self, uid: str) -> bool:
        node = self.graph.nodes.get(uid)
        if node is None:
            return False
        obj = get_or_none(self.api, node.kind, node.name, node.namespace)
        if obj is None or obj.metadata.uid != uid:
            return False
        if not obj.is_terminating:
            return self._delete_if_orphaned(obj)
        if ORPHAN_FINALIZER in obj.metadata.finalizers:
            return self._orphan_dependents(obj)
        if FOREGROUND_FINALIZER in obj.metadata.finalizers:
            return self._delete_dependents(obj)
        return False

    # -- a dependent and its owners -------------------------------------------------------

    def _owner_state(self, dependent: Resource, ref: JSON) -> str:
        kind = stored_kind(str(ref.get("kind")), str(ref.get("apiVersion")))
        info = served_kinds().get(kind)  # custom kinds too
        if info is None or info.api_version != ref.get("apiVersion"):
            return SOLID  # cannot be resolved: never taken as gone
        if info.namespaced and not dependent.namespace:
            return ABSENT  # a cluster-scoped object cannot be owned by a namespaced one
        owner = get_or_none(self.api, kind, str(ref.get("name")),
                            dependent.namespace if info.namespaced else "")
        if owner is None or owner.metadata.uid != ref.get("uid"):
            return ABSENT
        if owner.is_terminating and FOREGROUND_FINALIZER in owner.metadata.finalizers:
            return WAITING
        return SOLID

    def _delete_if_orphaned(self, obj: Resource) -> bool:
        refs = obj.metadata.owner_references
        if not refs:
            return False
        states = {str(ref.get("uid")): self._owner_state(obj, ref) for ref in refs}
        if SOLID in states.values():
            gone = {uid for uid, state in states.items() if state != SOLID}
            return bool(gone) and self._drop_owner_refs(obj, gone)
        waiting = WAITING in states.values()
        if waiting and self.graph.has_dependents(obj.metadata.uid or ""):
            policy = FOREGROUND
        elif ORPHAN_FINALIZER in obj.metadata.finalizers:
            policy = ORPHAN
        elif FOREGROUND_FINALIZER in obj.metadata.finalizers:
            policy = FOREGROUND
        else:
            policy = BACKGROUND
        try:
            self.api.delete(obj.kind, obj.name, obj.namespace, uid=obj.metadata.uid,
                            propagation_policy=policy)
        except NotFound:
            return False
        return True

    def _drop_owner_refs(self, obj: Resource, owners: set[str]) -> bool:
        def mutate(o: Resource) -> bool:
            kept = [r for r in o.metadata.owner_references if r.get("uid") not in owners]
            if len(kept) == len(o.metadata.owner_references):
                return False
            o.metadata.owner_references = kept
            return True

        try:
            return write_object(self.api, obj.kind, obj.name, obj.namespace, mutate) is not None
        except NotFound:
            return False

    # -- an owner being deleted -----------------------------------------------------------

    def _dependents(self, owner: Resource) -> list[Resource]:
        uid = owner.metadata.uid or ""
        found = []
        for dep_uid in sorted(self.graph.dependents(uid)):
            node = self.graph.nodes.get(dep_uid)
            dep = node and get_or_none(self.api, node.kind, node.name, node.namespace)
            if dep and dep.metadata.uid == dep_uid and any(
                    r.get("uid") == uid for r in dep.metadata.owner_references):
                found.append(dep)
        return found

    def _orphan_dependents(self, owner: Resource) -> bool:
        for dep in self._dependents(owner):
            self._drop_owner_refs(dep, {owner.metadata.uid or ""})
        return drop_finalizer(self.api, owner.kind, owner.name, owner.namespace,
                              ORPHAN_FINALIZER)

    def _delete_dependents(self, owner: Resource) -> bool:
        uid = owner.metadata.uid
        changed = False
        for dep in self._dependents(owner):
            if not dep.is_terminating:
                changed = self._delete_if_orphaned(dep) or changed
        blocking = [d for d in self._dependents(owner) if any(
            r.get("uid") == uid and r.get("blockOwnerDeletion") is True
            for r in d.metadata.owner_references)]
        if blocking:
            return changed
        return drop_finalizer(self.api, owner.kind, owner.name, owner.namespace,
                              FOREGROUND_FINALIZER) or changed
