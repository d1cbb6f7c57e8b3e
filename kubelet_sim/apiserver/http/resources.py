"""The REST names of the simulator's kinds: group, version, plural, short names."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kubelet_sim.api.model import KINDS

# kind -> (plural, short names, categories), as a real API server lists them
_NAMES: dict[str, tuple[str, tuple[str, ...], tuple[str, ...]]] = {
    "Namespace": ("namespaces", ("ns",), ()),
    "Node": ("nodes", ("no",), ()),
    "Pod": ("pods", ("po",), ("all",)),
    "PersistentVolumeClaim": ("persistentvolumeclaims", ("pvc",), ()),
    "PersistentVolume": ("persistentvolumes", ("pv",), ()),
    "StorageClass": ("storageclasses", ("sc",), ()),
    "VolumeAttributesClass": ("volumeattributesclasses", ("vac",), ()),
    "CSIDriver": ("csidrivers", (), ()),
    "CSINode": ("csinodes", (), ()),
    "VolumeAttachment": ("volumeattachments", (), ()),
    "VolumeSnapshot": ("volumesnapshots", ("vs",), ()),
    "VolumeSnapshotContent": ("volumesnapshotcontents", ("vsc", "vscs"), ()),
    "VolumeSnapshotClass": ("volumesnapshotclasses", ("vsclass", "vsclasses"), ()),
    "NetworkPolicy": ("networkpolicies", ("netpol",), ()),
    "Lease": ("leases", (), ()),
    "Event": ("events", ("ev",), ()),
    "CustomResourceDefinition": ("customresourcedefinitions", ("crd", "crds"), ("api-extensions",)),
}

VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ApiResource:
    kind: str
    group: str  # "" for the core group
    version: str
    plural: str
    namespaced: bool
    has_status: bool
    short_names: tuple[str, ...]
    categories: tuple[str, ...]
    verbs: tuple[str, ...] = VERBS
    has_scale: bool = False  # the scale subresource (autoscaling/v1 Scale)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()


def _resource(kind: str) -> ApiResource:
    info = KINDS[kind]
    group, _, version = info.api_version.rpartition("/")
    plural, short, categories = _NAMES[kind]
    return ApiResource(kind, group, version, plural, info.namespaced, info.status_subresource,
                       short, categories)


# The stored core/v1 Events served again in the events.k8s.io/v1 shape (see events.py).
EVENTS_V1 = ApiResource("Event", "events.k8s.io", "v1", "events", True, False, (), ())
RESOURCES: tuple[ApiResource, ...] = (*(_resource(kind) for kind in KINDS), EVENTS_V1)
_BY_PATH = {(r.group, r.version, r.plural): r for r in RESOURCES}


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str  # the kind its requests answer with
    verbs: tuple[str, ...]
    group_version: str = ""  # of that kind, when not the resource's own


SCALE = Subresource("scale", "Scale", ("get", "patch", "update"), "autoscaling/v1")


# The Pod subresources that would reach a running container; served, always refused
# (kubelet_sim.apiserver.http.pod_connect).
POD_CONNECT = (Subresource("log", "Pod", ("get",)),
               Subresource("exec", "PodExecOptions", ("create", "get")),
               Subresource("attach", "PodAttachOptions", ("create", "get")),
               Subresource("portforward", "PodPortForwardOptions", ("create", "get")))


def subresources(r: ApiResource) -> list[Subresource]:
    """The subresources discovery lists for ``r``."""
    out = [Subresource("status", r.kind, ("get", "patch", "update"))] if r.has_status else []
    if r.has_scale:
        out.append(SCALE)
    if r.kind == "Pod":
        out.extend(POD_CONNECT)
    return out


def lookup(group: str, version: str, plural: str) -> ApiResource | None:
    return _BY_PATH.get((group, version, plural))


def group_versions(extra: Iterable[ApiResource] = ()) -> dict[str, list[ApiResource]]:
    """group/version -> its resources, core ("v1") first; ``extra`` (the resources of
    CustomResourceDefinitions) are added, replacing a built-in one of the same path."""
    by_path = {(r.group, r.version, r.plural): r for r in RESOURCES}
    by_path.update({(r.group, r.version, r.plural): r for r in extra})
    out: dict[str, list[ApiResource]] = {}
    for r in sorted(by_path.values(),
                    key=lambda r: (r.group != "", r.group, _version_order(r.version))):
        out.setdefault(r.group_version, []).append(r)
    return out


def _version_order(version: str) -> tuple[int, int, int]:
    """Kubernetes' version priority (v2 > v1 > v1beta2 > v1beta1 > v1alpha1), smallest
    first: the first version of a group is its preferred one."""
    found = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not found:
        return (3, 0, 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[found[2]]
    return (rank, -int(found[1]), -int(found[3] or 0))
