"""ControllerPublish/Unpublish and DeleteVolume rules beyond csi-sanity (DESIGN.md, CSI).

Reference note: csi-driver-host-path deletes an attached volume with only a warning (or
INTERNAL with -check-volume-lifecycle) and treats snapshots as independent; the spec's
DeleteVolume table says "Volume in use → 9 FAILED_PRECONDITION", which DESIGN.md adopts
for published volumes.  Snapshots here are independent copies too, so a volume with
snapshots is deleted and they stay usable, unless ``--snapshots-block-delete`` (for
backends whose snapshots depend on their volume) answers FAILED_PRECONDITION.
"""

from __future__ import annotations

import grpc

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    AccessMode,
    GiB,
    SanityContext,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    mount_capability,
    unique_string,
)
from tests.fixtures.driver_process import DriverProcess

FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
NOT_FOUND = grpc.StatusCode.NOT_FOUND


def new_volume(ctx: SanityContext, mode: int = AccessMode.SINGLE_NODE_WRITER) -> str:
    req = make_create_volume_req(unique_string("pub"), GiB)
    del req.volume_capabilities[:]
    req.volume_capabilities.append(mount_capability(mode))
    return ctx.resources.must_create_volume(req).volume.volume_id


def still_exists(ctx: SanityContext, volume_id: str) -> None:
    ctx.stubs.controller.ControllerGetVolume(
        csi_pb2.ControllerGetVolumeRequest(volume_id=volume_id)
    )


class TestDeleteVolumeRules:
    def test_delete_of_a_controller_published_volume_fails_precondition(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        res = sanity.resources
        res.controller_publish(res.make_controller_publish_req(vid, "sanity-node"))
        expect_error_code(
            sanity.stubs.controller.DeleteVolume,
            csi_pb2.DeleteVolumeRequest(volume_id=vid),
            FAILED_PRECONDITION,
        )
        still_exists(sanity, vid)

    def test_delete_of_a_volume_with_snapshots_succeeds_and_the_snapshots_stay(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        snap = sanity.resources.must_create_snapshot(
            make_create_snapshot_req(unique_string("s"), vid)
        ).snapshot
        sanity.stubs.controller.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=vid))
        expect_error_code(sanity.stubs.controller.ControllerGetVolume,
                          csi_pb2.ControllerGetVolumeRequest(volume_id=vid), NOT_FOUND)
        kept = sanity.stubs.controller.GetSnapshot(
            csi_pb2.GetSnapshotRequest(snapshot_id=snap.snapshot_id)).snapshot
        assert kept.source_volume_id == vid and kept.ready_to_use
        listed = sanity.stubs.controller.ListSnapshots(
            csi_pb2.ListSnapshotsRequest(source_volume_id=vid)).entries
        assert [e.snapshot.snapshot_id for e in listed] == [snap.snapshot_id]

    def test_with_snapshots_block_delete_a_volume_with_a_snapshot_fails_precondition(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(spawn_driver("--snapshots-block-delete", node_id="sanity-node"))
        vid = new_volume(ctx)
        snap = ctx.resources.must_create_snapshot(
            make_create_snapshot_req(unique_string("s"), vid)
        )
        expect_error_code(
            ctx.stubs.controller.DeleteVolume,
            csi_pb2.DeleteVolumeRequest(volume_id=vid),
            FAILED_PRECONDITION,
        )
        still_exists(ctx, vid)
        ctx.resources.delete_snapshot(snap.snapshot.snapshot_id)
        ctx.resources.delete_volume(vid)

    def test_delete_twice_answers_ok_both_times(self, sanity: SanityContext) -> None:
        vid = new_volume(sanity)
        sanity.resources.delete_volume(vid)
        sanity.resources.delete_volume(vid)

    def test_a_deleted_volume_and_a_deleted_snapshot_are_not_found(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        snap = sanity.resources.must_create_snapshot(
            make_create_snapshot_req(unique_string("s"), vid)
        ).snapshot.snapshot_id
        sanity.resources.delete_snapshot(snap)
        expect_error_code(sanity.stubs.controller.GetSnapshot,
                          csi_pb2.GetSnapshotRequest(snapshot_id=snap), NOT_FOUND)
        sanity.resources.delete_volume(vid)
        expect_error_code(sanity.stubs.controller.ControllerGetVolume,
                          csi_pb2.ControllerGetVolumeRequest(volume_id=vid), NOT_FOUND)


class TestControllerPublishRules:
    def test_compatible_repeat_answers_ok_with_the_same_publish_context(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        res = sanity.resources
        first = res.controller_publish(res.make_controller_publish_req(vid, "sanity-node"))
        second = res.controller_publish(res.make_controller_publish_req(vid, "sanity-node"))
        assert dict(first.publish_context) == dict(second.publish_context)

    def test_same_node_with_a_different_capability_fails_already_exists(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        res = sanity.resources
        res.controller_publish(res.make_controller_publish_req(vid, "sanity-node"))
        other = mount_capability(AccessMode.SINGLE_NODE_READER_ONLY)
        expect_error_code(
            res.controller_publish,
            res.make_controller_publish_req(vid, "sanity-node", other, readonly=True),
            grpc.StatusCode.ALREADY_EXISTS,
        )

    def test_single_node_volume_published_elsewhere_fails_precondition(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(two_nodes[0])
        vid = new_volume(ctx)
        res = ctx.resources
        res.controller_publish(res.make_controller_publish_req(vid, "node-a"))
        expect_error_code(
            res.controller_publish,
            res.make_controller_publish_req(vid, "node-b"),
            FAILED_PRECONDITION,
        )

    def test_multi_node_volume_may_be_published_to_two_nodes(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(two_nodes[0])
        cap = mount_capability(AccessMode.MULTI_NODE_MULTI_WRITER)
        vid = new_volume(ctx, AccessMode.MULTI_NODE_MULTI_WRITER)
        res = ctx.resources
        for node in ("node-a", "node-b"):
            res.controller_publish(res.make_controller_publish_req(vid, node, cap))
        rsp = ctx.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        assert sorted(rsp.status.published_node_ids) == ["node-a", "node-b"]

    def test_unpublish_without_a_node_id_detaches_from_every_node(
        self, two_nodes: tuple[DriverProcess, DriverProcess], make_sanity: MakeSanity
    ) -> None:
        """Spec: "If the value is unset, the SP MUST unpublish the volume from all nodes it is
        published to"."""
        ctx = make_sanity(two_nodes[0])
        cap = mount_capability(AccessMode.MULTI_NODE_MULTI_WRITER)
        vid = new_volume(ctx, AccessMode.MULTI_NODE_MULTI_WRITER)
        for node in ("node-a", "node-b"):
            ctx.resources.controller_publish(
                ctx.resources.make_controller_publish_req(vid, node, cap)
            )
        ctx.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vid)
        )
        rsp = ctx.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        assert list(rsp.status.published_node_ids) == []

    def test_attach_limit_frees_a_slot_after_unpublish(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        proc = spawn_driver("--max-volumes-per-node", "2", node_id="n1")
        ctx = make_sanity(proc)
        res = ctx.resources
        vids = [new_volume(ctx) for _ in range(3)]
        for vid in vids[:2]:
            res.controller_publish(res.make_controller_publish_req(vid, "n1"))
        expect_error_code(
            res.controller_publish,
            res.make_controller_publish_req(vids[2], "n1"),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )
        ctx.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vids[0], node_id="n1")
        )
        res.controller_publish(res.make_controller_publish_req(vids[2], "n1"))

    def test_unpublish_of_a_volume_that_is_not_attached_answers_ok(
        self, sanity: SanityContext
    ) -> None:
        vid = new_volume(sanity)
        sanity.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vid, node_id="sanity-node")
        )

    def test_unpublish_of_an_unknown_volume_answers_ok(self, sanity: SanityContext) -> None:
        """Spec: a volume or node that cannot be found and may be regarded as unpublished
        SHOULD answer OK."""
        sanity.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(
                volume_id="no-such-volume", node_id="sanity-node"
            )
        )

    def test_list_volumes_reports_published_node_ids(self, sanity: SanityContext) -> None:
        vid = new_volume(sanity)
        res = sanity.resources
        res.controller_publish(res.make_controller_publish_req(vid, "sanity-node"))
        entries = sanity.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest()).entries
        mine = [e for e in entries if e.volume.volume_id == vid]
        assert len(mine) == 1
        assert list(mine[0].status.published_node_ids) == ["sanity-node"]
        sanity.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vid, node_id="sanity-node")
        )
        entries = sanity.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest()).entries
        assert [
            list(e.status.published_node_ids) for e in entries if e.volume.volume_id == vid
        ] == [[]]

    def test_no_attach_required_drops_publish_capability_and_answers_unimplemented(
        self, spawn_driver: SpawnDriver
    ) -> None:
        proc = spawn_driver("--no-attach-required", node_id="n1")
        caps = proc.stubs.controller.ControllerGetCapabilities(
            csi_pb2.ControllerGetCapabilitiesRequest()
        )
        kinds = {c.rpc.type for c in caps.capabilities}
        assert csi_pb2.ControllerServiceCapability.RPC.PUBLISH_UNPUBLISH_VOLUME not in kinds
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id="v", node_id="n1", volume_capability=mount_capability()
        )
        expect_error_code(
            proc.stubs.controller.ControllerPublishVolume, req, grpc.StatusCode.UNIMPLEMENTED
        )
