"""NodeVolumeLimits, the scheduler's CSI volume-limits filter (upstream's CSILimits plugin).

A node does not fit a pod when, for some CSI driver, the volumes already on the node plus the
pod's new volumes of that driver exceed the driver's CSINode ``allocatable.count``:

- volumes are counted by unique name ``<driver>/<volume handle>``, so a volume several pods
  use counts once, and a pod's volume already on the node adds nothing;
- on the node: the claims of every pod bound or assumed there (a claim that no longer
  exists is skipped), and every volume a VolumeAttachment still holds on the node (detach
  may lag behind a deleted pod);
- a bound claim is its PV's ``spec.csi`` driver and handle; an unbound claim is a new volume
  of its StorageClass's provisioner, under a name no real handle takes; a claim of no CSI
  driver (no class, a non-CSI PV) is not counted. Inline CSI volumes are not counted, as
  upstream counts only claims;
- a driver without ``allocatable.count`` has no limit; a count of 0 admits none.
"""

from __future__ import annotations

from collections import Counter

from kubelet_sim.api.model import Resource
from kubelet_sim.controllers.scheduler_cache import Snapshot

EXCEEDED = "node(s) exceed max volume count"
_UNBOUND = "\x00unbound-claim/"  # a NUL never appears in a real volume handle

VolumeSet = dict[str, str]  # unique volume name -> driver


def exceeds_volume_limits(snapshot: Snapshot, pod: Resource, node: str) -> bool:
    new = pod_volumes(snapshot, pod)
    if not new:
        return False
    limits = driver_limits(snapshot, node)
    if not limits:
        return False
    on_node = node_volumes(snapshot, node)
    in_use = Counter(on_node.values())
    adding = Counter(driver for name, driver in new.items() if name not in on_node)
    return any(driver in limits and in_use[driver] + count > limits[driver]
               for driver, count in adding.items())


def driver_limits(snapshot: Snapshot, node: str) -> dict[str, int]:
    """Each driver's ``allocatable.count`` on ``node`` (drivers without one: no limit)."""
    csinode = snapshot.csinodes.get(node)
    drivers = csinode.spec.get("drivers") or [] if csinode is not None else []
    return {str(d.get("name")): int(d["allocatable"]["count"]) for d in drivers
            if (d.get("allocatable") or {}).get("count") is not None}


def node_volumes(snapshot: Snapshot, node: str) -> VolumeSet:
    """The CSI volumes on ``node``: its pods' claims and its VolumeAttachments."""
    out: VolumeSet = {}
    for pod in snapshot.pods_on(node):
        out.update(pod_volumes(snapshot, pod))
    for attachment in snapshot.attachments:
        spec = attachment.spec
        pv = snapshot.volumes.get(str((spec.get("source") or {}).get("persistentVolumeName")))
        csi = (pv.spec.get("csi") or {}) if pv is not None else {}
        if spec.get("nodeName") == node and csi.get("volumeHandle"):
            out[f"{spec.get('attacher')}/{csi['volumeHandle']}"] = str(spec.get("attacher"))
    return out


def pod_volumes(snapshot: Snapshot, pod: Resource) -> VolumeSet:
    """The CSI volumes ``pod``'s claims stand for."""
    out: VolumeSet = {}
    for volume in pod.spec.get("volumes") or []:
        name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        claim = snapshot.claim(pod.namespace, str(name)) if name else None
        counted = claim_volume(snapshot, claim) if claim is not None else None
        if counted is not None:
            out[counted[0]] = counted[1]
    return out


def claim_volume(snapshot: Snapshot, claim: Resource) -> tuple[str, str] | None:
    """(unique volume name, driver) of a claim, or None when no CSI driver stands behind it."""
    pv_name = claim.spec.get("volumeName")
    pv = snapshot.volumes.get(str(pv_name)) if pv_name else None
    if pv is not None:
        csi = pv.spec.get("csi")
        if not csi:
            return None
        return f"{csi.get('driver')}/{csi.get('volumeHandle')}", str(csi.get("driver"))
    sc = snapshot.classes.get(str(claim.spec.get("storageClassName") or ""))
    if sc is None:
        return None
    driver = str(sc.body.get("provisioner"))
    return f"{driver}/{_UNBOUND}{claim.namespace}/{claim.name}", driver
