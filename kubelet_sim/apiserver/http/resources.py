"""The REST names of the simulator's kinds: group, version, plural, short names."""

from __future__ import annotations

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


# The Pod subresources that would reach a running container; served, always refused
# (kubelet_sim.apiserver.http.pod_connect).
POD_CONNECT = (Subresource("log", "Pod", ("get",)),
               Subresource("exec", "PodExecOptions", ("create", "get")),
               Subresource("attach", "PodAttachOptions", ("create", "get")),
               Subresource("portforward", "PodPortForwardOptions", ("create", "get")))


def subresources(r: ApiResource) -> list[Subresource]:
    """The subresources discovery lists for ``r``."""
    out = [Subresource("status", r.kind, ("get", "patch", "update"))] if r.has_status else []
    if r.kind == "Pod":
        out.extend(POD_CONNECT)
    return out


def lookup(group: str, version: str, plural: str) -> ApiResource | None:
    return _BY_PATH.get((group, version, plural))


def group_versions() -> dict[str, list[ApiResource]]:
    """group/version -> its resources, core ("v1") first."""
    out: dict[str, list[ApiResource]] = {}
    for r in sorted(RESOURCES, key=lambda r: (r.group != "", r.group)):
        out.setdefault(r.group_version, []).append(r)
    return out
