"""Helpers the controllers share: names and annotations Kubernetes
uses, quantities, node IDs and topology, and the VolumeCapability of a PersistentVolume."""

from __future__ import annotations

import json
from collections.abc import Callable

from csi_protos import csi_pb2
from kubelet_sim.api.model import JSON, Resource
from kubelet_sim.api.quantity import parse_storage
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.csi.client import CsiClient
from kubelet_sim.csi.volume_spec import csi_access_mode

# Annotations and finalizers, spelled as Kubernetes spells them.
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_STORAGE_RESIZER = "volume.kubernetes.io/storage-resizer"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_NODE_ID = "csi.volume.kubernetes.io/nodeid"
PROVISIONER_FINALIZER = "external-provisioner.volume.kubernetes.io/finalizer"

Mutation = Callable[[Resource], bool]


def status_replacing_error(status: JSON) -> Mutation:
    """A status mutation that merges ``status`` in and drops a stale ``error`` (the
    snapshot controllers clear the error once a call succeeds)."""
    def mutate(obj: Resource) -> bool:
        merged = {**{k: v for k, v in obj.status.items() if k != "error"}, **status}
        if merged == obj.status:
            return False
        obj.status = merged
        return True
    return mutate


def storage_bytes(resources: JSON | None) -> int:
    """``resources['storage']`` in bytes (0 when absent)."""
    value = (resources or {}).get("storage")
    return parse_storage(value) if value is not None else 0


def pvc_request_bytes(pvc: Resource) -> int:
    return storage_bytes((pvc.spec.get("resources") or {}).get("requests"))


def unique_volume_name(driver: str, volume_handle: str) -> str:
    """The attach/detach controller's name for a CSI volume in node status."""
    return f"kubernetes.io/csi/{driver}^{volume_handle}"


def set_annotation(obj: Resource, key: str, value: str) -> bool:
    if obj.metadata.annotations.get(key) == value:
        return False
    obj.metadata.annotations[key] = value
    return True


def add_finalizer(obj: Resource, finalizer: str) -> bool:
    if finalizer in obj.metadata.finalizers:
        return False
    obj.metadata.finalizers.append(finalizer)
    return True


def remove_finalizer(obj: Resource, finalizer: str) -> bool:
    if finalizer not in obj.metadata.finalizers:
        return False
    obj.metadata.finalizers = [f for f in obj.metadata.finalizers if f != finalizer]
    return True


def node_is_ready(node: Resource) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.status.get("conditions") or [])


# -- CSI facts read from CSINode and Node -------------------------------------------------


def csinode_driver(cache: SharedCache, node_name: str, driver: str) -> JSON | None:
    csinode = cache.get("CSINode", node_name)
    if csinode is None:
        return None
    return next((d for d in csinode.spec.get("drivers") or [] if d.get("name") == driver), None)


def node_id_for(cache: SharedCache, driver: str, node_name: str) -> str:
    """The driver's node ID on ``node_name``: CSINode first, then the node annotation
    ``csi.volume.kubernetes.io/nodeid`` (as external-attacher looks it up)."""
    entry = csinode_driver(cache, node_name, driver)
    if entry and entry.get("nodeID"):
        return str(entry["nodeID"])
    node = cache.get("Node", node_name)
    if node is not None:
        raw = node.metadata.annotations.get(ANN_NODE_ID)
        if raw:
            ids = json.loads(raw)
            if isinstance(ids, dict) and ids.get(driver):
                return str(ids[driver])
    raise LookupError(f"node {node_name!r} has no node ID for driver {driver!r} yet")


def node_topology(cache: SharedCache, driver: str, node: Resource) -> dict[str, str] | None:
    """The node's topology segment for ``driver``: its CSINode topologyKeys with the node's
    label values. None when the driver is not registered on the node or a label is missing."""
    entry = csinode_driver(cache, node.name, driver)
    if entry is None:
        return None
    keys = entry.get("topologyKeys") or []
    if any(k not in node.labels for k in keys):
        return None
    return {k: node.labels[k] for k in keys}


def csi_driver_attach_required(cache: SharedCache, driver: str) -> bool:
    """No CSIDriver object means attach is required, as the kubelet's CSI plugin decides."""
    obj = cache.get("CSIDriver", driver)
    return True if obj is None else obj.spec.get("attachRequired", True) is not False


# -- VolumeCapability from a PV (external-attacher / external-resizer) ---------------------


def csi_access_mode_of_set(modes: list[str], *, single_node_multi_writer: bool) -> int:
    """csi-lib-utils' ToCSIAccessMode: a PV's set of access modes as ONE CSI mode
    (ReadWriteOncePod alone; ReadWriteMany wins; ReadOnlyMany with ReadWriteOnce is
    impossible in CSI). Raises ValueError for the combinations it refuses."""
    unique = set(modes)
    if "ReadWriteOncePod" in unique:
        if len(unique) > 1:
            raise ValueError("Kubernetes does not support use of ReadWriteOncePod with other "
                             "access modes on the same PersistentVolume")
        mode = "ReadWriteOncePod"
    elif "ReadWriteMany" in unique:
        mode = "ReadWriteMany"
    elif {"ReadOnlyMany", "ReadWriteOnce"} <= unique:
        raise ValueError("CSI does not support ReadOnlyMany and ReadWriteOnce on the same "
                         "PersistentVolume")
    elif unique in ({"ReadOnlyMany"}, {"ReadWriteOnce"}):
        mode = next(iter(unique))
    else:
        raise ValueError(f"unsupported AccessMode combination: {sorted(unique)}")
    return int(csi_access_mode(mode, single_node_multi_writer=single_node_multi_writer))


def pv_volume_capability(
    pv: Resource, *, single_node_multi_writer: bool,
) -> csi_pb2.VolumeCapability:
    """The capability external-attacher and -resizer send for a PV: its access modes as one
    CSI mode, block for ``volumeMode: Block``, else a mount with the PV's fsType and
    mountOptions."""
    mode = csi_access_mode_of_set(list(pv.spec.get("accessModes") or []),
                                  single_node_multi_writer=single_node_multi_writer)
    capability = csi_pb2.VolumeCapability(
        access_mode=csi_pb2.VolumeCapability.AccessMode(mode=mode))  # type: ignore[arg-type]
    if pv.spec.get("volumeMode") == "Block":
        capability.block.SetInParent()
    else:
        capability.mount.fs_type = str((pv.spec.get("csi") or {}).get("fsType") or "")
        capability.mount.mount_flags.extend(pv.spec.get("mountOptions") or [])
    return capability


def controller_capabilities(
    response: csi_pb2.ControllerGetCapabilitiesResponse,
) -> frozenset[int]:
    return frozenset(c.rpc.type for c in response.capabilities if c.HasField("rpc"))


class CachedControllerCapabilities:
    """ControllerGetCapabilities asked once per sidecar, as the sidecars do at start."""

    def __init__(self, csi: CsiClient) -> None:
        self._csi = csi
        self._rpcs: frozenset[int] | None = None

    async def get(self) -> frozenset[int]:
        if self._rpcs is None:
            self._rpcs = controller_capabilities(await self._csi.call(
                csi_pb2.ControllerGetCapabilitiesRequest(),
                csi_pb2.ControllerGetCapabilitiesResponse))
        return self._rpcs


CtrlRpc = csi_pb2.ControllerServiceCapability.RPC
