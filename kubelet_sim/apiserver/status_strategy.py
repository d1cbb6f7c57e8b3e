"""What a write through a kind's ``/status`` subresource may change, as kube-apiserver
v1.35's status strategies decide (each registry's statusStrategy.PrepareForUpdate, then
the generic update rules).

A status write never changes ``spec`` (or any top-level field but ``status``), the
object's identity, timestamps or generation. Its ``metadata`` is another matter: the
generic update path resets none of the user metadata, so unless the kind's strategy puts
a field back from the stored object, a status write may change labels, annotations,
finalizers and ownerReferences (the kubelet re-labels its Node through the status
subresource). What each kind puts back (:data:`KEPT`):

* Pod: ``ownerReferences`` (old kubelets corrupted them);
* Deployment: ``labels`` (the deployment controller writes its revision annotation
  through status, so annotations do change);
* VolumeAttachment: every user metadata field (``metav1.ResetObjectMetaForStatus``);
* custom resources, and the snapshot kinds (CustomResourceDefinitions in a real cluster):
  everything but ``status`` (``managedFields`` follow the write);
* the other built-in kinds (Namespace, Node, PersistentVolume(Claim), PodDisruptionBudget,
  ReplicaSet, StatefulSet, DaemonSet, Job, Service, CustomResourceDefinition, whose reset
  of its own metadata resets it from the new object): ``spec`` only.
"""

from __future__ import annotations

from kubelet_sim.api.model import Resource, kind_info

__all__ = ["KEPT", "USER_METADATA", "kept_metadata", "status_write"]

# the metadata fields a client writes (ObjectMeta attribute names)
USER_METADATA = ("labels", "annotations", "finalizers", "owner_references")

_ALL = frozenset(USER_METADATA)

# kind -> the user metadata a status write leaves as stored (unlisted built-ins: none)
KEPT: dict[str, frozenset[str]] = {
    "Pod": frozenset({"owner_references"}),
    "Deployment": frozenset({"labels"}),
    "VolumeAttachment": _ALL,
    "VolumeSnapshot": _ALL,
    "VolumeSnapshotContent": _ALL,
    "VolumeSnapshotClass": _ALL,
}


def kept_metadata(kind: str) -> frozenset[str]:
    """The user metadata fields a ``/status`` write of ``kind`` cannot change."""
    if kind in KEPT:
        return KEPT[kind]
    return _ALL if kind_info(kind).custom else frozenset()


def status_write(current: Resource, sent: Resource) -> Resource:
    """The object a ``/status`` write of ``sent`` over ``current`` stores (before
    defaulting and validation): ``current`` with ``sent``'s status, managedFields and the
    user metadata the kind's strategy lets through. ``sent`` is the caller's own copy:
    its values are taken, not copied."""
    updated = current.copy()
    updated.status = sent.status
    updated.metadata.managed_fields = sent.metadata.managed_fields
    kept = kept_metadata(current.kind)
    for attr in USER_METADATA:
        if attr not in kept:
            setattr(updated.metadata, attr, getattr(sent.metadata, attr))
    return updated

