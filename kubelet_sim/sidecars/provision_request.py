"""What external-provisioner sends and writes for one claim: the CreateVolume request parts
(capabilities, accessibility requirements, content source) and the PersistentVolume."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass

from csi_protos import csi_pb2
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.api.quantity import bytes_quantity, parse_storage
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.client.writes import get_or_none
from kubelet_sim.controllers.binder import claim_ref
from kubelet_sim.controllers.common import (
    ANN_PROVISIONED_BY,
    PROVISIONER_FINALIZER,
    csinode_driver,
    node_topology,
    storage_bytes,
)
from kubelet_sim.csi.volume_spec import csi_access_mode

ANN_DELETION_SECRET_NAME = "volume.kubernetes.io/provisioner-deletion-secret-name"
ANN_DELETION_SECRET_NAMESPACE = "volume.kubernetes.io/provisioner-deletion-secret-namespace"
ANN_MODIFY_SECRET_NAME = "volume.kubernetes.io/controller-modify-secret-name"
ANN_MODIFY_SECRET_NAMESPACE = "volume.kubernetes.io/controller-modify-secret-namespace"
PROVISIONER_IDENTITY_KEY = "storage.kubernetes.io/csiProvisionerIdentity"
SNAPSHOT_GROUP = "snapshot.storage.k8s.io"

Segment = dict[str, str]


class ProvisioningError(Exception):
    """The claim cannot be provisioned as it stands (reported as ProvisioningFailed)."""


def volume_capabilities(pvc: Resource, fs_type: str, mount_options: list[str], *,
                        single_node_multi_writer: bool) -> list[csi_pb2.VolumeCapability]:
    """One capability per access mode of the claim: block for ``volumeMode: Block``, else a
    mount with the class's fstype and mountOptions."""
    out = []
    for mode in pvc.spec.get("accessModes") or []:
        capability = csi_pb2.VolumeCapability(access_mode=csi_pb2.VolumeCapability.AccessMode(
            mode=csi_access_mode(mode, single_node_multi_writer=single_node_multi_writer)))
        if pvc.spec.get("volumeMode") == "Block":
            capability.block.SetInParent()
        else:
            capability.mount.fs_type = fs_type
            capability.mount.mount_flags.extend(mount_options)
        out.append(capability)
    return out


# -- topology -------------------------------------------------------------------------------


def _allowed_segments(allowed: list[JSON]) -> list[Segment]:
    """StorageClass allowedTopologies: every term expands to the product of its values."""
    out: list[Segment] = []
    for term in allowed:
        exprs = term.get("matchLabelExpressions") or []
        keys = [str(e["key"]) for e in exprs]
        for values in itertools.product(*[[str(v) for v in e.get("values") or []]
                                          for e in exprs]):
            out.append(dict(zip(keys, values, strict=True)))
    return out


def _cluster_segments(cache: SharedCache, driver: str,
                      keys: list[str] | None) -> list[Segment]:
    """The topology of every node the driver is registered on (with the same keys)."""
    out: list[Segment] = []
    for node in cache.list("Node"):
        entry = csinode_driver(cache, node.name, driver)
        if entry is None or (keys is not None and sorted(entry.get("topologyKeys") or [])
                             != sorted(keys)):
            continue
        segment = node_topology(cache, driver, node)
        if segment:
            out.append(segment)
    return out


def _unique_sorted(segments: list[Segment]) -> list[Segment]:
    seen = {tuple(sorted(s.items())): s for s in segments}
    return [seen[k] for k in sorted(seen)]


def _rotate(segments: list[Segment], first: int) -> list[Segment]:
    return segments[first:] + segments[:first]


def accessibility_requirements(
    cache: SharedCache, driver: str, pvc: Resource, storage_class: Resource,
    selected_node: Resource | None, *, strict_topology: bool = False,
) -> csi_pb2.TopologyRequirement | None:
    """external-provisioner's GenerateAccessibilityRequirements: requisite from the class's
    allowedTopologies or from every node of the driver; preferred is requisite sorted and
    rotated so that the selected node's segment comes first (without a selected node, by a
    hash of the claim name)."""
    selected: Segment | None = None
    if selected_node is not None:
        selected = node_topology(cache, driver, selected_node)
        if selected is None:
            raise ProvisioningError(
                f"topology labels from selected node {selected_node.name!r} do not match the "
                f"topology keys of driver {driver!r} in its CSINode")
    allowed = storage_class.body.get("allowedTopologies") or []
    if selected is not None and strict_topology:
        requisite = [selected]
    elif allowed:
        requisite = _unique_sorted(_allowed_segments(allowed))
    else:
        keys = list(selected) if selected is not None else None
        requisite = _unique_sorted(_cluster_segments(cache, driver, keys))
    if not requisite:
        return None
    if selected is not None and selected in requisite:
        preferred = _rotate(requisite, requisite.index(selected))
    else:
        digest = int(hashlib.sha256(pvc.name.encode()).hexdigest(), 16)
        preferred = _rotate(requisite, digest % len(requisite))
    requirement = csi_pb2.TopologyRequirement()
    for segment in requisite:
        requirement.requisite.add().segments.update(segment)
    for segment in preferred:
        requirement.preferred.add().segments.update(segment)
    return requirement


def node_affinity(topologies: list[Mapping[str, str]]) -> JSON | None:
    """A PV nodeAffinity from accessible_topology: one term per segment (ORed), each key an
    ``In`` expression (ANDed)."""
    terms = [{"matchExpressions": [{"key": k, "operator": "In", "values": [v]}
                                   for k, v in sorted(seg.items())]}
             for seg in topologies if seg]
    return {"required": {"nodeSelectorTerms": terms}} if terms else None


# -- data sources ---------------------------------------------------------------------------


async def content_source(client: KubeClient, driver: str, pvc: Resource,
                         storage_class: Resource) -> csi_pb2.VolumeContentSource | None:
    """The CreateVolume content source for ``spec.dataSource`` (a bound, ready
    VolumeSnapshot of this driver, or a bound claim of the same class to clone)."""
    source = pvc.spec.get("dataSource") or pvc.spec.get("dataSourceRef")
    if not source:
        return None
    kind, name = source.get("kind"), str(source.get("name") or "")
    request = storage_bytes((pvc.spec.get("resources") or {}).get("requests"))
    if kind == "VolumeSnapshot" and source.get("apiGroup") == SNAPSHOT_GROUP:
        return await _snapshot_source(client, driver, pvc, name, request)
    if kind == "PersistentVolumeClaim" and not source.get("apiGroup"):
        return await _clone_source(client, driver, pvc, storage_class, name, request)
    raise ProvisioningError(f"unsupported dataSource {source.get('apiGroup')}/{kind}")


async def _snapshot_source(client: KubeClient, driver: str, pvc: Resource, name: str,
                           request: int) -> csi_pb2.VolumeContentSource:
    prefix = f"error getting handle for DataSource Type VolumeSnapshot by Name {name}"
    snapshot = await get_or_none(client, "VolumeSnapshot", name, pvc.namespace)
    if snapshot is None:
        raise ProvisioningError(f"{prefix}: snapshot {name} not found")
    if snapshot.is_terminating:
        raise ProvisioningError(f"{prefix}: snapshot {name} is being deleted")
    content_name = snapshot.status.get("boundVolumeSnapshotContentName")
    if not content_name:
        raise ProvisioningError(f"{prefix}: snapshot {name} not bound")
    if snapshot.status.get("readyToUse") is not True:
        raise ProvisioningError(f"{prefix}: snapshot {name} is not Ready")
    content = await get_or_none(client, "VolumeSnapshotContent", content_name)
    handle = (content.status.get("snapshotHandle") if content else None)
    if content is None or not handle:
        raise ProvisioningError(f"{prefix}: snapshot content {content_name} has no handle")
    if (content.spec.get("volumeSnapshotRef") or {}).get("uid") != snapshot.metadata.uid:
        raise ProvisioningError(f"{prefix}: snapshot content {content_name} is bound elsewhere")
    if content.spec.get("driver") != driver:
        raise ProvisioningError(f"{prefix}: snapshot belongs to driver "
                                f"{content.spec.get('driver')!r}")
    restore = snapshot.status.get("restoreSize")
    if restore is not None and parse_storage(restore) > request:
        raise ProvisioningError(f"requested volume size {request} is less than the size "
                                f"{parse_storage(restore)} for the source snapshot {name}")
    out = csi_pb2.VolumeContentSource()
    out.snapshot.snapshot_id = str(handle)
    return out


async def _clone_source(client: KubeClient, driver: str, pvc: Resource,
                        storage_class: Resource, name: str,
                        request: int) -> csi_pb2.VolumeContentSource:
    source = await get_or_none(client, "PersistentVolumeClaim", name, pvc.namespace)
    if source is None:
        raise ProvisioningError(f"error getting PVC {name} from namespace {pvc.namespace}")
    if source.status.get("phase") != "Bound" or not source.spec.get("volumeName"):
        raise ProvisioningError(f"the PVC {name} not yet bound to a PV")
    if source.spec.get("storageClassName") != storage_class.name:
        raise ProvisioningError("the source PVC and destination PVCs must be in the same "
                                "storage class for cloning")
    if storage_bytes(source.status.get("capacity")) > request:
        raise ProvisioningError("error, new PVC request must be greater than or equal in "
                                "size to the specified PVC data source")
    pv = await client.get("PersistentVolume", str(source.spec["volumeName"]))
    csi = pv.spec.get("csi") or {}
    if csi.get("driver") != driver:
        raise ProvisioningError(f"the source PVC {name} is not provisioned by {driver}")
    out = csi_pb2.VolumeContentSource()
    out.volume.volume_id = str(csi["volumeHandle"])
    return out


# -- the PersistentVolume -------------------------------------------------------------------


@dataclass(frozen=True)
class ProvisionedVolume:
    pv_name: str
    driver: str
    fs_type: str
    identity: str
    secret_refs: Mapping[str, JSON]  # PV csi field -> SecretReference
    deletion_secret: JSON | None
    modify_secret: JSON | None = None  # for the resizer's ControllerModifyVolume
    attributes_class: str = ""  # the claim's VolumeAttributesClass


def persistent_volume(spec: ProvisionedVolume, pvc: Resource, storage_class: Resource,
                      volume: csi_pb2.Volume, requested: int) -> Resource:
    """The PV external-provisioner creates for ``volume``."""
    capacity = volume.capacity_bytes or requested
    csi: JSON = {"driver": spec.driver, "volumeHandle": volume.volume_id,
                 "volumeAttributes": {**dict(volume.volume_context),
                                      PROVISIONER_IDENTITY_KEY: spec.identity}}
    block = pvc.spec.get("volumeMode") == "Block"
    if spec.fs_type and not block:
        csi["fsType"] = spec.fs_type
    csi.update({field: dict(ref) for field, ref in spec.secret_refs.items()})
    pv_spec: JSON = {
        "accessModes": list(pvc.spec.get("accessModes") or []),
        "capacity": {"storage": bytes_quantity(capacity)},
        "claimRef": claim_ref(pvc),
        "persistentVolumeReclaimPolicy": storage_class.body.get("reclaimPolicy") or "Delete",
        "storageClassName": storage_class.name,
        "volumeMode": pvc.spec.get("volumeMode") or "Filesystem",
        "csi": csi,
    }
    if storage_class.body.get("mountOptions"):
        pv_spec["mountOptions"] = list(storage_class.body["mountOptions"])
    if spec.attributes_class:
        pv_spec["volumeAttributesClassName"] = spec.attributes_class
    affinity = node_affinity([dict(t.segments) for t in volume.accessible_topology])
    if affinity:
        pv_spec["nodeAffinity"] = affinity
    annotations = {ANN_PROVISIONED_BY: spec.driver}
    if spec.deletion_secret:
        annotations[ANN_DELETION_SECRET_NAME] = str(spec.deletion_secret["name"])
        annotations[ANN_DELETION_SECRET_NAMESPACE] = str(spec.deletion_secret["namespace"])
    if spec.modify_secret:
        annotations[ANN_MODIFY_SECRET_NAME] = str(spec.modify_secret["name"])
        annotations[ANN_MODIFY_SECRET_NAMESPACE] = str(spec.modify_secret["namespace"])
    return new("PersistentVolume", spec.pv_name, spec=pv_spec, annotations=annotations,
               finalizers=[PROVISIONER_FINALIZER])
