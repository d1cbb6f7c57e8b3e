"""Inline (CSI ephemeral) volumes: made by the first NodePublishVolume that names them,
removed with their last publish; never staged, never attached."""

from __future__ import annotations

import time

from csi_driver.config import Config
from csi_driver.errors import AlreadyExists, FailedPrecondition, ResourceExhausted
from csi_driver.state.records import Volume
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData

EPHEMERAL_CONTEXT_KEY = "csi.storage.k8s.io/ephemeral"
EPHEMERAL_PARAMETER = "csi-mini.example.com/ephemeral"
EPHEMERAL_SIZE = 100 << 20


def is_ephemeral(volume: Volume) -> bool:
    return volume.parameters.get(EPHEMERAL_PARAMETER) == "true"


def require_ephemeral(volume: Volume) -> Volume:
    if not is_ephemeral(volume):
        raise FailedPrecondition(
            f"volume {volume.volume_id!r} is a provisioned volume: it is staged and "
            "published, never used as an inline ephemeral volume"
        )
    return volume


class EphemeralVolumes:
    def __init__(self, cfg: Config, store: Store, data: VolumeData) -> None:
        self.cfg = cfg
        self.store = store
        self.data = data

    def get_or_create(self, volume_id: str) -> tuple[Volume, bool]:
        """The inline volume behind ``volume_id`` and whether this call made it; created
        on first publish (like the reference driver: a 100 MiB filesystem volume in the
        default pool).  An id that names a provisioned volume → FAILED_PRECONDITION: an
        ephemeral publish never bypasses stage and attach."""
        existing = self.store.get_volume(volume_id)
        if existing is not None:
            return require_ephemeral(existing), False
        pool = self.cfg.default_pool
        volume = Volume(
            volume_id=volume_id, name=f"ephemeral-{volume_id}", capacity_bytes=EPHEMERAL_SIZE,
            pool=pool, access_type="mount", parameters={EPHEMERAL_PARAMETER: "true"},
            mutable_parameters={}, accessible_topology=[], source_type="", source_id="",
            request_fingerprint="", created_at=time.time(),
        )
        self.data.create_volume(volume_id, "mount", EPHEMERAL_SIZE, directory=True)
        try:
            with self.store.transaction():
                if self.store.pool_used(pool) + EPHEMERAL_SIZE > self.cfg.pools[pool]:
                    raise ResourceExhausted(f"capacity pool {pool!r} is full")
                inserted = self.store.insert_volume(volume)
        except BaseException:
            self.data.delete_volume(volume_id, "mount")
            raise
        if inserted:
            return volume, True
        found = self.store.get_volume(volume_id)  # another process made it meanwhile
        if found is None:
            self.data.delete_volume(volume_id, "mount")
            raise AlreadyExists(f"volume name {volume.name!r} is taken")
        return require_ephemeral(found), False

    def drop_if_unused(self, volume: Volume) -> None:
        """Undo an ephemeral volume this publish created, when the publish failed."""
        with self.store.transaction():
            if self.store.publishes_of_volume(volume.volume_id):
                return
            self.store.delete_volume(volume)
            self.store.after_commit(lambda: self.data.delete_volume(volume.volume_id, "mount"))

