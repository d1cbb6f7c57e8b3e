"""What an update may change: Kubernetes' update validation and the admission checks the
simulator's controllers run into.

* Pod: the spec is immutable except container and init container images,
  ``activeDeadlineSeconds`` (set, or lowered: never raised nor removed), ``tolerations``
  (additions), and ``nodeName`` while it is still empty (the scheduler's binding, which
  this API server accepts as a plain update).
* PersistentVolumeClaim: the spec is immutable except ``volumeName`` while empty (the
  binder) and, for a Bound claim, ``resources.requests`` and ``volumeAttributesClassName``;
  a request may not fall below ``status.capacity`` (or the previous request when there is
  none), and growing it needs a StorageClass with ``allowVolumeExpansion`` (the
  PersistentVolumeClaimResize admission plugin: Forbidden otherwise); the class name may
  not be cleared once ``status.currentVolumeAttributesClassName`` is set.
* PersistentVolume: the volume source (``csi``, ...) is immutable; a set
  ``volumeAttributesClassName`` may change but not be removed.
* StorageClass: ``provisioner``, ``parameters``, ``reclaimPolicy`` and
  ``volumeBindingMode`` are immutable.
* VolumeAttributesClass: ``driverName`` and ``parameters`` are immutable.
* VolumeAttachment: the spec is immutable.
* CSIStorageCapacity: ``nodeTopology`` and ``storageClassName`` are immutable.
* VolumeSnapshot / VolumeSnapshotContent: ``spec.source`` is immutable.
* Secret: ``type`` is immutable, and so are ``data`` and ``immutable`` once it is true
  (:mod:`kubelet_sim.apiserver.secret_rules`).
* ConfigMap (once ``immutable``), Service (its cluster IP), EndpointSlice (its address
  type), RoleBinding / ClusterRoleBinding (``roleRef``): see their modules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubelet_sim.api.errors import Invalid, ObjectForbidden
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import QuantityError, parse_storage
from kubelet_sim.apiserver import configmaps, job_rules, priority_classes, rbac, workloads
from kubelet_sim.apiserver.quota import rules as quota_rules
from kubelet_sim.apiserver.secret_rules import validate_secret_update
from kubelet_sim.apiserver.services import endpoint_rules
from kubelet_sim.apiserver.services import rules as service_rules

StorageClassLookup = Callable[[str], Resource | None]


def validate_update(old: Resource, new: Resource, storage_class: StorageClassLookup) -> None:
    """Raise :class:`Invalid` (or :class:`Forbidden` for admission) when ``new`` changes
    what may not change. ``storage_class(name)`` returns the StorageClass or None."""
    check = _RULES.get(new.kind)
    if check is not None:
        check(old, new, storage_class)


def _pod(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    def comparable(spec: JSON) -> JSON:
        out = {k: v for k, v in spec.items()
               if k not in ("activeDeadlineSeconds", "tolerations", "nodeName")}
        for group in ("containers", "initContainers"):
            if group in spec:
                out[group] = [{k: v for k, v in c.items() if k != "image"}
                              for c in spec.get(group) or []]
        return out

    old_deadline = old.spec.get("activeDeadlineSeconds")
    new_deadline = new.spec.get("activeDeadlineSeconds")
    if new_deadline is None and old_deadline is not None:
        raise Invalid("spec.activeDeadlineSeconds", "Invalid value: null: must not update "
                      "from a positive integer to nil value")
    if isinstance(new_deadline, int) and isinstance(old_deadline, int) and \
            new_deadline > old_deadline:
        raise Invalid("spec.activeDeadlineSeconds", f"Invalid value: {new_deadline}: "
                      "must be less than or equal to previous value")
    if comparable(old.spec) != comparable(new.spec):
        raise Invalid("spec", "Forbidden: pod updates may not change fields other than "
                      "`spec.containers[*].image`, `spec.initContainers[*].image`, "
                      "`spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to "
                      "existing tolerations) or `spec.terminationGracePeriodSeconds` (allow "
                      "it to be set to 1 if it was previously negative)")
    old_node, new_node = old.spec.get("nodeName"), new.spec.get("nodeName")
    if old_node and new_node != old_node:
        raise Invalid("spec.nodeName", "Forbidden: pod is already bound to a node")
    old_tol = old.spec.get("tolerations") or []
    if any(t not in (new.spec.get("tolerations") or []) for t in old_tol):
        raise Invalid("spec.tolerations", "Forbidden: existing toleration can not be modified")


def _storage(resources: Any) -> int | None:
    try:
        value = ((resources or {}).get("requests") or {}).get("storage")
        return None if value is None else parse_storage(value)
    except (QuantityError, AttributeError):
        return None


_CLAIM_MUTABLE = ("resources", "volumeName")
_BOUND_CLAIM_MUTABLE = (*_CLAIM_MUTABLE, "volumeAttributesClassName")


def _pvc(old: Resource, new: Resource, storage_class: StorageClassLookup) -> None:
    mutable = _BOUND_CLAIM_MUTABLE if new.status.get("phase") == "Bound" else _CLAIM_MUTABLE

    if _class_set_from_none(old):
        mutable = (*mutable, "storageClassName")

    def comparable(spec: JSON) -> JSON:
        return {k: v for k, v in spec.items() if k not in mutable}

    if comparable(old.spec) != comparable(new.spec):
        raise Invalid("spec", "Forbidden: spec is immutable after creation except "
                      "resources.requests and volumeAttributesClassName for bound claims")
    _claim_attributes_class(old, new)
    old_volume = old.spec.get("volumeName")
    if old_volume and new.spec.get("volumeName") != old_volume:
        raise Invalid("spec.volumeName", "Forbidden: spec.volumeName is immutable once set")
    old_size, new_size = _storage(old.spec.get("resources")), _storage(new.spec.get("resources"))
    if old_size == new_size and old.spec.get("resources") == new.spec.get("resources"):
        return
    path = "spec.resources.requests.storage"
    if old.status.get("phase") != "Bound":
        raise Invalid("spec", "Forbidden: spec is immutable after creation except "
                      "resources.requests and volumeAttributesClassName for bound claims")
    if new_size is None or old_size is None:
        raise Invalid(path, "Required value")
    capacity = (old.status.get("capacity") or {}).get("storage")
    floor = parse_storage(capacity) if capacity else old_size
    if new_size < floor:
        raise Invalid(path, "Forbidden: field can not be less than status.capacity")
    if new_size > old_size:
        sc_name = new.spec.get("storageClassName") or ""
        sc = storage_class(sc_name) if sc_name else None
        if sc is None or not sc.body.get("allowVolumeExpansion"):
            raise ObjectForbidden("only dynamically provisioned pvc can be resized and the "
                                  "storageclass that provisions the pvc must support resize",
                                  new.kind, new.name)


def _class_set_from_none(old: Resource) -> bool:
    """A claim that named no class (nor by the beta annotation) may be given one, as
    the PV controller does with the default class (RetroactiveDefaultStorageClass)."""
    beta = old.metadata.annotations.get("volume.beta.kubernetes.io/storage-class")
    return old.spec.get("storageClassName") is None and not beta


def _claim_attributes_class(old: Resource, new: Resource) -> None:
    """Once a class took effect (``status.currentVolumeAttributesClassName``), the claim
    may move to another class but not back to none."""
    name = new.spec.get("volumeAttributesClassName")
    if old.spec.get("volumeAttributesClassName") == name or \
            old.status.get("currentVolumeAttributesClassName") is None or name:
        return
    what = "nil" if name is None else "empty string"
    raise Invalid("spec.volumeAttributesClassName", f"Forbidden: update to {what} is forbidden "
                  "when status.currentVolumeAttributesClassName is not nil")


def _pv(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    for source in ("csi", "hostPath", "local", "nfs"):
        if old.spec.get(source) != new.spec.get(source):
            raise Invalid("spec.persistentvolumesource",
                          "Forbidden: spec.persistentvolumesource is immutable after creation")
    if old.spec.get("volumeAttributesClassName") is not None and \
            new.spec.get("volumeAttributesClassName") is None:
        raise Invalid("spec.volumeAttributesClassName",
                      "Forbidden: update from non-nil value to nil is forbidden")


def _storage_class(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    for key in ("provisioner", "parameters", "reclaimPolicy", "volumeBindingMode"):
        if old.body.get(key) != new.body.get(key):
            raise Invalid(key, f"Forbidden: updates to {key} are forbidden.")


def _volume_attributes_class(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    for key in ("driverName", "parameters"):
        if old.body.get(key) != new.body.get(key):
            raise Invalid(key, f"Forbidden: updates to {key} are forbidden.")


def _csi_storage_capacity(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    """The inputs of the GetCapacity call the object records are immutable."""
    for key in ("nodeTopology", "storageClassName"):
        if old.body.get(key) != new.body.get(key):
            raise Invalid(key, "Invalid value: field is immutable")


def _volume_attachment(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    if old.spec != new.spec:
        raise Invalid("spec", "Invalid value: field is immutable")


def _snapshot_source(old: Resource, new: Resource, _sc: StorageClassLookup) -> None:
    if old.spec.get("source") != new.spec.get("source"):
        raise Invalid("spec.source", "Invalid value: spec.source is immutable")


_RULES: dict[str, Callable[[Resource, Resource, StorageClassLookup], None]] = {
    "Pod": _pod,
    "PersistentVolumeClaim": _pvc,
    "PersistentVolume": _pv,
    "StorageClass": _storage_class,
    "VolumeAttributesClass": _volume_attributes_class,
    "VolumeAttachment": _volume_attachment,
    "CSIStorageCapacity": _csi_storage_capacity,
    "VolumeSnapshot": _snapshot_source,
    "VolumeSnapshotContent": _snapshot_source,
    "Secret": lambda old, new, _sc: validate_secret_update(old, new),
    # configuration, services and RBAC (issue 24)
    "ConfigMap": lambda old, new, _sc: configmaps.validate_config_map_update(old, new),
    "Service": lambda old, new, _sc: service_rules.validate_service_update(old, new),
    "EndpointSlice": lambda old, new, _sc: endpoint_rules.validate_endpoint_slice_update(
        old, new),
    "RoleBinding": lambda old, new, _sc: rbac.validate_binding_update(old, new),
    "ClusterRoleBinding": lambda old, new, _sc: rbac.validate_binding_update(old, new),
    "ResourceQuota": lambda old, new, _sc: quota_rules.validate_resource_quota_update(old, new),
}

# the apps/v1 and batch/v1 workload kinds keep their rules apart
_RULES.update(workloads.UPDATE_RULES)
_RULES["Job"] = job_rules.validate_job_update
_RULES[priority_classes.KIND] = lambda old, new, _sc: \
    priority_classes.validate_priority_class_update(old, new)
