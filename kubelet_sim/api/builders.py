"""Typed constructors for the kinds the simulator uses, with Kubernetes' field names.

Each returns a :class:`~kubelet_sim.api.model.Resource` ready for ``APIServer.create``; the
keyword arguments name the fields the simulator's components read, so a typo is a
type error rather than a silently ignored key. Anything more exotic: build the dict and
use :meth:`Resource.from_dict`.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.model import JSON, Resource, new


def namespace(name: str, labels: dict[str, str] | None = None) -> Resource:
    return new("Namespace", name, labels=labels)


def node(
    name: str,
    pod_cidr: str | None = None,
    internal_ip: str | None = None,
    *,
    labels: dict[str, str] | None = None,
    ready: bool | None = None,
) -> Resource:
    """A Node with ``spec.podCIDR(s)``, an ``InternalIP`` address and, when ``ready`` is
    given, a ``Ready`` condition (the kubelet reports Ready False with reason
    ``KubeletNotReady`` while the network plugin is not ready)."""
    spec: JSON = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]} if pod_cidr else {}
    status: JSON = {}
    if internal_ip:
        status["addresses"] = [
            {"type": "InternalIP", "address": internal_ip},
            {"type": "Hostname", "address": name},
        ]
    if ready is not None:
        status["conditions"] = [{
            "type": "Ready",
            "status": "True" if ready else "False",
            "reason": "KubeletReady" if ready else "KubeletNotReady",
            "message": "kubelet is posting ready status" if ready else
            "container runtime network not ready: NetworkReady=false",
        }]
    return new("Node", name, spec=spec, status=status, labels=labels)


def container_port(port: int, name: str | None = None, protocol: str = "TCP") -> JSON:
    out: JSON = {"containerPort": port, "protocol": protocol}
    if name:
        out["name"] = name
    return out


def container(
    name: str,
    image: str = "registry.k8s.io/pause:3.9",
    ports: list[JSON] | None = None,
    volume_mounts: list[JSON] | None = None,
) -> JSON:
    out: JSON = {"name": name, "image": image}
    if ports:
        out["ports"] = ports
    if volume_mounts:
        out["volumeMounts"] = volume_mounts
    return out


def pvc_volume(name: str, claim_name: str, read_only: bool = False) -> JSON:
    """A pod volume backed by a PersistentVolumeClaim."""
    return {"name": name, "persistentVolumeClaim": {"claimName": claim_name,
                                                    "readOnly": read_only}}


def csi_inline_volume(
    name: str,
    driver: str,
    attributes: dict[str, str] | None = None,
    fs_type: str | None = None,
    read_only: bool = False,
) -> JSON:
    """A CSI inline ephemeral volume (``volumes[].csi``)."""
    csi: JSON = {"driver": driver, "readOnly": read_only}
    if attributes:
        csi["volumeAttributes"] = dict(attributes)
    if fs_type:
        csi["fsType"] = fs_type
    return {"name": name, "csi": csi}


def pod(
    name: str,
    namespace: str = "default",
    *,
    containers: list[JSON] | None = None,
    volumes: list[JSON] | None = None,
    labels: dict[str, str] | None = None,
    node_name: str | None = None,
    service_account: str | None = None,
) -> Resource:
    spec: JSON = {"containers": containers or [container("main")]}
    if volumes:
        spec["volumes"] = volumes
    if node_name:
        spec["nodeName"] = node_name
    if service_account:
        spec["serviceAccountName"] = service_account
    return new("Pod", name, namespace, spec=spec, labels=labels)


def persistent_volume_claim(
    name: str,
    namespace: str = "default",
    *,
    storage: str,
    storage_class: str | None = None,
    access_modes: list[str] | None = None,
    volume_mode: str = "Filesystem",
    data_source: JSON | None = None,
    volume_attributes_class: str | None = None,
) -> Resource:
    spec: JSON = {
        "accessModes": access_modes or ["ReadWriteOnce"],
        "resources": {"requests": {"storage": storage}},
        "volumeMode": volume_mode,
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if data_source:
        spec["dataSource"] = dict(data_source)
    if volume_attributes_class is not None:
        spec["volumeAttributesClassName"] = volume_attributes_class
    return new("PersistentVolumeClaim", name, namespace, spec=spec)


def csi_persistent_volume(
    name: str,
    *,
    driver: str,
    volume_handle: str,
    storage: str,
    access_modes: list[str] | None = None,
    volume_attributes: dict[str, str] | None = None,
    fs_type: str | None = None,
    read_only: bool = False,
    reclaim_policy: str = "Delete",
    storage_class: str | None = None,
    claim_ref: JSON | None = None,
    node_affinity: JSON | None = None,
) -> Resource:
    """A PersistentVolume with a ``csi`` source, as external-provisioner writes one."""
    csi: JSON = {"driver": driver, "volumeHandle": volume_handle, "readOnly": read_only}
    if volume_attributes:
        csi["volumeAttributes"] = dict(volume_attributes)
    if fs_type:
        csi["fsType"] = fs_type
    spec: JSON = {
        "capacity": {"storage": storage},
        "accessModes": access_modes or ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": reclaim_policy,
        "csi": csi,
    }
    if storage_class:
        spec["storageClassName"] = storage_class
    if claim_ref:
        spec["claimRef"] = dict(claim_ref)
    if node_affinity:
        spec["nodeAffinity"] = dict(node_affinity)
    return new("PersistentVolume", name, spec=spec)


def storage_class(
    name: str,
    provisioner: str,
    *,
    parameters: dict[str, str] | None = None,
    reclaim_policy: str = "Delete",
    volume_binding_mode: str = "Immediate",
    allow_volume_expansion: bool = False,
    allowed_topologies: list[JSON] | None = None,
) -> Resource:
    body: dict[str, Any] = {
        "provisioner": provisioner,
        "reclaimPolicy": reclaim_policy,
        "volumeBindingMode": volume_binding_mode,
        "allowVolumeExpansion": allow_volume_expansion,
    }
    if parameters:
        body["parameters"] = dict(parameters)
    if allowed_topologies:
        body["allowedTopologies"] = list(allowed_topologies)
    return new("StorageClass", name, **body)


def volume_attributes_class(name: str, driver: str, parameters: dict[str, str]) -> Resource:
    """A VolumeAttributesClass: the mutable parameters ``driver`` applies to a volume."""
    return new("VolumeAttributesClass", name, driverName=driver, parameters=dict(parameters))


def csi_driver(
    name: str,
    *,
    attach_required: bool = True,
    pod_info_on_mount: bool = False,
    volume_lifecycle_modes: list[str] | None = None,
    fs_group_policy: str = "ReadWriteOnceWithFSType",
) -> Resource:
    return new("CSIDriver", name, spec={
        "attachRequired": attach_required,
        "podInfoOnMount": pod_info_on_mount,
        "volumeLifecycleModes": volume_lifecycle_modes or ["Persistent"],
        "fsGroupPolicy": fs_group_policy,
    })


def csi_node(node_name: str, drivers: list[JSON]) -> Resource:
    """CSINode: ``drivers`` entries carry name, nodeID, topologyKeys, allocatable.count."""
    return new("CSINode", node_name, spec={"drivers": drivers})


def csi_storage_capacity(name: str, namespace: str, storage_class: str,
                         node_topology: JSON | None, capacity: str | None,
                         maximum_volume_size: str | None = None) -> Resource:
    """A CSIStorageCapacity: what GetCapacity answered for a class in a topology segment."""
    body: JSON = {"storageClassName": storage_class}
    if node_topology is not None:
        body["nodeTopology"] = node_topology
    if capacity is not None:
        body["capacity"] = capacity
    if maximum_volume_size is not None:
        body["maximumVolumeSize"] = maximum_volume_size
    return new("CSIStorageCapacity", name, namespace, **body)


def volume_attachment(name: str, attacher: str, node_name: str, pv_name: str) -> Resource:
    return new("VolumeAttachment", name, spec={
        "attacher": attacher, "nodeName": node_name,
        "source": {"persistentVolumeName": pv_name},
    })


def volume_snapshot_class(
    name: str, driver: str, deletion_policy: str = "Delete",
    parameters: dict[str, str] | None = None,
) -> Resource:
    body: dict[str, Any] = {"driver": driver, "deletionPolicy": deletion_policy}
    if parameters:
        body["parameters"] = dict(parameters)
    return new("VolumeSnapshotClass", name, **body)


def volume_snapshot(
    name: str, namespace: str = "default", *, source_pvc: str, snapshot_class: str | None = None
) -> Resource:
    """A VolumeSnapshot of the claim ``source_pvc`` (dynamic snapshot)."""
    spec: JSON = {"source": {"persistentVolumeClaimName": source_pvc}}
    if snapshot_class:
        spec["volumeSnapshotClassName"] = snapshot_class
    return new("VolumeSnapshot", name, namespace, spec=spec)


def network_policy(
    name: str,
    namespace: str = "default",
    *,
    pod_selector: JSON | None = None,
    ingress: list[JSON] | None = None,
    egress: list[JSON] | None = None,
    policy_types: list[str] | None = None,
) -> Resource:
    """``ingress``/``egress`` None leaves the field out (which matters for the
    policyTypes default); pass ``[]`` for an explicit empty list."""
    spec: JSON = {"podSelector": pod_selector or {}}
    if ingress is not None:
        spec["ingress"] = ingress
    if egress is not None:
        spec["egress"] = egress
    if policy_types:
        spec["policyTypes"] = policy_types
    return new("NetworkPolicy", name, namespace, spec=spec)


def lease(name: str, namespace: str, holder: str, duration_seconds: int,
          renew_time: str) -> Resource:
    """A coordination.k8s.io/v1 Lease (``renew_time``: metav1.MicroTime text)."""
    return new("Lease", name, namespace, spec={"holderIdentity": holder,
                                               "leaseDurationSeconds": duration_seconds,
                                               "renewTime": renew_time})


def secret(name: str, namespace: str, data: dict[str, str], kind: str = "Opaque") -> Resource:
    """A core/v1 Secret whose ``stringData`` is ``data`` (the API server stores it in
    ``data``, base64)."""
    return new("Secret", name, namespace, stringData=dict(data), type=kind)
