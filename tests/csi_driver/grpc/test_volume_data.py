"""Volumes hold real data: a file written through one publish is readable after
snapshot → restore → publish and after clone → publish; NodeGetVolumeStats reports real
bytes and inodes; volume condition is reported where advertised."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    NodeCap,
    SanityContext,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    mount_capability,
    unique_string,
)

MiB = 1024**2
Unit = csi_pb2.VolumeUsage.Unit


@pytest.fixture
def flow(sanity: SanityContext) -> NodeFlow:
    return NodeFlow(sanity)


def publish(flow: NodeFlow, vol: csi_pb2.CreateVolumeResponse) -> Path:
    pub = flow.controller_publish(vol, "sanity-node")
    flow.node_stage(vol, pub)
    flow.node_publish(vol, pub)
    return Path(flow.ctx.target_path)


def unpublish(flow: NodeFlow, volume_id: str) -> None:
    node, ctrl = flow.ctx.stubs.node, flow.ctx.stubs.controller
    node.NodeUnpublishVolume(
        csi_pb2.NodeUnpublishVolumeRequest(volume_id=volume_id, target_path=flow.ctx.target_path)
    )
    node.NodeUnstageVolume(
        csi_pb2.NodeUnstageVolumeRequest(
            volume_id=volume_id, staging_target_path=flow.ctx.staging_path
        )
    )
    ctrl.ControllerUnpublishVolume(
        csi_pb2.ControllerUnpublishVolumeRequest(volume_id=volume_id, node_id="sanity-node")
    )


def create_from(
    flow: NodeFlow, *, snapshot_id: str = "", volume_id: str = ""
) -> csi_pb2.CreateVolumeResponse:
    req = make_create_volume_req(unique_string("copy"), GiB)
    if snapshot_id:
        req.volume_content_source.snapshot.snapshot_id = snapshot_id
    else:
        req.volume_content_source.volume.volume_id = volume_id
    return flow.res.must_create_volume(req)


class TestDataCopies:
    def test_a_file_written_before_a_snapshot_is_read_back_from_the_restored_volume(
        self, flow: NodeFlow
    ) -> None:
        origin = flow.res.must_create_volume(make_create_volume_req(unique_string("orig"), GiB))
        oid = origin.volume.volume_id
        target = publish(flow, origin)
        (target / "dir").mkdir()
        (target / "dir" / "payload.bin").write_bytes(b"snapshot me" * 1000)
        snap = flow.res.must_create_snapshot(make_create_snapshot_req(unique_string("s"), oid))
        (target / "dir" / "payload.bin").write_bytes(b"changed after the snapshot")
        unpublish(flow, oid)

        restored = create_from(flow, snapshot_id=snap.snapshot.snapshot_id)
        assert restored.volume.content_source.snapshot.snapshot_id == snap.snapshot.snapshot_id
        target = publish(flow, restored)
        assert (target / "dir" / "payload.bin").read_bytes() == b"snapshot me" * 1000

    def test_a_snapshot_restores_after_its_source_volume_was_deleted(
        self, flow: NodeFlow
    ) -> None:
        """Snapshots are independent copies: deleting the source (allowed by default, as in
        csi-driver-host-path) leaves every snapshot restorable, data included."""
        origin = flow.res.must_create_volume(make_create_volume_req(unique_string("gone"), GiB))
        oid = origin.volume.volume_id
        target = publish(flow, origin)
        (target / "kept.txt").write_text("outlives the volume")
        snap = flow.res.must_create_snapshot(make_create_snapshot_req(unique_string("s"), oid))
        unpublish(flow, oid)
        flow.res.delete_volume(oid)
        expect_error_code(flow.ctx.stubs.controller.ControllerGetVolume,
                          csi_pb2.ControllerGetVolumeRequest(volume_id=oid),
                          grpc.StatusCode.NOT_FOUND)

        restored = create_from(flow, snapshot_id=snap.snapshot.snapshot_id)
        target = publish(flow, restored)
        assert (target / "kept.txt").read_text() == "outlives the volume"

    def test_a_clone_holds_the_source_data_and_is_independent_of_it(self, flow: NodeFlow) -> None:
        origin = flow.res.must_create_volume(make_create_volume_req(unique_string("src"), GiB))
        oid = origin.volume.volume_id
        target = publish(flow, origin)
        (target / "a.txt").write_text("from the source")
        unpublish(flow, oid)

        clone = create_from(flow, volume_id=oid)
        assert clone.volume.content_source.volume.volume_id == oid
        target = publish(flow, clone)
        assert (target / "a.txt").read_text() == "from the source"
        (target / "a.txt").write_text("clone only")
        unpublish(flow, clone.volume.volume_id)

        target = publish(flow, origin)
        assert (target / "a.txt").read_text() == "from the source"


class TestNodeGetVolumeStats:
    def test_stats_report_the_bytes_and_inodes_really_used(self, flow: NodeFlow) -> None:
        vol = flow.res.must_create_volume(make_create_volume_req(unique_string("stats"), GiB))
        target = publish(flow, vol)
        req = csi_pb2.NodeGetVolumeStatsRequest(
            volume_id=vol.volume.volume_id, volume_path=str(target)
        )
        before = flow.ctx.stubs.node.NodeGetVolumeStats(req)
        (target / "big.bin").write_bytes(b"\x01" * (3 * MiB))
        for i in range(10):
            (target / f"small-{i}").write_text("x")
        after = flow.ctx.stubs.node.NodeGetVolumeStats(req)
        usage = {u.unit: u for u in after.usage}
        old = {u.unit: u for u in before.usage}
        assert usage[Unit.BYTES].used - old[Unit.BYTES].used >= 3 * MiB
        assert usage[Unit.BYTES].total > 0
        assert usage[Unit.BYTES].used + usage[Unit.BYTES].available <= usage[Unit.BYTES].total
        assert usage[Unit.INODES].used - old[Unit.INODES].used >= 11

    def test_stats_of_a_block_volume_report_its_size(self, flow: NodeFlow) -> None:
        cap = csi_pb2.VolumeCapability(
            access_mode=mount_capability().access_mode, block=csi_pb2.VolumeCapability.BlockVolume()
        )
        req = make_create_volume_req(unique_string("blkstats"), 64 * MiB)
        del req.volume_capabilities[:]
        req.volume_capabilities.append(cap)
        vol = flow.res.must_create_volume(req)
        pub = flow.controller_publish(vol, "sanity-node", cap)
        flow.node_stage(vol, pub, cap)
        flow.node_publish(vol, pub, cap)
        rsp = flow.ctx.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=vol.volume.volume_id, volume_path=flow.ctx.target_path
            )
        )
        usage = {u.unit: u for u in rsp.usage}
        assert usage[Unit.BYTES].total == 64 * MiB

    def test_stats_accept_the_staging_path_too(self, flow: NodeFlow) -> None:
        vol = flow.res.must_create_volume(make_create_volume_req(unique_string("stg"), GiB))
        publish(flow, vol)
        rsp = flow.ctx.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=vol.volume.volume_id, volume_path=flow.ctx.staging_path
            )
        )
        assert rsp.usage

    def test_stats_of_a_volume_published_elsewhere_is_not_found(self, flow: NodeFlow) -> None:
        a = flow.res.must_create_volume(make_create_volume_req(unique_string("a"), GiB))
        b = flow.res.must_create_volume(make_create_volume_req(unique_string("b"), GiB))
        publish(flow, a)
        expect_error_code(
            flow.ctx.stubs.node.NodeGetVolumeStats,
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=b.volume.volume_id, volume_path=flow.ctx.target_path
            ),
            grpc.StatusCode.NOT_FOUND,
        )

    def test_volume_condition_is_reported_normal_where_advertised(self, flow: NodeFlow) -> None:
        if NodeCap.VOLUME_CONDITION not in {
            c.rpc.type
            for c in flow.ctx.stubs.node.NodeGetCapabilities(
                csi_pb2.NodeGetCapabilitiesRequest()
            ).capabilities
        }:
            pytest.skip("node VOLUME_CONDITION not advertised")
        vol = flow.res.must_create_volume(make_create_volume_req(unique_string("cond"), GiB))
        publish(flow, vol)
        rsp = flow.ctx.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=vol.volume.volume_id, volume_path=flow.ctx.target_path
            )
        )
        assert rsp.HasField("volume_condition")
        assert rsp.volume_condition.abnormal is False


class TestControllerGetVolume:
    def test_reports_the_volume_its_publications_and_condition(self, flow: NodeFlow) -> None:
        vol = flow.res.must_create_volume(make_create_volume_req(unique_string("get"), GiB))
        vid = vol.volume.volume_id
        flow.res.controller_publish(flow.res.make_controller_publish_req(vid, "sanity-node"))
        rsp = flow.ctx.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        assert rsp.volume.volume_id == vid
        assert rsp.volume.capacity_bytes == GiB
        assert list(rsp.status.published_node_ids) == ["sanity-node"]
        assert rsp.status.HasField("volume_condition")
        assert rsp.status.volume_condition.abnormal is False

    def test_unknown_volume_is_not_found(self, sanity: SanityContext) -> None:
        expect_error_code(
            sanity.stubs.controller.ControllerGetVolume,
            csi_pb2.ControllerGetVolumeRequest(volume_id="no-such-volume"),
            grpc.StatusCode.NOT_FOUND,
        )

    def test_validate_capabilities_confirms_only_supported_ones(
        self, sanity: SanityContext
    ) -> None:
        vol = sanity.resources.must_create_volume(make_create_volume_req(unique_string("v"), GiB))
        block = csi_pb2.VolumeCapability(
            access_mode=csi_pb2.VolumeCapability.AccessMode(
                mode=csi_pb2.VolumeCapability.AccessMode.SINGLE_NODE_WRITER
            ),
            block=csi_pb2.VolumeCapability.BlockVolume(),
        )
        rsp = sanity.stubs.controller.ValidateVolumeCapabilities(
            csi_pb2.ValidateVolumeCapabilitiesRequest(
                volume_id=vol.volume.volume_id, volume_capabilities=[block]
            )
        )
        assert not rsp.HasField("confirmed"), "a mount volume cannot be used as a block device"
        assert rsp.message
        ok = sanity.stubs.controller.ValidateVolumeCapabilities(
            csi_pb2.ValidateVolumeCapabilitiesRequest(
                volume_id=vol.volume.volume_id, volume_capabilities=[mount_capability()]
            )
        )
        assert list(ok.confirmed.volume_capabilities) == [mount_capability()]

    def test_validate_does_not_confirm_a_volume_context_that_is_not_the_volumes(
        self, sanity: SanityContext
    ) -> None:
        """Spec: ValidateVolumeCapabilitiesRequest.volume_context "MUST match the volume_context
        of the volume identified by volume_id"; Confirmed.volume_context is the context
        "validated by the plugin", so a foreign context is not confirmed."""
        vol = sanity.resources.must_create_volume(make_create_volume_req(unique_string("ctx"), GiB))
        foreign = dict(vol.volume.volume_context)
        foreign["not-the-volumes"] = "context"
        req = csi_pb2.ValidateVolumeCapabilitiesRequest(
            volume_id=vol.volume.volume_id,
            volume_capabilities=[mount_capability()],
            volume_context=foreign,
        )
        try:
            rsp = sanity.stubs.controller.ValidateVolumeCapabilities(req)
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT
            return
        assert not rsp.HasField("confirmed"), "a foreign volume_context was confirmed"
