"""The VolumeBinding filter's storage capacity check (KEP 1472), for a claim the scheduler
would have provisioned: unbound, of a WaitForFirstConsumer class, with no Available volume
that could be bound to it on the node.

The check applies only when the class's provisioner has a CSIDriver object with
``storageCapacity: true`` and the claim requests storage. Then the node fits when some
CSIStorageCapacity (in any namespace) names the class, has a ``nodeTopology`` selecting the
node's labels (an object without one selects no node) and a limit of at least the request:
``maximumVolumeSize`` when set, else ``capacity`` (an object without either has no room).
Otherwise the node is filtered with :data:`NOT_ENOUGH_SPACE`.
"""

from __future__ import annotations

from kubelet_sim.api.errors import Invalid
from kubelet_sim.api.model import Resource
from kubelet_sim.api.quantity import QuantityError, parse_storage
from kubelet_sim.api.selectors import LabelSelector
from kubelet_sim.controllers.binder import claim_class, volume_admits_node
from kubelet_sim.controllers.common import storage_bytes
from kubelet_sim.controllers.scheduler_cache import Snapshot

NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"


def has_enough_capacity(snapshot: Snapshot, claim: Resource, sc: Resource,
                        node: Resource) -> bool:
    request = ((claim.spec.get("resources") or {}).get("requests") or {}).get("storage")
    if request is None:
        return True
    driver = snapshot.drivers.get(str(sc.body.get("provisioner") or ""))
    if driver is None or driver.spec.get("storageCapacity") is not True:
        return True
    if _static_volume_fits(snapshot, claim, node):
        return True
    size = parse_storage(request)
    return any(c.body.get("storageClassName") == sc.name and _limit(c) >= size
               and _selects(c, node) for c in snapshot.capacities)


def _limit(capacity: Resource) -> int:
    """maximumVolumeSize when set (the more precise), else capacity; -1: no room at all
    (not even for a claim of zero bytes)."""
    value = capacity.body.get("maximumVolumeSize")
    if value is None:
        value = capacity.body.get("capacity")
    try:
        return parse_storage(value) if value is not None else -1
    except QuantityError:
        return -1


def _selects(capacity: Resource, node: Resource) -> bool:
    try:
        selector = LabelSelector.from_dict(capacity.body.get("nodeTopology"), "nodeTopology")
    except Invalid:  # an unusable selector selects nothing
        return False
    return selector.matches(node.labels)


def _static_volume_fits(snapshot: Snapshot, claim: Resource, node: Resource) -> bool:
    """An Available volume of the claim's class, size, access modes and volume mode that
    the node can reach: the claim would be bound to it, not provisioned."""
    request = storage_bytes((claim.spec.get("resources") or {}).get("requests"))
    modes = set(claim.spec.get("accessModes") or [])
    mode = claim.spec.get("volumeMode", "Filesystem")
    for pv in snapshot.volumes.values():
        if pv.spec.get("claimRef") or pv.is_terminating \
                or pv.status.get("phase") not in (None, "Available", "Pending"):
            continue
        if (str(pv.spec.get("storageClassName") or "") == claim_class(claim)
                and modes <= set(pv.spec.get("accessModes") or [])
                and pv.spec.get("volumeMode", "Filesystem") == mode
                and storage_bytes(pv.spec.get("capacity")) >= request
                and volume_admits_node(pv, node)):
            return True
    return False
