"""Parsing a REST path: /api/v1/... or /apis/<group>/<version>/... into what it names."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kubelet_sim.apiserver.http.resources import POD_CONNECT as CONNECT
from kubelet_sim.apiserver.http.resources import ApiResource, lookup

# the Pod subresources that would reach a running container (none runs here)
POD_CONNECT = tuple(s.name for s in CONNECT)
POD_REQUESTS = ("binding", "eviction")  # POSTed requests about one Pod


@dataclass(frozen=True)
class Target:
    resource: ApiResource
    namespace: str  # "" = all namespaces (lists) or a cluster-scoped kind
    name: str  # "" = the collection
    subresource: str  # "", "status", "scale", or for Pods one of POD_CONNECT


Lookup = Callable[[str, str, str], ApiResource | None]


def parse(group: str, version: str, segments: list[str],
          resolve: Lookup = lookup) -> Target | None:
    """The object or collection a path names; None when the server has no such path.
    ``resolve`` finds the resource of (group, version, plural)."""
    namespace = ""
    if (len(segments) >= 3 and segments[0] == "namespaces"
            and not (group == "" and len(segments) == 3
                     and segments[2] in ("status", "finalize"))):
        namespace, segments = segments[1], segments[2:]
    if not segments or len(segments) > 3:
        return None
    resource = resolve(group, version, segments[0])
    if resource is None or (namespace and not resource.namespaced):
        return None
    name = segments[1] if len(segments) >= 2 else ""
    sub = segments[2] if len(segments) == 3 else ""
    if sub == "status" and not resource.has_status:
        return None
    if sub == "scale" and resource.has_scale:
        return Target(resource, namespace, name, sub) if name else None
    if sub not in ("", "status") and not (
            resource.kind == "Pod" and resource.stored and sub in POD_CONNECT + POD_REQUESTS
    ) and not (resource.kind == "ServiceAccount" and sub == "token") \
            and not (resource.kind == "Namespace" and sub == "finalize"):
        return None
    if name and resource.namespaced and not namespace:
        return None  # /api/v1/pods/<name> does not exist: a namespaced object needs its namespace
    return Target(resource, namespace, name, sub)
