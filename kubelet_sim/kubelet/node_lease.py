"""The kubelet's heartbeat: a Lease per node in ``kube-node-lease``, renewed every 10 s for
40 s (Kubernetes' defaults), owned by the Node so it goes with it. The node lifecycle
controller of a real cluster reads it to tell a live node from a dead one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime

from kubelet_sim.api import builders
from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.api.node_conditions import NODE_LEASE_NAMESPACE
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.retry import retry_on_conflict_async
from kubelet_sim.utils.clock import Clock

log = logging.getLogger(__name__)

LEASE_NAMESPACE = NODE_LEASE_NAMESPACE
LEASE_DURATION_SECONDS = 40
RENEW_FRACTION = 0.25  # the kubelet renews after a quarter of the duration: every 10 s


def micro_time(moment: datetime) -> str:
    """``metav1.MicroTime``: RFC 3339 with microseconds, UTC."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def ensure_lease_namespace(api: APIServer) -> None:
    """The cluster's bootstrap of ``kube-node-lease`` in the in-process server (a
    kube-apiserver, and our ``apiserver`` process, make it themselves)."""
    with contextlib.suppress(AlreadyExists):
        api.create(builders.namespace(LEASE_NAMESPACE))


async def renew_node_lease(client: KubeClient, node_name: str, now: datetime,
                           duration_seconds: int = LEASE_DURATION_SECONDS) -> Resource:
    """Create the node's Lease (``leaseDurationSeconds``: ``duration_seconds``), or move
    its ``renewTime`` to ``now``."""
    async def attempt() -> Resource:
        try:
            lease = await client.get("Lease", node_name, LEASE_NAMESPACE)
        except NotFound:
            node = await client.get("Node", node_name)
            lease = builders.lease(node_name, LEASE_NAMESPACE, node_name,
                                   duration_seconds, micro_time(now))
            lease.metadata.owner_references = [{"apiVersion": "v1", "kind": "Node",
                                                "name": node_name,
                                                "uid": node.metadata.uid}]
            return await client.create(lease)
        lease.spec["renewTime"] = micro_time(now)
        return await client.update(lease)

    return await retry_on_conflict_async(attempt)


async def keep_lease(client: KubeClient, node_name: str, clock: Clock,
                     duration_seconds: int, stop: asyncio.Event) -> None:
    """Renew the node's Lease every quarter of its duration (10 s of 40) until ``stop``;
    a failure is retried sooner."""
    interval = duration_seconds * RENEW_FRACTION
    while not stop.is_set():
        wait = interval
        try:
            await renew_node_lease(client, node_name, clock.now(), duration_seconds)
        except NotFound as err:  # its Node was deleted: no owner for a new Lease
            log.warning("kubelet %s: failed to get node when trying to set owner ref to the "
                        "node lease: %s", node_name, err)
        except Exception:
            log.exception("kubelet %s: renewing its Lease failed", node_name)
            wait = min(1.0, interval)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), wait)
