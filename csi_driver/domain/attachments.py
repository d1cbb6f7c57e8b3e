"""ControllerPublishVolume / ControllerUnpublishVolume rules (pure domain)."""

from __future__ import annotations

from csi_driver.config import Config
from csi_driver.domain import access_modes
from csi_driver.domain.access_modes import AccessMode
from csi_driver.domain.topology import accessible_from
from csi_driver.errors import (
    AlreadyExists,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    ResourceExhausted,
)
from csi_driver.state.records import Attachment, VolumeCapability
from csi_driver.state.store import Store


class Attachments:
    def __init__(self, cfg: Config, store: Store) -> None:
        self.cfg = cfg
        self.store = store

    def publish(
        self, volume_id: str, node_id: str, cap: VolumeCapability, readonly: bool
    ) -> dict[str, str]:
        """Already attached to this node with the same capability and readonly → OK.
        Same node but different capability/readonly → ALREADY_EXISTS.  A single-node
        volume attached elsewhere → FAILED_PRECONDITION.  Node at its attach limit →
        RESOURCE_EXHAUSTED.  Unknown volume or node → NOT_FOUND."""
        access_modes.require_supported(cap, self.cfg.single_node_multi_writer)
        access_modes.require_readonly_when_reader_only(cap, readonly)
        with self.store.transaction():
            volume = self.store.get_volume(volume_id)
            if volume is None:
                raise NotFound(f"volume {volume_id!r} does not exist")
            node = self.store.get_node(node_id)
            if node is None:
                raise NotFound(f"node {node_id!r} is not registered")
            if cap.access_type != volume.access_type:
                raise InvalidArgument(
                    f"volume is a {volume.access_type} volume, not {cap.access_type}"
                )
            existing = self.store.get_attachment(volume_id, node_id)
            if existing is not None:
                if existing.readonly == readonly and existing.capability == cap:
                    return self.publish_context(node_id)
                raise AlreadyExists(
                    f"volume {volume_id!r} is attached to {node_id!r} with another "
                    "capability or readonly flag"
                )
            others = [a for a in self.store.attachments_of_volume(volume_id)
                      if a.node_id != node_id]
            self._check_sharing(cap, readonly, others)
            if self.cfg.topology and not accessible_from(volume.accessible_topology, node):
                raise FailedPrecondition(
                    f"volume {volume_id!r} is not accessible from node {node_id!r}"
                )
            if node.max_volumes and self.store.count_attachments_on_node(node_id) >= \
                    node.max_volumes:
                raise ResourceExhausted(
                    f"node {node_id!r} already has its maximum of {node.max_volumes} volumes"
                )
            self.store.insert_attachment(Attachment(volume_id, node_id, readonly, cap))
        return self.publish_context(node_id)

    @staticmethod
    def publish_context(node_id: str) -> dict[str, str]:
        return {"attachedNode": node_id}

    @staticmethod
    def _check_sharing(
        cap: VolumeCapability, readonly: bool, others: list[Attachment]
    ) -> None:
        if not others:
            return
        if access_modes.is_single_node(cap.access_mode) or any(
            access_modes.is_single_node(a.capability.access_mode) for a in others
        ):
            raise FailedPrecondition(
                "single-node volume is already published to node " + others[0].node_id
            )
        if cap.access_mode == AccessMode.MULTI_NODE_SINGLE_WRITER and not readonly and any(
            not a.readonly for a in others
        ):
            raise FailedPrecondition("volume already has a writer on another node")

    def unpublish(self, volume_id: str, node_id: str) -> None:
        """Not attached (or unknown volume/node) → OK.  Empty node_id detaches from all."""
        with self.store.transaction():
            if node_id:
                self.store.delete_attachment(volume_id, node_id)
            else:
                for a in self.store.attachments_of_volume(volume_id):
                    self.store.delete_attachment(volume_id, a.node_id)
