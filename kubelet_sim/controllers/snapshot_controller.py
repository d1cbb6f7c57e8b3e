"""external-snapshotter's common controller (``snapshot-controller``): VolumeSnapshot ↔
VolumeSnapshotContent binding; it makes no CSI calls (the sidecar does, see
:mod:`kubelet_sim.sidecars.snapshotter`).

- Dynamic: a VolumeSnapshot of a bound claim gets the content ``snapcontent-<snapshot UID>``
  (source ``volumeHandle`` of the claim's PV, the class's driver and deletionPolicy, a
  ``volumeSnapshotRef`` with the snapshot's UID); the class is the named one or the
  driver's default class. The claim carries ``pvc-as-source-protection`` until the snapshot
  is ready.
- Pre-provisioned: a VolumeSnapshot naming a content binds to it when the content's
  ``volumeSnapshotRef`` names the snapshot (its UID is filled in).
- A content with policy Delete carries ``volumesnapshotcontent-bound-protection`` until the
  sidecar has deleted the CSI snapshot.
- Status: ``boundVolumeSnapshotContentName``, and from the content ``readyToUse``,
  ``restoreSize`` (a quantity), ``creationTime`` (RFC 3339) and ``error``.
- Delete: a deleted snapshot marks its content ``volumesnapshot-being-deleted`` and deletes
  it when the policy is Delete (the sidecar then calls DeleteSnapshot); its finalizers go
  once the content is gone, or at once for Retain.
"""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

from kubelet_sim.api.errors import AlreadyExists, NotFound
from kubelet_sim.api.model import JSON, Resource, format_time, new
from kubelet_sim.api.quantity import bytes_quantity
from kubelet_sim.client.writes import drop_finalizer, get_or_none, write_object, write_status
from kubelet_sim.controllers.base import Controller
from kubelet_sim.controllers.common import (
    add_finalizer,
    remove_finalizer,
    set_annotation,
    status_replacing_error,
)

GROUP = "snapshot.storage.k8s.io"
FIN_AS_SOURCE = "snapshot.storage.kubernetes.io/volumesnapshot-as-source-protection"
FIN_BOUND = "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection"
FIN_CONTENT = "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection"
FIN_PVC_SOURCE = "snapshot.storage.kubernetes.io/pvc-as-source-protection"
ANN_BEING_DELETED = "snapshot.storage.kubernetes.io/volumesnapshot-being-deleted"
ANN_DEFAULT_CLASS = "snapshot.storage.kubernetes.io/is-default-class"
ANN_DELETION_SECRET_NAME = "snapshot.storage.kubernetes.io/deletion-secret-name"
ANN_DELETION_SECRET_NAMESPACE = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
SNAPSHOTTER_SECRET_NAME = "csi.storage.k8s.io/snapshotter-secret-name"
SNAPSHOTTER_SECRET_NAMESPACE = "csi.storage.k8s.io/snapshotter-secret-namespace"


def content_name_for(snapshot: Resource) -> str:
    return f"snapcontent-{snapshot.metadata.uid}"


class SnapshotController(Controller):
    name = "snapshot-controller"
    kinds = ("VolumeSnapshot", "VolumeSnapshotContent", "VolumeSnapshotClass",
             "PersistentVolumeClaim")

    async def reconcile(self) -> bool:
        changed = False
        for vs in (await self.client.list("VolumeSnapshot")).items:
            key = f"vs/{vs.namespace}/{vs.name}"
            action = self._delete if vs.is_terminating else self._sync
            changed = await self.step(key, action, vs) or changed
        return changed

    # -- binding ----------------------------------------------------------------------------

    async def _sync(self, vs: Resource) -> bool:
        source = vs.spec.get("source") or {}
        if source.get("volumeSnapshotContentName"):
            content = await self._bind_preprovisioned(vs, str(source["volumeSnapshotContentName"]))
        else:
            content = await self._dynamic_content(vs)
        if content is None:
            return False
        changed = await write_object(self.client, "VolumeSnapshot", vs.name, vs.namespace,
                                     lambda o: add_finalizer(o, FIN_BOUND) | add_finalizer(
                                         o, FIN_AS_SOURCE)) is not None
        changed = await self._mirror_status(vs, content) or changed
        claim = source.get("persistentVolumeClaimName")
        if claim and content.status.get("readyToUse") is True:
            changed = await drop_finalizer(self.client, "PersistentVolumeClaim", str(claim),
                                           vs.namespace, FIN_PVC_SOURCE) or changed
        return changed

    async def _bind_preprovisioned(self, vs: Resource, name: str) -> Resource | None:
        content = await get_or_none(self.client, "VolumeSnapshotContent", name)
        if content is None:
            return None
        ref = content.spec.get("volumeSnapshotRef") or {}
        if (ref.get("name"), ref.get("namespace")) != (vs.name, vs.namespace):
            raise RuntimeError(f"VolumeSnapshotContent {name} is bound to another snapshot")
        if ref.get("uid") and ref["uid"] != vs.metadata.uid:
            raise RuntimeError(f"VolumeSnapshotContent {name} is bound to another snapshot")
        def bind(obj: Resource) -> bool:
            changed = False
            if not ref.get("uid"):
                obj.spec["volumeSnapshotRef"] = {**ref, "uid": vs.metadata.uid}
                changed = True
            if obj.spec.get("deletionPolicy") == "Delete":
                changed = add_finalizer(obj, FIN_CONTENT) or changed
            return changed

        await write_object(self.client, "VolumeSnapshotContent", name, "", bind)
        return await self.client.get("VolumeSnapshotContent", name)

    async def _dynamic_content(self, vs: Resource) -> Resource | None:
        name = content_name_for(vs)
        existing = await get_or_none(self.client, "VolumeSnapshotContent", name)
        if existing is not None:
            return existing
        claim_name = str((vs.spec.get("source") or {}).get("persistentVolumeClaimName"))
        pvc = await get_or_none(self.client, "PersistentVolumeClaim", claim_name, vs.namespace)
        if pvc is None or pvc.status.get("phase") != "Bound":
            raise RuntimeError(f"the PVC {claim_name} is not yet bound to a PV")
        pv = await self.client.get("PersistentVolume", str(pvc.spec["volumeName"]))
        csi = pv.spec.get("csi") or {}
        if not csi:
            raise RuntimeError(f"the PV {pv.name} is not a CSI volume")
        snapshot_class = await self._class_for(vs, str(csi["driver"]))
        await write_object(self.client, "PersistentVolumeClaim", pvc.name, pvc.namespace,
                           lambda o: add_finalizer(o, FIN_PVC_SOURCE))
        params = snapshot_class.body.get("parameters") or {}
        annotations = {}
        if SNAPSHOTTER_SECRET_NAME in params:
            annotations = {ANN_DELETION_SECRET_NAME: params[SNAPSHOTTER_SECRET_NAME],
                           ANN_DELETION_SECRET_NAMESPACE: params.get(
                               SNAPSHOTTER_SECRET_NAMESPACE, "")}
        content = new("VolumeSnapshotContent", name, annotations=annotations, spec={
            "volumeSnapshotRef": {"kind": "VolumeSnapshot", "apiVersion": f"{GROUP}/v1",
                                  "namespace": vs.namespace, "name": vs.name,
                                  "uid": vs.metadata.uid,
                                  "resourceVersion": vs.metadata.resource_version},
            "source": {"volumeHandle": str(csi["volumeHandle"])},
            "volumeSnapshotClassName": snapshot_class.name,
            "driver": str(csi["driver"]),
            "deletionPolicy": snapshot_class.body.get("deletionPolicy", "Delete"),
        })
        if content.spec["deletionPolicy"] == "Delete":
            content.metadata.finalizers.append(FIN_CONTENT)
        with contextlib.suppress(AlreadyExists):
            await self.client.create(content)
            self.event("VolumeSnapshot", vs.namespace, vs.name, "Normal", "CreatingSnapshot",
                       f"Waiting for a snapshot {vs.namespace}/{vs.name} to be created by the "
                       "CSI driver.")
        return await self.client.get("VolumeSnapshotContent", name)

    async def _class_for(self, vs: Resource, driver: str) -> Resource:
        name = vs.spec.get("volumeSnapshotClassName")
        if name:
            return await self.client.get("VolumeSnapshotClass", str(name))
        defaults = [c for c in (await self.client.list("VolumeSnapshotClass")).items
                    if c.body.get("driver") == driver
                    and c.metadata.annotations.get(ANN_DEFAULT_CLASS) == "true"]
        if len(defaults) != 1:
            raise RuntimeError(f"cannot find a single default snapshot class for driver "
                               f"{driver} ({len(defaults)} found)")

        def set_class(obj: Resource) -> bool:
            obj.spec["volumeSnapshotClassName"] = defaults[0].name
            return True
        await write_object(self.client, "VolumeSnapshot", vs.name, vs.namespace, set_class)
        return defaults[0]

    async def _mirror_status(self, vs: Resource, content: Resource) -> bool:
        status: JSON = {"boundVolumeSnapshotContentName": content.name,
                        "readyToUse": content.status.get("readyToUse") is True}
        if content.status.get("restoreSize") is not None:
            status["restoreSize"] = bytes_quantity(int(content.status["restoreSize"]))
        if content.status.get("creationTime") is not None:
            seconds = int(content.status["creationTime"]) / 1e9
            status["creationTime"] = format_time(datetime.fromtimestamp(seconds, UTC))
        if content.status.get("error"):
            status["error"] = dict(content.status["error"])
        written = await write_status(self.client, "VolumeSnapshot", vs.name, vs.namespace,
                                     status_replacing_error(status))
        if written is None:
            return False
        key = f"{vs.namespace}/{vs.name}"
        if "creationTime" in status and "creationTime" not in vs.status:
            self.event("VolumeSnapshot", vs.namespace, vs.name, "Normal", "SnapshotCreated",
                       f"Snapshot {key} was successfully created by the CSI driver.")
        if status["readyToUse"] and vs.status.get("readyToUse") is not True:
            self.event("VolumeSnapshot", vs.namespace, vs.name, "Normal", "SnapshotReady",
                       f"Snapshot {key} is ready to use.")
        return True

    # -- deletion ---------------------------------------------------------------------------

    async def _delete(self, vs: Resource) -> bool:
        name = vs.status.get("boundVolumeSnapshotContentName") or (
            (vs.spec.get("source") or {}).get("volumeSnapshotContentName"))
        content = await get_or_none(self.client, "VolumeSnapshotContent",
                                    str(name)) if name else None
        changed = False
        if content is not None and content.spec.get("deletionPolicy") == "Delete":
            if not content.is_terminating:
                await write_object(self.client, "VolumeSnapshotContent", content.name, "",
                                   lambda o: set_annotation(o, ANN_BEING_DELETED, "yes"))
                with contextlib.suppress(NotFound):
                    await self.client.delete("VolumeSnapshotContent", content.name)
                changed = True
            if await get_or_none(self.client, "VolumeSnapshotContent", content.name) is not None:
                return changed  # wait for the sidecar's DeleteSnapshot
        claim = (vs.spec.get("source") or {}).get("persistentVolumeClaimName")
        if claim:
            await drop_finalizer(self.client, "PersistentVolumeClaim", str(claim), vs.namespace,
                                 FIN_PVC_SOURCE)

        def release(obj: Resource) -> bool:
            return remove_finalizer(obj, FIN_BOUND) | remove_finalizer(obj, FIN_AS_SOURCE)

        try:
            return await write_object(self.client, "VolumeSnapshot", vs.name, vs.namespace,
                                      release) is not None or changed
        except NotFound:
            return changed
