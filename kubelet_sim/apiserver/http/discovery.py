"""Discovery as kubectl reads it: /version, /api, /api/v1, /apis, /apis/<group>/<version>.

Only the legacy form: a client asking for the aggregated form (apidiscovery.k8s.io/v2)
gets plain JSON and falls back, as it does with older servers.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.http.resources import ApiResource, group_versions

VERSION = {"major": "1", "minor": "35", "gitVersion": "v1.35.0-cni-csi-mini",
           "gitCommit": "", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
           "goVersion": "", "compiler": "cpython", "platform": "linux/amd64"}


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": server_address}]}


def api_group_list() -> dict[str, Any]:
    groups = []
    for gv in group_versions():
        if "/" not in gv:
            continue
        group, version = gv.split("/")
        entry = {"groupVersion": gv, "version": version}
        groups.append({"name": group, "versions": [entry], "preferredVersion": entry})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def _entries(r: ApiResource) -> list[dict[str, Any]]:
    main: dict[str, Any] = {"name": r.plural, "singularName": r.singular,
                            "namespaced": r.namespaced, "kind": r.kind, "verbs": list(r.verbs)}
    if r.short_names:
        main["shortNames"] = list(r.short_names)
    if r.categories:
        main["categories"] = list(r.categories)
    out = [main]
    if r.has_status:
        out.append({"name": f"{r.plural}/status", "singularName": "", "namespaced": r.namespaced,
                    "kind": r.kind, "verbs": ["get", "patch", "update"]})
    return out


def api_resource_list(group_version: str) -> dict[str, Any] | None:
    resources = group_versions().get(group_version)
    if resources is None:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": [e for r in resources for e in _entries(r)]}
