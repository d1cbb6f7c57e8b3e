"""kube-controller-manager's endpointslice controller: for every Service with a selector,
EndpointSlices (discovery.k8s.io/v1) listing the pods it selects — their IP, the Ready
condition as ``ready``/``serving``, ``terminating`` while they are deleted, the node and
its zone, a reference to the pod — with the service ports resolved for those pods.

As upstream: pods whose ports resolve alike share slices (at most 100 endpoints each),
named ``<service>-<random>``; each slice carries ``kubernetes.io/service-name``,
``endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io`` and the
Service's labels, and a controller owner reference to the Service (the garbage collector
removes them with it). A Service that selects nothing keeps one empty placeholder slice.
Services without a selector are left alone (their slices are someone else's, like the
API server's own ``kubernetes``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, new
from kubelet_sim.client.writes import write_object
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.service_endpoints import (
    HEADLESS_LABEL,
    SERVICE_NAME_LABEL,
    ZONE_LABEL,
    PodEndpoint,
    pod_endpoints,
    service_labels,
    target_ref,
)

COMPONENT = "endpointslice-controller"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE = 100  # kube-controller-manager's --max-endpoints-per-slice
TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"


def service_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def owner_reference(service: Resource) -> JSON:
    return {"apiVersion": "v1", "kind": "Service", "name": service.name,
            "uid": service.metadata.uid, "controller": True, "blockOwnerDeletion": True}


def _ports(endpoint: PodEndpoint) -> list[JSON]:
    out = []
    for name, protocol, port, app_protocol in endpoint.ports:
        entry: JSON = {"name": name, "protocol": protocol, "port": port}
        if app_protocol:
            entry["appProtocol"] = app_protocol
        out.append(entry)
    return out


class EndpointSliceController(Controller):
    name = COMPONENT
    kinds = ("Service", "Pod", "EndpointSlice", "Node")

    # -- the work queue ----------------------------------------------------------------
    def keys_for(self, obj: Resource) -> Iterable[str] | None:
        if obj.kind == "Service":
            return [service_key(obj.namespace, obj.name)]
        if obj.kind == "EndpointSlice":
            owner = obj.labels.get(SERVICE_NAME_LABEL)
            return [service_key(obj.namespace, owner)] if owner else []
        if obj.kind == "Pod":
            return [service_key(s.namespace, s.name)
                    for s in self.cache.list("Service", obj.namespace)]
        return None  # a node (its zone): look at everything

    async def reconcile(self) -> bool:
        keys = {service_key(s.namespace, s.name) for s in self.cache.list("Service")}
        return await self.reconcile_keys(keys)

    async def reconcile_keys(self, keys: set[str]) -> bool:
        changed = False
        for key in sorted(keys):
            namespace, _, name = key.partition("/")
            service = self.cache.get("Service", name, namespace)
            if service is not None:
                changed = await self.step(f"svc/{key}", self._sync, service) or changed
        return changed

    # -- one Service -------------------------------------------------------------------
    def _owned(self, service: Resource) -> list[Resource]:
        return [s for s in self.cache.list("EndpointSlice", service.namespace)
                if s.labels.get(SERVICE_NAME_LABEL) == service.name
                and s.labels.get(MANAGED_BY_LABEL) == CONTROLLER_NAME]

    def _endpoint(self, endpoint: PodEndpoint) -> JSON:
        pod = endpoint.pod
        out: JSON = {"addresses": [endpoint.ip],
                     "conditions": {"ready": endpoint.ready, "serving": endpoint.serving,
                                    "terminating": endpoint.terminating},
                     "targetRef": target_ref(pod)}
        node_name = str(pod.spec.get("nodeName") or "")
        if node_name:
            out["nodeName"] = node_name
            node = self.cache.get("Node", node_name)
            zone = node.labels.get(ZONE_LABEL) if node is not None else None
            if zone:
                out["zone"] = zone
        if endpoint.hostname:
            out["hostname"] = endpoint.hostname
        return out

    def _wanted(self, service: Resource) -> list[tuple[list[JSON], list[JSON]]]:
        """(ports, endpoints) of each slice the Service should have."""
        groups: dict[tuple[tuple[str, str, int, str | None], ...],
                     tuple[list[JSON], list[JSON]]] = {}
        for endpoint in pod_endpoints(service, self.cache.list("Pod", service.namespace),
                                      include_terminating=True):
            groups.setdefault(endpoint.ports, (_ports(endpoint), []))[1].append(
                self._endpoint(endpoint))
        wanted = [(ports, endpoints[i:i + MAX_ENDPOINTS_PER_SLICE])
                  for ports, endpoints in groups.values()
                  for i in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE)]
        return wanted or [([], [])]  # the placeholder

    def _labels(self, service: Resource) -> dict[str, str]:
        labels = service_labels(service, (SERVICE_NAME_LABEL, MANAGED_BY_LABEL,
                                          HEADLESS_LABEL))
        labels.update({SERVICE_NAME_LABEL: service.name, MANAGED_BY_LABEL: CONTROLLER_NAME})
        return labels

    async def _sync(self, service: Resource) -> bool:
        owned = self._owned(service)
        if not service.spec.get("selector") or service.spec.get("type") == "ExternalName":
            for stale in owned:
                await self._delete(stale)
            return bool(owned)
        labels = self._labels(service)
        owner = owner_reference(service)
        left = list(owned)
        changed = False
        for ports, endpoints in self._wanted(service):
            match = next((s for s in left if (s.body.get("ports") or []) == ports), None)
            if match is None:
                await self._create(service, labels, owner, ports, endpoints)
                changed = True
                continue
            left.remove(match)
            changed = await self._update(match, labels, owner, ports, endpoints) or changed
        for stale in left:
            await self._delete(stale)
            changed = True
        return changed

    # -- writes ------------------------------------------------------------------------
    async def _create(self, service: Resource, labels: dict[str, str], owner: JSON,
                ports: list[JSON], endpoints: list[JSON]) -> None:
        # an empty list reads back from etcd as null, as kube-apiserver shows it
        eps = new("EndpointSlice", "", service.namespace, labels=labels,
                  addressType="IPv4", ports=ports or None, endpoints=endpoints or None)
        eps.metadata.generate_name = f"{service.name}-"
        eps.metadata.annotations[TRIGGER_TIME] = format_time(self.clock.now())
        eps.metadata.owner_references = [owner]
        # a generated name taken (AlreadyExists): the retry picks another
        await self.client.create(eps)

    async def _update(self, current: Resource, labels: dict[str, str], owner: JSON,
                ports: list[JSON], endpoints: list[JSON]) -> bool:
        def same(obj: Resource) -> bool:
            return (obj.body.get("endpoints") or []) == endpoints and \
                (obj.body.get("ports") or []) == ports and obj.labels == labels and \
                owner in obj.metadata.owner_references

        if same(current):
            return False

        def mutate(obj: Resource) -> bool:
            if same(obj):
                return False
            obj.body["endpoints"], obj.body["ports"] = endpoints or None, ports or None
            obj.metadata.labels = dict(labels)
            obj.metadata.annotations[TRIGGER_TIME] = format_time(self.clock.now())
            others = [r for r in obj.metadata.owner_references if r.get("uid") != owner["uid"]]
            obj.metadata.owner_references = [*others, owner]
            return True

        return await write_object(self.client, "EndpointSlice", current.name,
                                  current.namespace, mutate) is not None

    async def _delete(self, eps: Resource) -> None:
        with contextlib.suppress(NotFound):
            await self.client.delete("EndpointSlice", eps.name, eps.namespace)
