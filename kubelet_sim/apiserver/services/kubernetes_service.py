"""The ``kubernetes`` Service that kube-apiserver keeps in the ``default`` namespace (its
bootstrap controller): the first IP of the service range, port 443 named ``https`` to the
API server's own port, and the Endpoints and EndpointSlice (both named ``kubernetes``)
that point at the API server's address. ``kubectl cluster-info`` starts from it, and
in-cluster clients find the API server through it."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from kubelet_sim.api.errors import AlreadyExists, ApiError, NotFound
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.apiserver.server import APIServer

log = logging.getLogger(__name__)

NAME, NAMESPACE = "kubernetes", "default"
SERVICE_PORT = 443
SERVICE_LABELS = {"component": "apiserver", "provider": "kubernetes"}
# the endpointslice mirroring controller leaves this Endpoints alone: the API server
# writes the slice itself
SKIP_MIRROR = {"endpointslice.kubernetes.io/skip-mirror": "true"}
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


def _service(cluster_ip: str, port: int) -> Resource:
    return new("Service", NAME, NAMESPACE, labels=SERVICE_LABELS, spec={
        "type": "ClusterIP", "clusterIP": cluster_ip, "sessionAffinity": "None",
        "ports": [{"name": "https", "port": SERVICE_PORT, "protocol": "TCP",
                   "targetPort": port}]})


def _endpoints(address: str, port: int) -> Resource:
    return new("Endpoints", NAME, NAMESPACE, labels=SKIP_MIRROR, subsets=[{
        "addresses": [{"ip": address}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}])


def _slice(address: str, port: int) -> Resource:
    return new("EndpointSlice", NAME, NAMESPACE, labels={SERVICE_NAME_LABEL: NAME},
               addressType="IPv6" if ":" in address else "IPv4",
               endpoints=[{"addresses": [address], "conditions": {"ready": True}}],
               ports=[{"name": "https", "port": port, "protocol": "TCP"}])


def _ensure(api: APIServer, wanted: Resource, same: tuple[str, ...]) -> None:
    """Create ``wanted``, or bring the stored one's ``same`` fields to it."""
    try:
        api.create(wanted)
        return
    except AlreadyExists:
        pass
    try:
        stored = api.get(wanted.kind, wanted.name, wanted.namespace)
    except NotFound:
        return
    changed = False
    for field in same:
        holder: JSON = stored.spec if field == "ports" and wanted.kind == "Service" \
            else stored.body
        source: JSON = wanted.spec if holder is stored.spec else wanted.body
        if holder.get(field) != source.get(field):
            holder[field] = source[field]
            changed = True
    if changed:
        api.update(stored)


def ensure_kubernetes_service(api: APIServer, address: str, port: int) -> None:
    """Make the ``kubernetes`` Service and its endpoints point at ``address:port``
    (at start, and again at each start on a kept state dir, whose port may differ)."""
    _ensure(api, _service(api.services.ips.first(), port), ("ports",))
    _ensure(api, _endpoints(address, port), ("subsets",))
    _ensure(api, _slice(address, port), ("endpoints", "ports"))


RECONCILE_SECONDS = 10.0  # kube-apiserver's bootstrap controller looks every 10 s


async def keep_kubernetes_service(api: APIServer, address: str, port: int,
                                  stop: asyncio.Event,
                                  period: float = RECONCILE_SECONDS) -> None:
    """Until ``stop``: put the ``kubernetes`` Service and its endpoints back when they
    were deleted or changed (``kubectl delete svc --all`` takes it, the API server
    makes it again)."""
    while not stop.is_set():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(stop.wait(), period)
        if not stop.is_set():
            try:
                ensure_kubernetes_service(api, address, port)
            except ApiError as err:  # a namespace being deleted, say: next time
                log.info("kubernetes service: %s", err)
