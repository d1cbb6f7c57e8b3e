"""``kubectl get`` output: Table objects with the columns a real cluster prints.

kubectl asks with ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io``; each row
carries its cells and the object (PartialObjectMetadata, or the whole object with
``includeObject=Object``). Columns with ``priority: 1`` show with ``-o wide``.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kubelet_sim.api.default_storage_class import is_default_class
from kubelet_sim.api.human_duration import human_duration
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http import (
    cluster_tables,
    events,
    quota_tables,
    scheduling_tables,
    service_tables,
    workload_tables,
)
from kubelet_sim.apiserver.http.pod_table import (
    pod_readiness_gates,
    pod_ready,
    pod_restarts,
    pod_status,
)

Column = tuple[str, str, int, Callable[[Resource], Any]]  # name, type, priority, cell


def age(obj: Resource, now: datetime.datetime | None = None) -> str:
    """Kubernetes' HumanDuration of the object's age (5s, 3m10s, 2d4h, ...)."""
    created = obj.metadata.creation_timestamp
    if not created:
        return "<unknown>"
    then = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    seconds = int(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds())
    return human_duration(max(seconds, 0))


def _node_status(node: Resource) -> str:
    ready = next((c for c in node.status.get("conditions") or [] if c.get("type") == "Ready"),
                 None)
    text = "Ready" if ready and ready.get("status") == "True" else "NotReady"
    return text + (",SchedulingDisabled" if node.spec.get("unschedulable") else "")


def _node_roles(node: Resource) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(k[len(prefix):] for k in node.metadata.labels if k.startswith(prefix))
    return ",".join(roles) or "<none>"


def _node_ip(node: Resource, kind: str) -> str:
    return next((a.get("address", "") for a in node.status.get("addresses") or []
                 if a.get("type") == kind), "<none>")


def _get(path: str, default: str = "<none>") -> Callable[[Resource], Any]:
    def cell(obj: Resource) -> Any:
        node: Any = obj.to_dict()
        for part in path.split("."):
            node = node.get(part) if isinstance(node, dict) else None
            if node is None:
                return default
        return node
    return cell


def _access_modes(modes: Any) -> str:
    short = {"ReadWriteOnce": "RWO", "ReadOnlyMany": "ROX", "ReadWriteMany": "RWX",
             "ReadWriteOncePod": "RWOP"}
    return ",".join(short.get(m, m) for m in modes or []) or ""


def _claim_ref(pv: Resource) -> str:
    ref = pv.spec.get("claimRef") or {}
    return f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else ""


NAME: Column = ("Name", "string", 0, lambda o: o.name)
AGE: Column = ("Age", "string", 0, age)

COLUMNS: dict[str, list[Column]] = {
    "Pod": [NAME, ("Ready", "string", 0, pod_ready), ("Status", "string", 0, pod_status),
            ("Restarts", "string", 0, pod_restarts), AGE,
            ("IP", "string", 1, _get("status.podIP")),
            ("Node", "string", 1, _get("spec.nodeName")),
            ("Nominated Node", "string", 1, _get("status.nominatedNodeName")),
            ("Readiness Gates", "string", 1, pod_readiness_gates)],
    "Node": [NAME, ("Status", "string", 0, _node_status), ("Roles", "string", 0, _node_roles),
             AGE, ("Version", "string", 0, _get("status.nodeInfo.kubeletVersion", "")),
             ("Internal-IP", "string", 1, lambda o: _node_ip(o, "InternalIP")),
             ("External-IP", "string", 1, lambda o: _node_ip(o, "ExternalIP")),
             ("OS-Image", "string", 1, _get("status.nodeInfo.osImage", "<unknown>")),
             ("Kernel-Version", "string", 1, _get("status.nodeInfo.kernelVersion", "<unknown>")),
             ("Container-Runtime", "string", 1,
              _get("status.nodeInfo.containerRuntimeVersion", "<unknown>"))],
    "PersistentVolumeClaim": [
        NAME, ("Status", "string", 0, _get("status.phase", "")),
        ("Volume", "string", 0, _get("spec.volumeName", "")),
        ("Capacity", "string", 0, _get("status.capacity.storage", "")),
        ("Access Modes", "string", 0, lambda o: _access_modes(o.status.get("accessModes"))),
        ("StorageClass", "string", 0, _get("spec.storageClassName", "<unset>")),
        ("VolumeAttributesClass", "string", 0, _get("spec.volumeAttributesClassName", "<unset>")),
        AGE, ("VolumeMode", "string", 1, _get("spec.volumeMode", "Filesystem"))],
    "PersistentVolume": [
        NAME, ("Capacity", "string", 0, _get("spec.capacity.storage", "")),
        ("Access Modes", "string", 0, lambda o: _access_modes(o.spec.get("accessModes"))),
        ("Reclaim Policy", "string", 0, _get("spec.persistentVolumeReclaimPolicy", "")),
        ("Status", "string", 0, _get("status.phase", "")),
        ("Claim", "string", 0, _claim_ref),
        ("StorageClass", "string", 0, _get("spec.storageClassName", "")),
        ("VolumeAttributesClass", "string", 0, _get("spec.volumeAttributesClassName", "<unset>")),
        ("Reason", "string", 0, _get("status.reason", "")), AGE,
        ("VolumeMode", "string", 1, _get("spec.volumeMode", "Filesystem"))],
    "StorageClass": [
        ("Name", "string", 0,
         lambda o: o.name + (" (default)" if is_default_class(o) else "")),
        ("Provisioner", "string", 0, _get("provisioner", "")),
        ("ReclaimPolicy", "string", 0, _get("reclaimPolicy", "Delete")),
        ("VolumeBindingMode", "string", 0, _get("volumeBindingMode", "Immediate")),
        ("AllowVolumeExpansion", "string", 0, lambda o: str(bool(
            o.to_dict().get("allowVolumeExpansion"))).lower()), AGE],
    "VolumeAttributesClass": [NAME, ("DriverName", "string", 0, _get("driverName", "")), AGE],
    "VolumeAttachment": [
        NAME, ("Attacher", "string", 0, _get("spec.attacher", "")),
        ("PV", "string", 0, _get("spec.source.persistentVolumeName", "")),
        ("Node", "string", 0, _get("spec.nodeName", "")),
        ("Attached", "string", 0, lambda o: str(bool(o.status.get("attached"))).lower()), AGE],
    "CSINode": [NAME, ("Drivers", "string", 0,
                       lambda o: len(o.spec.get("drivers") or [])), AGE],
    # kubectl's printer has no age column for these
    "CSIStorageCapacity": [NAME, ("StorageClassName", "string", 0, _get("storageClassName", "")),
                           ("Capacity", "string", 0, _get("capacity", "<unset>"))],
    "VolumeSnapshot": [
        NAME, ("ReadyToUse", "string", 0, lambda o: str(bool(o.status.get("readyToUse"))).lower()),
        ("SourcePVC", "string", 0, _get("spec.source.persistentVolumeClaimName", "")),
        ("SourceSnapshotContent", "string", 0,
         _get("spec.source.volumeSnapshotContentName", "")),
        ("RestoreSize", "string", 0, _get("status.restoreSize", "")),
        ("SnapshotClass", "string", 0, _get("spec.volumeSnapshotClassName", "")),
        ("SnapshotContent", "string", 0, _get("status.boundVolumeSnapshotContentName", "")),
        ("CreationTime", "string", 0, _get("status.creationTime", "")), AGE],
    "PodDisruptionBudget": [
        NAME, ("Min Available", "string", 0, _get("spec.minAvailable", "N/A")),
        ("Max Unavailable", "string", 0, _get("spec.maxUnavailable", "N/A")),
        ("Allowed Disruptions", "integer", 0, _get("status.disruptionsAllowed", "0")), AGE],
    "Lease": [NAME, ("Holder", "string", 0, _get("spec.holderIdentity", "")), AGE],
    "NetworkPolicy": [
        NAME, ("Pod-Selector", "string", 0, lambda o: _selector(o.spec.get("podSelector"))), AGE],
    "Event": events.COLUMNS,
    "Secret": [NAME, ("Type", "string", 0, _get("type", "")),
               ("Data", "string", 0, lambda o: len(o.body.get("data") or {})), AGE],
    "ServiceAccount": [NAME, ("Secrets", "string", 0,
                              lambda o: len(o.body.get("secrets") or [])), AGE],
    # kubectl prints the definition's creation stamp itself, not an age
    "CustomResourceDefinition": [NAME, ("Created At", "date", 0,
                                        _get("metadata.creationTimestamp", ""))],
    **service_tables.COLUMNS,  # configuration, services and RBAC (issue 24)
    **workload_tables.COLUMNS,
    **quota_tables.COLUMNS,
    **scheduling_tables.COLUMNS,
    **cluster_tables.COLUMNS,
}


def _selector(sel: Any) -> str:
    labels = (sel or {}).get("matchLabels") or {}
    exprs = (sel or {}).get("matchExpressions") or []
    parts = [f"{k}={v}" for k, v in sorted(labels.items())]
    parts += [f"{e.get('key')} {str(e.get('operator', '')).lower()} "
              f"({','.join(e.get('values') or [])})" for e in exprs]
    return ",".join(parts) or "<none>"


def _row_object(obj: Resource, include: str, api_version: str) -> dict[str, Any]:
    if include == "Object":
        return obj.to_dict()
    if include == "None":
        return {}
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": obj.to_dict()["metadata"]}


def table(kind: str, items: list[Resource], resource_version: str, include: str = "Metadata",
          continue_token: str = "", api_version: str = "meta.k8s.io/v1") -> dict[str, Any]:
    columns = COLUMNS.get(kind, [NAME, AGE])
    definitions = [{"name": name, "type": typ, "format": "name" if name == "Name" else "",
                    "description": "", "priority": priority}
                   for name, typ, priority, _ in columns]
    rows = [{"cells": [cell(obj) for _, _, _, cell in columns],
             "object": _row_object(obj, include, api_version)} for obj in items]
    meta: dict[str, Any] = {"resourceVersion": resource_version}
    if continue_token:
        meta["continue"] = continue_token
    return {"kind": "Table", "apiVersion": api_version, "metadata": meta,
            "columnDefinitions": definitions, "rows": rows}
