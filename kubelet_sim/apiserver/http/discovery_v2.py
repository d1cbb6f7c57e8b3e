"""Aggregated discovery (``apidiscovery.k8s.io/v2``): every resource of every group version
in one ``APIGroupDiscoveryList``, answered on ``/api`` (the core group) and ``/apis`` (the
named groups) when the client's Accept header asks for
``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``. kubectl then
needs two requests for all of discovery instead of one per group version. The answer's
Content-Type carries the same parameters; that is how the client tells it apart from the
legacy APIVersions/APIGroupList it would otherwise parse.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.http.resources import ApiResource, group_versions, subresources

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
_WANTED = {"g": "apidiscovery.k8s.io", "v": "v2", "as": "APIGroupDiscoveryList"}


def wants_aggregated(accept: str) -> bool:
    """Whether the first media type of ``accept`` this server can produce is the
    aggregated list (a plain ``application/json`` or ``*/*`` before it wins)."""
    for media in accept.split(","):
        kind, *raw = (part.strip() for part in media.split(";"))
        params = dict(p.split("=", 1) for p in raw if "=" in p)
        params.pop("q", None)
        if kind == "application/json" and params == _WANTED:
            return True
        if kind in ("application/json", "*/*", "application/*") and not params:
            return False
    return False


def _resource(r: ApiResource) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    if r.categories:
        entry["categories"] = list(r.categories)
    subs = [{"subresource": s.name,
             "responseKind": {"group": s.group or r.group, "version": s.version or r.version,
                              "kind": s.kind},
             "verbs": list(s.verbs)} for s in subresources(r)]
    if subs:
        entry["subresources"] = subs
    return entry


def group_discovery_list(core: bool) -> dict[str, Any]:
    """The list for ``/api`` (``core``) or for ``/apis``."""
    items = []
    for gv, resources in group_versions().items():
        group, _, version = gv.rpartition("/")
        if (group == "") != core:
            continue
        items.append({
            "metadata": {"name": group} if group else {},
            "versions": [{"version": version, "freshness": "Current",
                          "resources": [_resource(r) for r in resources]}],
        })
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}
