"""The pod creations and deletions a workload controller waits to see, as
kube-controller-manager's ControllerExpectations keep them: a ReplicaSet, DaemonSet or
Job whose last creates or deletes have not reached the informer cache yet is not managed
again (its status still is), or it would count its pods short and make them twice.

In-process the cache is fed inside each commit, so every expectation is met as soon as
the write returns; over a client the watch brings the pods a moment later. A creation is
seen once the cache holds the pod, a deletion once the cache no longer holds it or holds
it terminating; an expectation that is never seen (the pod came and went between two
looks) lapses after :data:`EXPECTATIONS_TIMEOUT`, as upstream's do."""

from __future__ import annotations

from dataclasses import dataclass, field

from kubelet_sim.api.model import Resource
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.utils.clock import Clock

EXPECTATIONS_TIMEOUT = 300.0  # seconds: upstream's ExpectationsTimeout (5 minutes)


@dataclass
class _Pending:
    """One owner's writes not seen yet: pod (namespace, name) created; (namespace, name,
    uid) deleted; and when the last of them was recorded."""

    creates: set[tuple[str, str]] = field(default_factory=set)
    deletes: set[tuple[str, str, str]] = field(default_factory=set)
    since: float = 0.0


class Expectations:
    """Per owner key, the pods created and deleted that the cache has not shown yet."""

    def __init__(self, cache: SharedCache, clock: Clock,
                 timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._cache, self._clock, self._timeout = cache, clock, timeout
        self._pending: dict[str, _Pending] = {}

    def created(self, key: str, pod: Resource) -> None:
        pending = self._pending.setdefault(key, _Pending())
        pending.creates.add((pod.namespace, pod.name))
        pending.since = self._clock.monotonic()

    def deleted(self, key: str, pod: Resource) -> None:
        pending = self._pending.setdefault(key, _Pending())
        pending.deletes.add((pod.namespace, pod.name, pod.metadata.uid))
        pending.since = self._clock.monotonic()

    def satisfied(self, key: str) -> bool:
        """True when every create and delete recorded for ``key`` is in the cache (or
        they lapsed); what is seen is forgotten."""
        pending = self._pending.get(key)
        if pending is None:
            return True
        pending.creates = {(ns, name) for ns, name in pending.creates
                           if self._cache.get("Pod", name, ns) is None}
        pending.deletes = {(ns, name, uid) for ns, name, uid in pending.deletes
                           if not self._gone(ns, name, uid)}
        if (not pending.creates and not pending.deletes) \
                or self._clock.monotonic() - pending.since >= self._timeout:
            del self._pending[key]
            return True
        return False

    def _gone(self, namespace: str, name: str, uid: str) -> bool:
        cached = self._cache.get("Pod", name, namespace)
        return cached is None or cached.metadata.uid != uid \
            or bool(cached.metadata.deletion_timestamp)
