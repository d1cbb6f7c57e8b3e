"""external-snapshotter's sidecar (``csi-snapshotter``) for one driver: the CSI side of the
VolumeSnapshotContents whose ``spec.driver`` is the driver.

- Dynamic content (``source.volumeHandle``): CreateSnapshot named ``snapshot-<VolumeSnapshot
  UID>`` with the class's parameters minus ``csi.storage.k8s.io/snapshotter-secret-*`` (any
  other key with that prefix is refused) and the snapshotter secrets; called again while
  the snapshot is not ready to use (CreateSnapshot is idempotent).
- Pre-provisioned content (``source.snapshotHandle``): ListSnapshots with that
  ``snapshot_id``.
- The content's status: ``snapshotHandle``, ``readyToUse``, ``restoreSize`` (bytes) and
  ``creationTime`` (Unix nanoseconds), or ``error``.
- A content being deleted with policy Delete: DeleteSnapshot, then its finalizer goes.
"""

from __future__ import annotations

import contextlib

from csi_protos import csi_pb2
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import JSON, Resource, format_time
from kubelet_sim.client.writes import drop_finalizer, get_or_none, write_status
from kubelet_sim.controllers.common import (
    status_replacing_error,
)
from kubelet_sim.controllers.snapshot_controller import (
    ANN_DELETION_SECRET_NAME,
    ANN_DELETION_SECRET_NAMESPACE,
    FIN_CONTENT,
    SNAPSHOTTER_SECRET_NAME,
    SNAPSHOTTER_SECRET_NAMESPACE,
)
from kubelet_sim.csi.client import CsiError
from kubelet_sim.sidecars.base import CsiSidecar
from kubelet_sim.sidecars.secrets import PREFIX, ParameterError, strip_prefixed_parameters

COMPONENT = "csi-snapshotter"
SNAPSHOT_NAME_PREFIX = "snapshot"
SNAPSHOTTER_KEYS = frozenset({
    SNAPSHOTTER_SECRET_NAME, SNAPSHOTTER_SECRET_NAMESPACE,
    PREFIX + "snapshotter-list-secret-name", PREFIX + "snapshotter-list-secret-namespace",
})


class CsiSnapshotter(CsiSidecar):
    name = COMPONENT
    kinds = ("VolumeSnapshotContent", "VolumeSnapshotClass")
    timeout = 60.0

    async def reconcile(self) -> bool:
        return await self.sync_owned(
            "VolumeSnapshotContent", "driver", lambda c: c.status.get("readyToUse") is True,
            self._create_or_check, self._delete)

    async def _create_or_check(self, content: Resource) -> bool:
        source = content.spec.get("source") or {}
        try:
            if source.get("snapshotHandle"):
                snapshot = await self._list_one(str(source["snapshotHandle"]))
            else:
                snapshot = await self._create(content, str(source.get("volumeHandle")))
        except (CsiError, ParameterError, LookupError) as err:
            await self._save_error(content, str(err))
            raise
        status: JSON = {
            "snapshotHandle": snapshot.snapshot_id,
            "readyToUse": snapshot.ready_to_use,
            "restoreSize": snapshot.size_bytes,
            "creationTime": snapshot.creation_time.seconds * 1_000_000_000
            + snapshot.creation_time.nanos,
        }
        return await write_status(self.client, "VolumeSnapshotContent", content.name, "",
                                  status_replacing_error(status)) is not None

    async def _create(self, content: Resource, volume_handle: str) -> csi_pb2.Snapshot:
        ref = content.spec.get("volumeSnapshotRef") or {}
        class_name = content.spec.get("volumeSnapshotClassName")
        snapshot_class = await get_or_none(self.client, "VolumeSnapshotClass", str(class_name)) \
            if class_name else None
        raw = dict((snapshot_class.body.get("parameters") if snapshot_class else None) or {})
        secret_ref = None
        if raw.get(SNAPSHOTTER_SECRET_NAME):
            secret_ref = {"name": raw[SNAPSHOTTER_SECRET_NAME],
                          "namespace": raw.get(SNAPSHOTTER_SECRET_NAMESPACE, "")}
        response = await self.csi.call(csi_pb2.CreateSnapshotRequest(
            name=f"{SNAPSHOT_NAME_PREFIX}-{ref.get('uid')}", source_volume_id=volume_handle,
            parameters=strip_prefixed_parameters(raw, SNAPSHOTTER_KEYS),
            secrets=await self.secrets.get(secret_ref)), csi_pb2.CreateSnapshotResponse)
        return response.snapshot

    async def _list_one(self, handle: str) -> csi_pb2.Snapshot:
        response = await self.csi.call(csi_pb2.ListSnapshotsRequest(
            snapshot_id=handle), csi_pb2.ListSnapshotsResponse)
        for entry in response.entries:
            if entry.snapshot.snapshot_id == handle:
                return entry.snapshot
        raise LookupError(f"could not find snapshot {handle}")

    async def _delete(self, content: Resource) -> bool:
        if FIN_CONTENT not in content.metadata.finalizers:
            return False
        handle = content.status.get("snapshotHandle") or (
            content.spec.get("source") or {}).get("snapshotHandle")
        if content.spec.get("deletionPolicy") == "Delete" and handle:
            ann = content.metadata.annotations
            ref = ({"name": ann[ANN_DELETION_SECRET_NAME],
                    "namespace": ann.get(ANN_DELETION_SECRET_NAMESPACE, "")}
                   if ann.get(ANN_DELETION_SECRET_NAME) else None)
            try:
                await self.csi.call(csi_pb2.DeleteSnapshotRequest(
                    snapshot_id=str(handle), secrets=await self.secrets.get(ref)),
                    csi_pb2.DeleteSnapshotResponse)
            except (CsiError, LookupError) as err:
                await self._save_error(content, str(err))
                raise
        return await drop_finalizer(self.client, "VolumeSnapshotContent", content.name, "",
                                    FIN_CONTENT)

    async def _save_error(self, content: Resource, message: str) -> None:
        error = {"message": message, "time": format_time(self.clock.now())}

        def mutate(obj: Resource) -> bool:
            if (obj.status.get("error") or {}).get("message") == message:
                return False
            obj.status["error"] = error
            return True

        with contextlib.suppress(NotFound):
            await write_status(self.client, "VolumeSnapshotContent", content.name, "", mutate)
