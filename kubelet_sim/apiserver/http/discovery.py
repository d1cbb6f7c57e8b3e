"""Discovery as kubectl reads it: /version, /api, /api/v1, /apis, /apis/<group>/<version>.

The legacy form; the aggregated form (apidiscovery.k8s.io/v2) is in
:mod:`kubelet_sim.apiserver.http.discovery_v2`.
"""

from __future__ import annotations

import platform
from typing import Any

from kubelet_sim.apiserver.http.resources import ApiResource, group_versions, subresources

_ARCH = {"x86_64": "amd64", "aarch64": "arm64"}  # Go's GOARCH names

# Every field of kube-apiserver 1.35's /version (k8s.io/apimachinery version.Info): the
# binary and emulated version 1.35, compatible down to 1.34; built by CPython, not Go.
VERSION = {"major": "1", "minor": "35", "emulationMajor": "1", "emulationMinor": "35",
           "minCompatibilityMajor": "1", "minCompatibilityMinor": "34",
           "gitVersion": "v1.35.0-cni-csi-mini", "gitCommit": "", "gitTreeState": "clean",
           "buildDate": "2026-01-01T00:00:00Z",
           "goVersion": f"cpython{platform.python_version()}", "compiler": "cpython",
           "platform": f"{platform.system().lower()}/"
                       f"{_ARCH.get(platform.machine(), platform.machine())}"}


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
    return [main] + [{"name": f"{r.plural}/{s.name}", "singularName": "",
                      "namespaced": r.namespaced,
                      **({"group": s.group, "version": s.version} if s.group else {}),
                      "kind": s.kind, "verbs": list(s.verbs)}
                     for s in subresources(r)]


def api_resource_list(group_version: str) -> dict[str, Any] | None:
    resources = group_versions().get(group_version)
    if resources is None:
        return None
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
            "resources": [e for r in resources for e in _entries(r)]}
