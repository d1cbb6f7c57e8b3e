"""``metadata.generation`` as kube-apiserver v1.35 keeps it, kind by kind.

Only the kinds whose registry strategy sets it have a generation: their create stores 1
and an update (not of the status subresource) moves it by one when what the kind
watches changed. Every other kind keeps what the creating client sent (nothing,
usually: no generation at all), and no update changes it. For every kind the first
delete that leaves the object in place (finalizers, or a Pod's grace period) moves a
generation above 0 by one.

What moves it (:data:`RULES`, one entry per kind):

* ``spec``: a change of ``spec`` (Pod, NetworkPolicy, PodDisruptionBudget, CSIDriver,
  CustomResourceDefinition, Ingress, IngressClass, ReplicationController; the apps and
  batch kinds). A Pod's ``pods/binding`` writes the store directly and leaves it;
* ``spec+annotations``: Deployment, whose annotations are copied to its ReplicaSets;
* ``template``: PodTemplate, a change of its top-level ``template``;
* ``all-but-metadata+labels``: EndpointSlice, any field outside metadata, or its labels;
* ``one``: PriorityClass, whose strategy stores 1 on create and never moves it;
* ``all-but-metadata``: custom resources (and the snapshot kinds, CRDs in a real
  cluster), any field outside metadata; status too where there is no status subresource.

Unlisted built-in kinds have none (a test keeps every served kind listed).
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import Resource, kind_info

__all__ = ["RULES", "on_create", "on_delete", "on_update", "tracked"]

SPEC = "spec"
SPEC_AND_ANNOTATIONS = "spec+annotations"
TEMPLATE = "template"
ALL_BUT_METADATA_AND_LABELS = "all-but-metadata+labels"
ALL_BUT_METADATA = "all-but-metadata"
ONE = "one"  # 1 on create, never moved: the strategy sets it and compares nothing
NONE = ""

# kind -> what moves its generation (NONE: the kind has no generation)
RULES: dict[str, str] = {
    # core/v1
    "Pod": SPEC,  # PodObservedGenerationTracking, GA (locked on) in 1.35
    "Namespace": NONE,
    "Node": NONE,
    "PersistentVolume": NONE,
    "PersistentVolumeClaim": NONE,
    "Service": NONE,
    "Endpoints": NONE,
    "ConfigMap": NONE,
    "Secret": NONE,
    "ServiceAccount": NONE,
    "Event": NONE,
    "ReplicationController": SPEC,
    "PodTemplate": TEMPLATE,
    "ResourceQuota": NONE,
    "LimitRange": NONE,
    # storage.k8s.io/v1
    "StorageClass": NONE,
    "VolumeAttributesClass": NONE,
    "CSIDriver": SPEC,
    "CSINode": NONE,
    "CSIStorageCapacity": NONE,
    "VolumeAttachment": NONE,
    # snapshot.storage.k8s.io/v1: CustomResourceDefinitions in a real cluster
    "VolumeSnapshot": ALL_BUT_METADATA,
    "VolumeSnapshotContent": ALL_BUT_METADATA,
    "VolumeSnapshotClass": ALL_BUT_METADATA,
    # the other groups
    "NetworkPolicy": SPEC,
    "Ingress": SPEC,
    "IngressClass": SPEC,
    "PriorityClass": ONE,
    "EndpointSlice": ALL_BUT_METADATA_AND_LABELS,
    "Lease": NONE,
    "PodDisruptionBudget": SPEC,
    "CustomResourceDefinition": SPEC,
    "Role": NONE,
    "ClusterRole": NONE,
    "RoleBinding": NONE,
    "ClusterRoleBinding": NONE,
    # apps/v1 and batch/v1 (issue 24)
    "Deployment": SPEC_AND_ANNOTATIONS,
    "ReplicaSet": SPEC,
    "StatefulSet": SPEC,
    "DaemonSet": SPEC,
    "ControllerRevision": NONE,
    "Job": SPEC,
    "CronJob": SPEC,
}


def rule(kind: str) -> str:
    """What moves ``kind``'s generation (custom kinds: everything but metadata)."""
    if kind in RULES:
        return RULES[kind]
    return ALL_BUT_METADATA if kind_info(kind).custom else NONE


def tracked(kind: str) -> bool:
    """Whether the API server keeps a generation for ``kind``."""
    return rule(kind) != NONE


def on_create(obj: Resource) -> None:
    """A new object: generation 1 for the kinds that track it; the others keep the
    client's value, which must not be negative."""
    if tracked(obj.kind):
        obj.metadata.generation = 1
    elif obj.metadata.generation < 0:
        raise Invalid("metadata.generation", f"Invalid value: {obj.metadata.generation}: "
                      "must be greater than or equal to 0")


def on_update(current: Resource, updated: Resource, *, status_only: bool) -> int:
    """The generation ``updated`` is stored with (the client's value is never kept)."""
    before = current.metadata.generation
    if status_only or not _watched(rule(current.kind), current, updated):
        return before
    return before + 1


def on_delete(obj: Resource) -> None:
    """The first delete that keeps the object (it becomes Terminating)."""
    if obj.metadata.generation > 0:
        obj.metadata.generation += 1


def _watched(what: str, current: Resource, updated: Resource) -> bool:
    if what == NONE:
        return False
    if what in (SPEC, SPEC_AND_ANNOTATIONS) and current.spec != updated.spec:
        return True
    if what == TEMPLATE:
        return current.body.get("template") != updated.body.get("template")
    if what == SPEC_AND_ANNOTATIONS:
        return current.metadata.annotations != updated.metadata.annotations
    if what == ALL_BUT_METADATA_AND_LABELS:
        return (_outside_metadata(current) != _outside_metadata(updated)
                or current.metadata.labels != updated.metadata.labels)
    if what == ALL_BUT_METADATA:
        return _outside_metadata(current) != _outside_metadata(updated)
    return False


def _outside_metadata(obj: Resource) -> dict[str, Any]:
    return {"spec": obj.spec, "status": obj.status, **obj.body}
