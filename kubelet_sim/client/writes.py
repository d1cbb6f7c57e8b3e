"""The writes the components share, over any :class:`~kubelet_sim.client.kube_client.KubeClient`:
re-read, change, write back, retried on Conflict as client-go's ``RetryOnConflict`` does
(10 ms steps, on real time even when the components run on a fake clock, so a test's
clock never has to move for them)."""

from __future__ import annotations

from collections.abc import Callable

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.utils.clock import RealClock

_CONFLICT_CLOCK = RealClock()

Mutation = Callable[[Resource], bool]


async def write_status(client: KubeClient, kind: str, name: str, namespace: str,
                       mutate: Mutation, *, cached: Resource | None = None) -> Resource | None:
    """Re-read the object, let ``mutate`` change its status (False: nothing to write) and
    write it through the status subresource, retrying on Conflict. None when unchanged.
    ``cached``: the informer cache's copy; when ``mutate`` changes nothing on it, nothing
    is read or written (a controller compares with its lister before it calls the API)."""
    return await _write(client, kind, name, namespace, mutate, status=True, cached=cached)


async def write_object(client: KubeClient, kind: str, name: str, namespace: str,
                       mutate: Mutation, *, cached: Resource | None = None) -> Resource | None:
    """As :func:`write_status` for metadata and spec (``update``)."""
    return await _write(client, kind, name, namespace, mutate, status=False, cached=cached)


async def _write(client: KubeClient, kind: str, name: str, namespace: str, mutate: Mutation,
                 *, status: bool, cached: Resource | None) -> Resource | None:
    if cached is not None and not mutate(cached.copy()):
        return None
    async def attempt() -> Resource | None:
        obj = await client.get(kind, name, namespace)
        if not mutate(obj):
            return None
        return await (client.update_status(obj) if status else client.update(obj))

    return await retry_on_conflict_async(attempt, clock=_CONFLICT_CLOCK)


async def replace_status(client: KubeClient, obj: Resource, status: JSON) -> bool:
    """Write ``status`` as the whole status of ``obj`` (re-read, retried on Conflict);
    False when it already is that, or the object is gone."""
    def mutate(current: Resource) -> bool:
        if current.status == status:
            return False
        current.status = dict(status)
        return True
    try:
        return await write_status(client, obj.kind, obj.name, obj.namespace,
                                  mutate) is not None
    except NotFound:
        return False


async def get_or_none(client: KubeClient, kind: str, name: str,
                      namespace: str = "") -> Resource | None:
    """The object, or None when it does not exist."""
    try:
        return await client.get(kind, name, namespace)
    except NotFound:
        return None


async def drop_finalizer(client: KubeClient, kind: str, name: str, namespace: str,
                         finalizer: str) -> bool:
    """Remove ``finalizer`` (a terminating object goes once none is left); False when it
    was not there or the object is gone."""
    def mutate(obj: Resource) -> bool:
        if finalizer not in obj.metadata.finalizers:
            return False
        obj.metadata.finalizers = [f for f in obj.metadata.finalizers if f != finalizer]
        return True
    try:
        return await write_object(client, kind, name, namespace, mutate) is not None
    except NotFound:
        return False
