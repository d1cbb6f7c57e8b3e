"""The fields of the kinds served here that the type table does not hold, for their OpenAPI
schema and ``fieldValidation``: the kinds that are custom resources in a real cluster (the
snapshot kinds of external-snapshotter's CRDs). The built-in kinds' fields, and
apiextensions.k8s.io's CustomResourceDefinition's, are the type table's
(:mod:`kubelet_sim.api.kube_types`).

A schema is a tree. :class:`Obj` lists an object's fields (closed: any other field is
unknown); :class:`Arr` is a list of one schema; :class:`Map` is an object with free keys
(labels, parameters); :class:`Leaf` is a scalar; :data:`OPEN` is a sub-tree whose fields
are not enumerated here and are not checked (a volume source's own fields, affinity,
status). The names are the snapshot CRDs'.
"""

from __future__ import annotations

from dataclasses import dataclass

from kubelet_sim.api import kube_types
from kubelet_sim.api.model import KINDS


@dataclass(frozen=True)
class Leaf:
    type: str  # string, integer, boolean, number


@dataclass(frozen=True)
class Open:
    """Fields not enumerated: anything goes, nothing is checked."""


@dataclass(frozen=True)
class Map:
    values: Node = Leaf("string")


@dataclass(frozen=True)
class Arr:
    items: Node


@dataclass(frozen=True)
class Obj:
    fields: dict[str, Node]


Node = Leaf | Open | Map | Arr | Obj

STR, INT, BOOL = Leaf("string"), Leaf("integer"), Leaf("boolean")
OPEN = Open()
STRS = Arr(STR)


def _open(*names: str) -> dict[str, Node]:
    return dict.fromkeys(names, OPEN)


OWNER_REFERENCE = Obj({"apiVersion": STR, "kind": STR, "name": STR, "uid": STR,
                       "controller": BOOL, "blockOwnerDeletion": BOOL})
OBJECT_META = Obj({
    "name": STR, "generateName": STR, "namespace": STR, "selfLink": STR, "uid": STR,
    "resourceVersion": STR, "generation": INT, "creationTimestamp": STR,
    "deletionTimestamp": STR, "deletionGracePeriodSeconds": INT, "labels": Map(),
    "annotations": Map(), "ownerReferences": Arr(OWNER_REFERENCE), "finalizers": STRS,
    "managedFields": Arr(OPEN),
})
SPECS: dict[str, Node] = {
    "VolumeSnapshot": Obj({"volumeSnapshotClassName": STR, "source": Obj(
        {"persistentVolumeClaimName": STR, "volumeSnapshotContentName": STR})}),
    "VolumeSnapshotContent": Obj({
        "deletionPolicy": STR, "driver": STR, "volumeSnapshotClassName": STR,
        "sourceVolumeMode": STR, "volumeSnapshotRef": OPEN,
        "source": Obj({"volumeHandle": STR, "snapshotHandle": STR})}),
}
# Top-level fields of the kinds without spec (their names are in the kind registry).
_TOP_LEVEL_TYPES: dict[str, Node] = {"parameters": Map()}


def kind_schema(kind: str) -> Obj | None:
    """The whole object's schema; None for a kind this module does not describe (the
    built-in kinds: see :mod:`kubelet_sim.api.kube_types`)."""
    info = KINDS.get(kind)
    if info is None or kube_types.kind_type(info.api_version, kind) is not None:
        return None
    fields: dict[str, Node] = {"apiVersion": STR, "kind": STR, "metadata": OBJECT_META}
    if info.has_spec:
        spec = SPECS.get(kind)
        if spec is None:
            return None
        fields["spec"] = spec
    fields.update({name: _TOP_LEVEL_TYPES.get(name, STR) for name in sorted(info.top_level)})
    if info.status_subresource:
        fields["status"] = OPEN
    return Obj(fields)
