"""Rules the API server applies to a write before storing it, beside defaulting and
validation: the StorageObjectInUseProtection, DefaultTolerationSeconds and
NamespaceLifecycle admission plugins, generateName, the Pod deletion grace period, and
the conflicts a test may inject."""

from __future__ import annotations

import random
from dataclasses import dataclass

from kubelet_sim.api.errors import InjectedConflict, ObjectForbidden
from kubelet_sim.api.model import Resource, kind_info
from kubelet_sim.api.taints import default_tolerations

PROTECTION_FINALIZERS = {
    "PersistentVolumeClaim": "kubernetes.io/pvc-protection",
    "PersistentVolume": "kubernetes.io/pv-protection",
    "VolumeAttributesClass": "kubernetes.io/vac-protection",
}
# NamespaceLifecycle's namespaces that may never be deleted
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # Kubernetes' generateName alphabet


def admit_new(obj: Resource, storage_protection: bool) -> None:
    """The mutating admission plugins a create passes: StorageObjectInUseProtection
    (when on) and DefaultTolerationSeconds."""
    if storage_protection:
        add_protection_finalizer(obj)
    if obj.kind == "Pod":
        default_tolerations(obj)


def admit_update(obj: Resource) -> None:
    """The mutating plugins an update (not of a subresource) passes:
    DefaultTolerationSeconds (a blind PUT keeps the pod's default tolerations)."""
    if obj.kind == "Pod":
        default_tolerations(obj)


def admit_delete(kind: str, name: str) -> None:
    """NamespaceLifecycle on a delete: the immortal namespaces stay."""
    if kind == "Namespace" and name in IMMORTAL_NAMESPACES:
        raise ObjectForbidden("this namespace may not be deleted", kind, name, "namespaces")


def refuse_in_terminating_namespace(kind: str, name: str, namespace: str) -> ObjectForbidden:
    """NamespaceLifecycle on a create in a namespace being deleted (``name``: as sent,
    empty when the server generates it)."""
    return ObjectForbidden(f"unable to create new content in namespace {namespace} because "
                           "it is being terminated", kind, name)


def add_protection_finalizer(obj: Resource) -> None:
    """StorageObjectInUseProtection: a new claim, volume or VolumeAttributesClass gets its
    protection finalizer."""
    protection = PROTECTION_FINALIZERS.get(obj.kind)
    if protection and protection not in obj.metadata.finalizers:
        obj.metadata.finalizers.append(protection)


def generated_name(rng: random.Random, prefix: str) -> str:
    """``generateName`` + five characters of Kubernetes' alphabet."""
    return prefix + "".join(rng.choice(NAME_CHARS) for _ in range(5))


def deletion_grace_period(obj: Resource, requested: int | None) -> int:
    """Only scheduled, non-terminal Pods are deleted gracefully (kubelet's job)."""
    if obj.kind != "Pod":
        return 0
    if not obj.spec.get("nodeName") or obj.status.get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, requested)
    return int(obj.spec.get("terminationGracePeriodSeconds", 30))


@dataclass
class _Pending:
    count: int
    verbs: tuple[str, ...]


class InjectedConflicts:
    """Writes a test asked to fail with Conflict, per kind (see APIServer.inject_conflicts)."""

    def __init__(self) -> None:
        self._pending: dict[str, _Pending] = {}

    def set(self, kind: str, count: int, verbs: tuple[str, ...]) -> None:
        kind_info(kind)
        self._pending[kind] = _Pending(count, verbs)

    def take(self, kind: str, verb: str) -> None:
        """Raise the injected Conflict if one is pending for this write."""
        pending = self._pending.get(kind)
        if pending and pending.count > 0 and verb in pending.verbs:
            pending.count -= 1
            raise InjectedConflict(
                f"Operation cannot be fulfilled on {kind}: the object has been modified; "
                "please apply your changes to the latest version and try again (injected)"
            )
