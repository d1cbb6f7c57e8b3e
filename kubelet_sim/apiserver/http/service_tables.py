"""``kubectl get`` columns of the configuration, service and RBAC kinds, as kube-apiserver's
printers fill them (server-side, always the wide form: ``-o wide`` only shows the
priority-1 columns): ConfigMap, Service, Endpoints, EndpointSlice, Role, ClusterRole,
RoleBinding, ClusterRoleBinding."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kubelet_sim.api.human_duration import human_duration
from kubelet_sim.api.model import JSON, Resource

Column = tuple[str, str, int, Callable[[Resource], Any]]  # name, type, priority, cell
MAX_LISTED = 3  # the printers list three endpoints or ports, then "+ N more..."


def _age(obj: Resource) -> str:
    created = obj.metadata.creation_timestamp
    if not created:
        return "<unknown>"
    then = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    seconds = int((datetime.datetime.now(datetime.UTC) - then).total_seconds())
    return human_duration(max(seconds, 0))


NAME: Column = ("Name", "string", 0, lambda o: o.name)
AGE: Column = ("Age", "string", 0, _age)
CREATED_AT: Column = ("Created At", "date", 0, lambda o: o.metadata.creation_timestamp or "")


def _listed(items: list[str], count: int, empty: str) -> str:
    text = ",".join(items[:MAX_LISTED])
    if count > MAX_LISTED:
        return f"{text} + {count - MAX_LISTED} more..."
    return text or empty


# ------------------------------------------------------------------------------ Service
def _load_balancer(status: JSON) -> str:
    ingress = (status.get("loadBalancer") or {}).get("ingress") or []
    return ",".join(str(i.get("ip") or i.get("hostname") or "") for i in ingress
                    if i.get("ip") or i.get("hostname"))


def service_external_ip(svc: Resource) -> str:
    spec = svc.spec
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    kind = spec.get("type") or "ClusterIP"
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) or "<none>"
    if kind == "LoadBalancer":
        balancer = _load_balancer(svc.status)
        combined = [*(balancer.split(",") if balancer else []), *external]
        return ",".join(combined) or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def service_ports(svc: Resource) -> str:
    pieces = []
    for port in svc.spec.get("ports") or []:
        protocol = port.get("protocol", "TCP")
        node_port = port.get("nodePort")
        pieces.append(f"{port.get('port')}:{node_port}/{protocol}" if node_port
                      else f"{port.get('port')}/{protocol}")
    return ",".join(pieces) or "<none>"


def _selector(svc: Resource) -> str:
    selector = svc.spec.get("selector") or {}
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"


# ---------------------------------------------------------------------------- Endpoints
def endpoints_cell(ep: Resource) -> str:
    subsets = ep.body.get("subsets") or []
    if not subsets:
        return "<none>"
    listed: list[str] = []
    count = 0
    for subset in subsets:
        addresses = [str(a.get("ip", "")) for a in subset.get("addresses") or []]
        ports = subset.get("ports") or []
        if not ports:
            count += len(addresses)
            listed.extend(addresses)
            continue
        for port in ports:
            count += len(addresses)
            listed.extend(f"[{ip}]:{port.get('port')}" if ":" in ip else
                          f"{ip}:{port.get('port')}" for ip in addresses)
    return _listed(listed, count, "")


def _slice_ports(eps: Resource) -> str:
    ports = eps.body.get("ports") or []
    shown = [str(p["port"]) if p.get("port") is not None else (p.get("name") or "*")
             for p in ports]
    return _listed(shown, len(shown), "<unset>")


def _slice_endpoints(eps: Resource) -> str:
    addresses = [str(a) for e in eps.body.get("endpoints") or [] for a in e.get("addresses")
                 or []]
    return _listed(addresses, len(addresses), "<unset>")


# --------------------------------------------------------------------------------- RBAC
def _subjects(binding: Resource, kind: str) -> str:
    names = []
    for subject in binding.body.get("subjects") or []:
        if subject.get("kind") != kind:
            continue
        name = str(subject.get("name", ""))
        if kind == "ServiceAccount" and subject.get("namespace"):
            name = f"{subject['namespace']}/{name}"
        names.append(name)
    return ", ".join(names)


def _role_ref(binding: Resource) -> str:
    ref = binding.body.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


BINDING: list[Column] = [
    NAME, ("Role", "string", 0, _role_ref), AGE,
    ("Users", "string", 1, lambda o: _subjects(o, "User")),
    ("Groups", "string", 1, lambda o: _subjects(o, "Group")),
    ("ServiceAccounts", "string", 1, lambda o: _subjects(o, "ServiceAccount"))]

COLUMNS: dict[str, list[Column]] = {
    "ConfigMap": [NAME, ("Data", "integer", 0, lambda o: len(o.body.get("data") or {})
                         + len(o.body.get("binaryData") or {})), AGE],
    "Service": [NAME, ("Type", "string", 0, lambda o: o.spec.get("type", "")),
                ("Cluster-IP", "string", 0, lambda o: o.spec.get("clusterIP") or "<none>"),
                ("External-IP", "string", 0, service_external_ip),
                ("Port(s)", "string", 0, service_ports), AGE,
                ("Selector", "string", 1, _selector)],
    "Endpoints": [NAME, ("Endpoints", "string", 0, endpoints_cell), AGE],
    "EndpointSlice": [NAME, ("AddressType", "string", 0, lambda o: o.body.get("addressType",
                                                                                "")),
                      ("Ports", "string", 0, _slice_ports),
                      ("Endpoints", "string", 0, _slice_endpoints), AGE],
    "Role": [NAME, CREATED_AT],
    "ClusterRole": [NAME, CREATED_AT],
    "RoleBinding": BINDING,
    "ClusterRoleBinding": BINDING,
}
