"""kube-controller-manager's endpoints controller: the core/v1 Endpoints of every Service
with a selector, named as the Service — the selected pods' addresses (``addresses`` when
Ready, ``notReadyAddresses`` otherwise; pods being deleted left out unless the Service
publishes not-ready addresses), grouped by the ports they resolve, sorted by IP.

The object carries the Service's labels and ``endpoints.kubernetes.io/managed-by:
endpoint-controller``; it goes when its Service goes. Services without a selector are left
alone (their Endpoints are the user's, or the API server's for ``kubernetes``).
"""

from __future__ import annotations

from collections.abc import Iterable

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, new
from kubelet_sim.client.writes import write_object
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.service_endpoints import (
    HEADLESS_LABEL,
    PodEndpoint,
    pod_endpoints,
    service_labels,
    target_ref,
)

COMPONENT = "endpoint-controller"
MANAGED_BY_LABEL = "endpoints.kubernetes.io/managed-by"
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"


def _address(endpoint: PodEndpoint) -> JSON:
    pod = endpoint.pod
    out: JSON = {"ip": endpoint.ip, "targetRef": target_ref(pod)}
    if pod.spec.get("nodeName"):
        out["nodeName"] = pod.spec["nodeName"]
    if endpoint.hostname:
        out["hostname"] = endpoint.hostname
    return out


def _port(name: str, protocol: str, port: int, app_protocol: str | None) -> JSON:
    out: JSON = {"port": port, "protocol": protocol}
    if name:
        out["name"] = name
    if app_protocol:
        out["appProtocol"] = app_protocol
    return out


def subsets(service: Resource, endpoints: list[PodEndpoint]) -> list[JSON]:
    """The Endpoints' subsets: addresses grouped by the ports they resolve (repacked)."""
    has_ports = bool(service.spec.get("ports"))
    groups: dict[tuple[tuple[str, str, int, str | None], ...], JSON] = {}
    for endpoint in endpoints:
        if has_ports and not endpoint.ports:
            continue  # none of the Service's ports is on this pod
        key = tuple(sorted(endpoint.ports))
        subset = groups.setdefault(key, {})
        subset.setdefault("addresses" if endpoint.ready else "notReadyAddresses",
                          []).append(_address(endpoint))
    out = []
    for key, subset in sorted(groups.items()):
        for addresses in subset.values():
            addresses.sort(key=lambda a: (a["ip"], a["targetRef"]["name"]))
        if key:
            subset["ports"] = [_port(*port) for port in key]
        out.append(subset)
    return out


class EndpointsController(Controller):
    name = COMPONENT
    kinds = ("Service", "Pod", "Endpoints")

    def keys_for(self, obj: Resource) -> Iterable[str] | None:
        if obj.kind in ("Service", "Endpoints"):
            return [f"{obj.namespace}/{obj.name}"]
        return [f"{s.namespace}/{s.name}" for s in self.cache.list("Service", obj.namespace)]

    async def reconcile(self) -> bool:
        keys = {f"{o.namespace}/{o.name}" for kind in ("Service", "Endpoints")
                for o in self.cache.list(kind)}
        return await self.reconcile_keys(keys)

    async def reconcile_keys(self, keys: set[str]) -> bool:
        changed = False
        for key in sorted(keys):
            namespace, _, name = key.partition("/")
            changed = await self.step(f"ep/{key}", self._sync, namespace, name) or changed
        return changed

    async def _sync(self, namespace: str, name: str) -> bool:
        service = self.cache.get("Service", name, namespace)
        current = self.cache.get("Endpoints", name, namespace)
        if service is None:
            if current is not None and current.labels.get(MANAGED_BY_LABEL) == COMPONENT:
                try:
                    await self.client.delete("Endpoints", name, namespace)
                except NotFound:
                    return False
                return True
            return False
        if not service.spec.get("selector"):
            return False
        include_terminating = bool(service.spec.get("publishNotReadyAddresses"))
        wanted = subsets(service, pod_endpoints(
            service, self.cache.list("Pod", namespace), include_terminating))
        labels = service_labels(service, (MANAGED_BY_LABEL, HEADLESS_LABEL))
        labels[MANAGED_BY_LABEL] = COMPONENT
        now = format_time(self.clock.now())
        if current is None:
            ep = new("Endpoints", name, namespace, labels=labels,
                     annotations={TRIGGER_TIME: now})
            if wanted:  # none: the field is left out (omitempty)
                ep.body["subsets"] = wanted
            try:
                await self.client.create(ep)
            except AlreadyExists:
                return False
            return True

        def same(obj: Resource) -> bool:
            return (obj.body.get("subsets") or []) == wanted and obj.labels == labels

        if same(current):
            return False

        def mutate(obj: Resource) -> bool:
            if same(obj):
                return False
            if wanted:
                obj.body["subsets"] = wanted
            else:  # none: the field is left out (omitempty)
                obj.body.pop("subsets", None)
            obj.metadata.labels = dict(labels)
            obj.metadata.annotations[TRIGGER_TIME] = now
            return True

        return await write_object(self.client, "Endpoints", name, namespace, mutate) is not None
