"""Node-side rules: stage, publish, unpublish, unstage, stats and expansion.

Stage is a durable record, plus, for a filesystem volume that is an ext4 image, its
loop mount at the staging path (``staged_images``); publish makes the data (or the
staged filesystem) appear at target_path (``mounter``).  What touches files goes
through those modules, which only ever change what the driver made.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from csi_driver.config import Config
from csi_driver.domain import access_modes
from csi_driver.domain.access_modes import AccessMode
from csi_driver.domain.ephemeral_volumes import (
    EPHEMERAL_CONTEXT_KEY,
    EphemeralVolumes,
    is_ephemeral,
)
from csi_driver.domain.lookup import must_exist
from csi_driver.errors import (
    AlreadyExists,
    CsiError,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OutOfRange,
)
from csi_driver.state import staged_images
from csi_driver.state.mounter import Mounter
from csi_driver.state.records import Node, Publish, Stage, Volume, VolumeCapability
from csi_driver.state.store import Store
from csi_driver.state.volume_data import Usage, VolumeData, is_fs_image

log = logging.getLogger(__name__)
@dataclass(frozen=True)
class VolumeStats:
    access_type: str
    total_bytes: int
    used_bytes: int
    available_bytes: int
    inodes_total: int
    inodes_used: int
    inodes_available: int
    abnormal: bool
    message: str


class NodeVolumes:
    def __init__(self, cfg: Config, store: Store, data: VolumeData, mounter: Mounter) -> None:
        self.cfg = cfg
        self.store = store
        self.data = data
        self.mounter = mounter
        self.node_id = cfg.node_id
        self.ephemeral = EphemeralVolumes(cfg, store, data)

    def register(self) -> Node:
        """Record this node (id, topology, attach limit) in the shared store."""
        node = Node(self.node_id, self.cfg.node_topology, self.cfg.max_volumes_per_node)
        with self.store.transaction():
            self.store.upsert_node(node)
        return node

    def _volume(self, volume_id: str) -> Volume:
        return must_exist(self.store.get_volume(volume_id), "volume", volume_id)

    def _check_capability(self, volume: Volume, cap: VolumeCapability) -> None:
        """Spec (NodeStage/NodePublish): capabilities the volume cannot serve →
        FAILED_PRECONDITION ("Exceeds capabilities")."""
        reason = access_modes.unsupported_reason(cap, self.cfg.single_node_multi_writer)
        if not reason and cap.access_type != volume.access_type:
            reason = f"volume is a {volume.access_type} volume, not {cap.access_type}"
        if reason:
            raise FailedPrecondition(reason)

    # NodeStageVolume / NodeUnstageVolume ---------------------------------------

    def stage(self, volume_id: str, staging_path: str, cap: VolumeCapability) -> None:
        """Already staged at the same path with the same capability → OK; staged with
        another path or capability → ALREADY_EXISTS; unknown volume → NOT_FOUND; not
        attached to this node while the plugin attaches, or an inline ephemeral
        volume → FAILED_PRECONDITION."""
        self._check_allowed(staging_path, "staging_target_path")
        with self.store.transaction():
            volume = self._volume(volume_id)
            if is_ephemeral(volume):
                raise FailedPrecondition(
                    f"volume {volume_id!r} is an inline ephemeral volume: it is never staged"
                )
            self._check_attached(volume)
            self._check_capability(volume, cap)
            existing = self.store.get_stage(volume_id, self.node_id)
            if existing is not None and (existing.staging_path != staging_path
                                         or existing.capability != cap):
                raise AlreadyExists(
                    f"volume {volume_id!r} is staged at {existing.staging_path!r} "
                    "with another path or capability"
                )
        image = self._image(volume)
        if image is not None and not staged_images.is_mounted(image, staging_path):
            staged_images.mount(image, staging_path)  # also after a reboot took the mount
        if existing is not None:
            return
        try:
            with self.store.transaction():
                self.store.insert_stage(Stage(volume_id, self.node_id, staging_path, cap))
        except BaseException:
            if image is not None:
                staged_images.unmount(image, staging_path)
            raise

    def unstage(self, volume_id: str, staging_path: str) -> None:
        """Not staged at staging_path (or not at all) → OK, and a stage elsewhere stays.
        Still published on this node → FAILED_PRECONDITION."""
        existing = self.store.get_stage(volume_id, self.node_id)
        if existing is None or existing.staging_path != staging_path:
            return
        if self.store.publishes_of_volume(volume_id, self.node_id):
            raise FailedPrecondition(f"volume {volume_id!r} is still published on this node")
        volume = self.store.get_volume(volume_id)
        image = self._image(volume) if volume is not None else None
        if image is not None:
            staged_images.unmount(image, staging_path)
        with self.store.transaction():
            self.store.delete_stage(volume_id, self.node_id)

    def _image(self, volume: Volume) -> str | None:
        """The ext4 image of a filesystem volume on the loop backend, else None."""
        if volume.access_type != "mount":
            return None
        path = self.data.volume_path(volume.volume_id, "mount")
        return path if is_fs_image(path) else None

    def _source(self, volume: Volume, staging_path: str) -> str:
        """What a publish shows at the target: the data itself, or for an ext4 image the
        filesystem mounted at the staging path."""
        image = self._image(volume)
        if image is None:
            return self.data.volume_path(volume.volume_id, volume.access_type)
        if not staged_images.is_mounted(image, staging_path):
            raise FailedPrecondition(
                f"volume {volume.volume_id!r} is not mounted at {staging_path!r}: "
                "NodeStageVolume first"
            )
        return staging_path

    # NodePublishVolume / NodeUnpublishVolume -----------------------------------

    def publish(
        self,
        volume_id: str,
        target_path: str,
        staging_path: str,
        cap: VolumeCapability,
        readonly: bool,
        volume_context: dict[str, str] | None = None,
    ) -> None:
        """Same target with the same arguments → OK; same target with others →
        ALREADY_EXISTS; no or wrong staging path → FAILED_PRECONDITION;
        SINGLE_NODE_SINGLE_WRITER at a second target → FAILED_PRECONDITION.
        SINGLE_NODE_WRITER may appear at several targets on this node (as the
        reference driver and Kubernetes do, though the spec's table says otherwise).
        A target that exists and is not an empty directory (empty file for block),
        or is reached through a symlink → FAILED_PRECONDITION, untouched.
        An inline ephemeral volume (volume_context csi.storage.k8s.io/ephemeral=true)
        is created here, needs no stage, and is deleted by its last unpublish; an
        ephemeral publish of a provisioned volume's id → FAILED_PRECONDITION."""
        access_modes.require_readonly_when_reader_only(cap, readonly)
        self._check_allowed(target_path, "target_path")
        ephemeral = (volume_context or {}).get(EPHEMERAL_CONTEXT_KEY) == "true"
        made_here = False
        if ephemeral:
            volume, made_here = self.ephemeral.get_or_create(volume_id)
        else:
            volume = self._volume(volume_id)
        try:
            self._publish(volume, target_path, staging_path, cap, readonly, ephemeral)
        except BaseException:
            if made_here:
                self.ephemeral.drop_if_unused(volume)
            raise

    def _publish(self, volume: Volume, target_path: str, staging_path: str,
                 cap: VolumeCapability, readonly: bool, ephemeral: bool) -> None:
        volume_id = volume.volume_id
        self._check_capability(volume, cap)
        if not ephemeral:
            self._check_staged(volume, staging_path)
        record = Publish(volume_id, self.node_id, target_path, staging_path, readonly, cap,
                         self.mounter.method)
        is_block = volume.access_type == "block"
        source = self._source(volume, staging_path)
        existing = self.store.get_publish(self.node_id, target_path)
        if existing is not None:
            if existing != record:
                raise AlreadyExists(f"target {target_path!r} is published with other arguments")
            if not self.mounter.is_published(source, target_path):  # lost, e.g. unmounted
                created = self.mounter.publish(source, target_path, is_block, readonly)
                if created and not existing.created_target:
                    with self.store.transaction():
                        self.store.insert_publish(replace(existing, created_target=True))
            return
        others = self.store.publishes_of_volume(volume_id, self.node_id)
        if others and AccessMode.SINGLE_NODE_SINGLE_WRITER in (
            cap.access_mode, *(p.capability.access_mode for p in others)
        ):
            raise FailedPrecondition(
                "SINGLE_NODE_SINGLE_WRITER volume is already published at " + others[0].target_path
            )
        created = self.mounter.publish(source, target_path, is_block, readonly)
        try:
            with self.store.transaction():
                self.store.insert_publish(replace(record, created_target=created))
        except BaseException:
            self.mounter.unpublish(source, target_path, is_block, created)
            raise

    def _check_allowed(self, path: str, field: str) -> None:
        """``--allowed-target-root``: publish and stage only below those directories."""
        roots = self.cfg.allowed_target_roots
        if roots and not any(path.startswith(root.rstrip("/") + "/") for root in roots):
            raise InvalidArgument(
                f"{field} {path!r} is outside the allowed target roots ({', '.join(roots)})"
            )

    def _check_staged(self, volume: Volume, staging_path: str) -> None:
        """Publish needs the volume staged here (STAGE_UNSTAGE_VOLUME is advertised) and,
        when the plugin attaches, attached to this node first (as the reference driver)."""
        if not staging_path:
            raise FailedPrecondition("staging_target_path is required: the volume must be staged")
        stage = self.store.get_stage(volume.volume_id, self.node_id)
        if stage is None or stage.staging_path != staging_path:
            self._check_attached(volume)
            raise FailedPrecondition(
                f"volume {volume.volume_id!r} is not staged at {staging_path!r}"
            )

    def _check_attached(self, volume: Volume) -> None:
        if self.cfg.attach_required and \
                self.store.get_attachment(volume.volume_id, self.node_id) is None:
            raise FailedPrecondition(
                f"volume {volume.volume_id!r} is not attached to node {self.node_id!r}: "
                "ControllerPublishVolume comes first"
            )

    def unpublish(self, volume_id: str, target_path: str) -> None:
        """Not published there → OK, nothing touched; published there → unmount, and
        remove target_path if the driver created it."""
        existing = self.store.get_publish(self.node_id, target_path)
        if existing is None:
            return
        if existing.volume_id != volume_id:
            raise NotFound(f"target {target_path!r} holds another volume")
        volume = self.store.get_volume(volume_id)
        access_type = volume.access_type if volume else existing.capability.access_type
        if volume is not None and self._image(volume) is not None:
            source = existing.staging_path
        else:
            source = self.data.volume_path(volume_id, access_type)
        self.mounter.unpublish(source, target_path, access_type == "block",
                               existing.created_target)
        with self.store.transaction():
            self.store.delete_publish(self.node_id, target_path)
            volume = self.store.get_volume(volume_id)
            if volume is not None and is_ephemeral(volume) \
                    and not self.store.publishes_of_volume(volume_id):
                self.store.delete_volume(volume)
                self.store.after_commit(lambda: self.data.delete_volume(volume_id, "mount"))

    def recheck_mounts(self) -> int:
        """After a restart: re-mount every recorded stage of an ext4 image and re-establish
        every recorded publish of this node whose staging or target path is still the
        empty dir (or file) the driver left; drop (and log) the others."""
        redone = 0
        for stage in self.store.stages_on_node(self.node_id):
            volume = self.store.get_volume(stage.volume_id)
            image = self._image(volume) if volume is not None else None
            if image is None or staged_images.is_mounted(image, stage.staging_path):
                continue
            try:
                staged_images.mount(image, stage.staging_path)
                redone += 1
            except (OSError, CsiError) as exc:
                log.warning("dropping the stage of %s at %s: %s",
                            stage.volume_id, stage.staging_path, exc)
                with self.store.transaction():
                    self.store.delete_stage(stage.volume_id, self.node_id)
        for p in self.store.publishes_on_node(self.node_id):
            volume = self.store.get_volume(p.volume_id)
            if volume is None:
                continue
            try:
                source = self._source(volume, p.staging_path)
                redone += self.mounter.restore(source, p.target_path,
                                               volume.access_type == "block", p.readonly)
            except (OSError, CsiError) as exc:
                log.warning("dropping the publish of %s at %s: %s",
                            p.volume_id, p.target_path, exc)
                with self.store.transaction():
                    self.store.delete_publish(self.node_id, p.target_path)
        return redone

    # NodeGetVolumeStats / NodeExpandVolume -------------------------------------

    def _where(self, volume_id: str, path: str) -> Volume:
        """The volume, if it is published or staged at ``path`` on this node, else NOT_FOUND.
        ``path`` is only compared with the records here, never opened, so any string that
        matches none (csi-sanity sends "some/path") is NOT_FOUND."""
        volume = self._volume(volume_id)
        published = self.store.get_publish(self.node_id, path)
        if published is not None and published.volume_id == volume_id:
            return volume
        stage = self.store.get_stage(volume_id, self.node_id)
        if stage is not None and stage.staging_path.rstrip("/") == path.rstrip("/"):
            return volume
        raise NotFound(f"volume {volume_id!r} is not published or staged at {path!r}")

    def stats(self, volume_id: str, volume_path: str) -> VolumeStats:
        """An ext4 image reports its mounted filesystem's own numbers (statvfs).  A
        directory reports what its files take against the volume's capacity, and is
        abnormal when they take more (nothing stops writes past it)."""
        volume = self._where(volume_id, volume_path)
        kind, capacity = volume.access_type, volume.capacity_bytes
        image = self._image(volume)
        stage = self.store.get_stage(volume_id, self.node_id)
        if image is not None and stage is not None and \
                staged_images.is_mounted(image, stage.staging_path):
            total, used, available, inodes, inodes_used, inodes_free = \
                staged_images.usage(stage.staging_path)
            abnormal, message = self._published_condition(volume, volume_path)
            return VolumeStats(kind, total, used, available, inodes, inodes_used, inodes_free,
                               abnormal, message)
        present = self.data.exists(volume_id, kind) and image is None
        usage = self.data.usage(volume_id, kind) if present else Usage(0, 0)
        inodes = max(capacity // 4096, usage.used_inodes)
        abnormal, message = self._published_condition(volume, volume_path)
        if image is not None:
            abnormal, message = True, "the volume's filesystem is not mounted at its staging path"
        elif not present:
            abnormal, message = True, "volume data is missing"
        elif usage.used_bytes > capacity:
            abnormal, message = True, (f"the volume's files take {usage.used_bytes} bytes, "
                                       f"more than its capacity of {capacity}")
        return VolumeStats(kind, capacity, usage.used_bytes, max(0, capacity - usage.used_bytes),
                           inodes, usage.used_inodes, inodes - usage.used_inodes,
                           abnormal, message)

    def _published_condition(self, volume: Volume, volume_path: str) -> tuple[bool, str]:
        """(abnormal, message) for the mount at a publish target."""
        published = self.store.get_publish(self.node_id, volume_path)
        if published is None:
            return False, "healthy"
        try:
            source = self._source(volume, published.staging_path)
        except FailedPrecondition as exc:
            return True, exc.message
        if not self.mounter.is_published(source, volume_path):
            return True, f"volume is not mounted at {volume_path}"
        return False, "healthy"

    def expand(self, volume_id: str, volume_path: str, required_bytes: int,
               cap: VolumeCapability | None = None) -> int:
        """A filesystem volume is a directory that grows with the controller's size, so
        node expansion only confirms it; a request beyond that size is OUT_OF_RANGE.
        A capability the volume cannot serve → INVALID_ARGUMENT.  OFFLINE expansion
        restricts ControllerExpandVolume only: the spec has the volume staged or
        published again before NodeExpandVolume, so a published volume is expected here."""
        volume = self._where(volume_id, volume_path)
        if cap is not None and cap.access_type != volume.access_type:
            raise InvalidArgument(f"volume is a {volume.access_type} volume, not {cap.access_type}")
        if required_bytes > volume.capacity_bytes:
            raise OutOfRange(
                f"volume holds {volume.capacity_bytes} bytes; expand it on the controller first"
            )
        if volume.access_type == "block":
            self.data.resize_volume(volume_id, "block", volume.capacity_bytes)
        image = self._image(volume)
        if image is not None:
            stage = self.store.get_stage(volume_id, self.node_id)
            if stage is None or not staged_images.is_mounted(image, stage.staging_path):
                raise FailedPrecondition(f"volume {volume_id!r} is not staged on this node")
            staged_images.grow(image, stage.staging_path,
                               published=bool(self.store.publishes_of_volume(volume_id,
                                                                             self.node_id)))
        return volume.capacity_bytes
