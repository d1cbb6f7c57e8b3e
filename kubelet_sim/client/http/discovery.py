"""Reading legacy discovery (``/api/v1``, ``/apis``, ``/apis/<group>/<version>``) into the
kinds a client can list, watch and delete, keyed as the object model keys them.

A built-in kind keeps its name (``Pod``, ``Deployment``); a kind of any other group is
keyed ``<Kind>.<group>`` as the object model keys custom kinds (``Widget.example.com``),
so a kind this simulator does not model, served by a real kube-apiserver, is handled as
a custom one. A core kind the model does not know is left out (it has no such key), and
so are subresources, the request-only kinds (no ``list``) and the core Events served
again as ``events.k8s.io`` (the same objects: deleting or watching them twice helps no
one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubelet_sim.api.model import KINDS, custom_store_kind
from kubelet_sim.client.kube_client import ServedKind

# (group, kind) served again from another group's objects
ALIASES = frozenset({("events.k8s.io", "Event")})


@dataclass(frozen=True)
class Discovered:
    """One kind from a resource list, and whether it has the status subresource."""

    served: ServedKind
    has_status: bool


def group_versions(group_list: Any) -> list[list[str]]:
    """``/apis``'s APIGroupList: each group's groupVersions, the preferred one first."""
    out = []
    for group in (group_list or {}).get("groups") or []:
        preferred = str((group.get("preferredVersion") or {}).get("groupVersion") or "")
        others = [str(v.get("groupVersion")) for v in group.get("versions") or []
                  if v.get("groupVersion") and v.get("groupVersion") != preferred]
        if preferred:
            out.append([preferred, *others])
    return out


def kinds_in(resource_list: Any) -> list[Discovered]:
    """The kinds of one APIResourceList a client can list and watch."""
    group_version = str((resource_list or {}).get("groupVersion") or "")
    group = group_version.rpartition("/")[0]
    resources = [r for r in (resource_list or {}).get("resources") or []
                 if isinstance(r, dict)]
    names = {str(r.get("name")) for r in resources}
    out = []
    for r in resources:
        name, kind = str(r.get("name") or ""), str(r.get("kind") or "")
        verbs = frozenset(str(v) for v in r.get("verbs") or [])
        if not name or "/" in name or not kind or not {"list", "watch"} <= verbs \
                or (group, kind) in ALIASES:
            continue
        builtin = KINDS.get(kind)
        if builtin is not None and builtin.api_version.rpartition("/")[0] == group:
            key = kind
        elif not group:
            continue  # a core kind the object model does not know
        else:
            key = custom_store_kind(kind, group)
        out.append(Discovered(ServedKind(key, group_version, name, bool(r.get("namespaced")),
                                         verbs, (group_version,)), f"{name}/status" in names))
    return out
