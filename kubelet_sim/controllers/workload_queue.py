"""The work queue of a workload controller, as client-go's controllers key theirs: a
change of the workload queues its key (``<prefix>/<namespace>/<name>``); a change of
something it controls (a pod, a ReplicaSet, a ControllerRevision) queues the key of its
controller reference's owner; an orphan the workload might adopt asks for a full pass.
:meth:`WorkloadController.sync` converges one workload."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from typing import Any

from kubelet_sim.api.errors import NotFound, ObjectForbidden
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.workload_expectations import Expectations
from kubelet_sim.controllers.workload_pods import controller_of

# seconds before a workload whose pods are not all in the cache yet is looked at again
# (their arrival wakes it sooner)
EXPECTATIONS_RECHECK = 1.0


class WorkloadController(Controller):
    workload_kind: str = ""
    prefix: str = ""
    # the kinds whose orphans the workload adopts (a change of one may concern any)
    adopts: tuple[str, ...] = ("Pod",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # the pods created and deleted that the cache has not shown yet, per workload key
        self.expectations = Expectations(self.cache, self.clock)

    async def run(self, stop: asyncio.Event) -> None:
        """The run loop, once the cache holds the first list of every kind the controller
        reads (client-go's WaitForCacheSync): a first pass over a cache that has the
        workloads but not yet their pods would make the pods again."""
        await self.wait_for_cache_sync()
        await super().run(stop)

    async def wait_for_cache_sync(self) -> None:
        """Start the cache's feeds of :attr:`kinds` and wait for their first lists (at
        once in-process, where the server hands them over inside the call)."""
        for kind in self.kinds:
            self.cache.list(kind)
        feed = feed_source(self.client)
        if isinstance(feed, ClientFeed):
            await feed.wait_synced()

    def key(self, namespace: str, name: str) -> str:
        return f"{self.prefix}/{namespace}/{name}"

    # -- pod control: the events kube-controller-manager's PodControl records for the
    # ReplicaSet, DaemonSet and Job controllers (the StatefulSet controller words its own)

    async def create_pod(self, owner: Resource, pod: JSON) -> Resource:
        """Create ``pod`` for ``owner``: SuccessfulCreate ``Created pod: <name>``; an
        admission plugin's refusal (a quota) is a FailedCreate ``Error creating: ...``
        Warning, and raised."""
        try:
            created = await self.client.create(Resource.from_dict(pod))
        except ObjectForbidden as err:
            self.event(owner.kind, owner.namespace, owner.name, "Warning", "FailedCreate",
                       f"Error creating: {err.worded('pods')}")
            raise
        self.expectations.created(self.key(owner.namespace, owner.name), created)
        self.event(owner.kind, owner.namespace, owner.name, "Normal", "SuccessfulCreate",
                   f"Created pod: {created.name}")
        return created

    async def delete_pod(self, owner: Resource, pod: Resource) -> bool:
        """Delete ``pod`` (this one, by UID) for ``owner``: SuccessfulDelete ``Deleted pod:
        <name>``; False when it was gone already."""
        try:
            await self.client.delete("Pod", pod.name, pod.namespace, uid=pod.metadata.uid)
        except NotFound:
            return False
        self.expectations.deleted(self.key(owner.namespace, owner.name), pod)
        self.event(owner.kind, owner.namespace, owner.name, "Normal", "SuccessfulDelete",
                   f"Deleted pod: {pod.name}")
        return True

    def may_manage(self, obj: Resource) -> bool:
        """Whether the pod creations and deletions of the last sync of ``obj`` are in the
        cache (SatisfiedExpectations); if not, this sync leaves its pods alone and the
        workload is looked at again once they arrive."""
        key = self.key(obj.namespace, obj.name)
        if self.expectations.satisfied(key):
            return True
        self._note_retry(key, EXPECTATIONS_RECHECK)
        return False

    @abstractmethod
    async def sync(self, obj: Resource) -> bool:
        """Converge one workload; True when anything was written."""

    async def reconcile(self) -> bool:
        changed = False
        for obj in self.cache.list(self.workload_kind):
            changed = await self.step(self.key(obj.namespace, obj.name), self.sync, obj) \
                or changed
        return changed

    async def reconcile_keys(self, keys: set[str]) -> bool:
        changed = False
        for key in sorted(keys):
            _, namespace, name = key.split("/", 2)
            obj = self.cache.get(self.workload_kind, name, namespace)
            if obj is not None:
                changed = await self.step(key, self.sync, obj) or changed
        return changed

    def keys_for(self, obj: Resource) -> list[str] | None:
        if obj.kind == self.workload_kind:
            return [self.key(obj.namespace, obj.name)]
        ref = controller_of(obj)
        if ref is None:
            return None if obj.kind in self.adopts else []
        if ref.get("kind") == self.workload_kind:
            return [self.key(obj.namespace, str(ref.get("name")))]
        return self.keys_of_owned(obj, ref)

    def keys_of_owned(self, obj: Resource, ref: dict[str, object]) -> list[str] | None:
        """The keys a change of ``obj``, controlled by another kind (``ref``), concerns."""
        return []
