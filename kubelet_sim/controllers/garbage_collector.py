"""The garbage collector (kube-controller-manager's garbagecollector controller).

It keeps an :class:`~kubelet_sim.controllers.owner_graph.OwnerGraph` from one monitor per
kind discovery lists (an informer's list and watch over its client; the in-process
server's own feed inside ``up``), started for the kinds that appear as they appear, and,
for each object a change concerns:

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

import threading
from typing import Any

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, ObjectMeta, Resource, stored_kind
from kubelet_sim.apiserver.deletion_policy import (
    BACKGROUND,
    FOREGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN,
    ORPHAN_FINALIZER,
)
from kubelet_sim.client.client_feed import feed_source
from kubelet_sim.client.kube_client import ServedKind
from kubelet_sim.client.writes import drop_finalizer, get_or_none, write_object
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.owner_graph import OwnerGraph

ABSENT, WAITING, SOLID = "absent", "waiting", "solid"
# changes kept between two passes at most; past it they are dropped and the next pass
# rebuilds the graph from lists (a collector whose loop stopped keeps no growing backlog)
MAX_PENDING_CHANGES = 100_000


class GarbageCollector(Controller):
    name = "garbage-collector"
    kinds = ()  # its monitors wake it (every kind discovery lists), not the cache

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.graph = OwnerGraph()
        self.served: dict[str, ServedKind] = {}  # what the last discovery listed
        self._monitored: set[str] = set()  # kinds whose changes reach the graph
        # changes the monitors delivered, taken into the graph at the next pass (the
        # in-process feed delivers them inside commits, from whichever thread commits)
        self._changes: list[tuple[str, Resource]] = []
        self._overflowed = False  # changes were dropped: relist at the next pass
        self._lock = threading.Lock()
        self._dirty: set[str] = set()  # uids to look at in the next pass

    async def reconcile(self) -> bool:
        await self._monitor()
        await self._observe()
        changed = False
        pending, self._dirty = self._dirty, set()
        for uid in sorted(pending):
            key = f"gc/{uid}"
            changed = await self.step(key, self._process, uid) or changed
            if key in self.errors:
                self._dirty.add(uid)  # failed or backing off: look again later
        return changed

    async def _monitor(self) -> None:
        """Discovery: a monitor for each kind that can be listed, watched and deleted
        and has none yet (the first pass starts them all; a new custom kind gets one at
        the pass after its definition)."""
        self.served = {k.kind: k for k in await self.client.served_kinds()
                       if k.allows("list", "watch", "delete")}
        source = feed_source(self.client)
        for kind in sorted(set(self.served) - self._monitored):
            self._monitored.add(kind)
            source.feed(kind, self._on_change)

    def _on_change(self, event_type: str, obj: Resource) -> None:
        """A monitor's event: what the graph needs of it, kept for the next pass."""
        meta = obj.metadata
        kept = Resource(obj.kind, ObjectMeta(
            name=meta.name, namespace=meta.namespace, uid=meta.uid,
            deletion_timestamp=meta.deletion_timestamp, finalizers=list(meta.finalizers),
            owner_references=[dict(r) for r in meta.owner_references]),
            api_version=obj.api_version)
        with self._lock:
            if len(self._changes) >= MAX_PENDING_CHANGES:
                self._changes.clear()
                self._overflowed = True
            if not self._overflowed:
                self._changes.append((event_type, kept))
        self.wake()

    async def _observe(self) -> None:
        """Take the changes the monitors delivered since the last pass into the graph;
        after an overflow, rebuild it from a list of every monitored kind."""
        with self._lock:
            changes, self._changes = self._changes, []
            overflowed, self._overflowed = self._overflowed, False
        if overflowed:
            listed = [obj for kind in sorted(self._monitored)
                      for obj in (await self.client.list(kind)).items]
            self._dirty |= self.graph.reset(listed)
            with self._lock:  # what came in meanwhile: applied after (the next change of
                # an object sets its node right in any case)
                changes, self._changes = self._changes, []
        for event_type, obj in changes:
            self._dirty |= self.graph.observe(event_type, obj)

    async def _process(self, uid: str) -> bool:
        node = self.graph.nodes.get(uid)
        if node is None:
            return False
        obj = await get_or_none(self.client, node.kind, node.name, node.namespace)
        if obj is None or obj.metadata.uid != uid:
            return False
        if not obj.is_terminating:
            return await self._delete_if_orphaned(obj)
        if ORPHAN_FINALIZER in obj.metadata.finalizers:
            return await self._orphan_dependents(obj)
        if FOREGROUND_FINALIZER in obj.metadata.finalizers:
            return await self._delete_dependents(obj)
        return False

    # -- a dependent and its owners -------------------------------------------------------

    async def _owner_state(self, dependent: Resource, ref: JSON) -> str:
        kind = stored_kind(str(ref.get("kind")), str(ref.get("apiVersion")))
        info = self.served.get(kind)  # custom kinds too
        if info is None or not info.served_in(str(ref.get("apiVersion"))):
            return SOLID  # cannot be resolved: never taken as gone
        if info.namespaced and not dependent.namespace:
            return ABSENT  # a cluster-scoped object cannot be owned by a namespaced one
        owner = await get_or_none(self.client, kind, str(ref.get("name")),
                            dependent.namespace if info.namespaced else "")
        if owner is None or owner.metadata.uid != ref.get("uid"):
            return ABSENT
        if owner.is_terminating and FOREGROUND_FINALIZER in owner.metadata.finalizers:
            return WAITING
        return SOLID

    async def _delete_if_orphaned(self, obj: Resource) -> bool:
        refs = obj.metadata.owner_references
        if not refs:
            return False
        states = {str(ref.get("uid")): await self._owner_state(obj, ref) for ref in refs}
        if SOLID in states.values():
            gone = {uid for uid, state in states.items() if state != SOLID}
            return bool(gone) and await self._drop_owner_refs(obj, gone)
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
            await self.client.delete(obj.kind, obj.name, obj.namespace, uid=obj.metadata.uid,
                                     propagation_policy=policy)
        except NotFound:
            return False
        return True

    async def _drop_owner_refs(self, obj: Resource, owners: set[str]) -> bool:
        def mutate(o: Resource) -> bool:
            kept = [r for r in o.metadata.owner_references if r.get("uid") not in owners]
            if len(kept) == len(o.metadata.owner_references):
                return False
            o.metadata.owner_references = kept
            return True

        try:
            return await write_object(self.client, obj.kind, obj.name, obj.namespace,
                                      mutate) is not None
        except NotFound:
            return False

    # -- an owner being deleted -----------------------------------------------------------

    async def _dependents(self, owner: Resource) -> list[Resource]:
        uid = owner.metadata.uid or ""
        found = []
        for dep_uid in sorted(self.graph.dependents(uid)):
            node = self.graph.nodes.get(dep_uid)
            dep = node and await get_or_none(self.client, node.kind, node.name, node.namespace)
            if dep and dep.metadata.uid == dep_uid and any(
                    r.get("uid") == uid for r in dep.metadata.owner_references):
                found.append(dep)
        return found

    async def _orphan_dependents(self, owner: Resource) -> bool:
        for dep in await self._dependents(owner):
            await self._drop_owner_refs(dep, {owner.metadata.uid or ""})
        return await drop_finalizer(self.client, owner.kind, owner.name, owner.namespace,
                                    ORPHAN_FINALIZER)

    async def _delete_dependents(self, owner: Resource) -> bool:
        uid = owner.metadata.uid
        changed = False
        for dep in await self._dependents(owner):
            if not dep.is_terminating:
                changed = await self._delete_if_orphaned(dep) or changed
        blocking = [d for d in await self._dependents(owner) if any(
            r.get("uid") == uid and r.get("blockOwnerDeletion") is True
            for r in d.metadata.owner_references)]
        if blocking:
            return changed
        return await drop_finalizer(self.client, owner.kind, owner.name, owner.namespace,
                                    FOREGROUND_FINALIZER) or changed
