"""csi-sanity port: "Node Service" (pkg/sanity/node.go, 24 specs)."""

from __future__ import annotations

import os

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.node_flow import NodeFlow, run_controller_test
from tests.csi_driver.grpc.sanity_support import (
    IDEMPOTENT_COUNT,
    TEST_EXPAND_SIZE,
    AccessMode,
    NodeCap,
    PluginService,
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
    plugin_services,
    unique_string,
    valid_volume_id,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
KNOWN_NODE_CAPS = {
    NodeCap.UNKNOWN,
    NodeCap.STAGE_UNSTAGE_VOLUME,
    NodeCap.GET_VOLUME_STATS,
    NodeCap.EXPAND_VOLUME,
    NodeCap.VOLUME_CONDITION,
    NodeCap.SINGLE_NODE_MULTI_WRITER,
    NodeCap.VOLUME_MOUNT_GROUP,
}


@pytest.fixture
def flow(sanity: SanityContext) -> NodeFlow:
    return NodeFlow(sanity)


class TestNodeGetCapabilities:
    def test_should_return_appropriate_capabilities(self, flow: NodeFlow) -> None:
        """Node Service / NodeGetCapabilities / should return appropriate capabilities."""
        rsp = flow.ctx.stubs.node.NodeGetCapabilities(csi_pb2.NodeGetCapabilitiesRequest())
        assert rsp.capabilities
        for cap in rsp.capabilities:
            assert cap.HasField("rpc")
            assert cap.rpc.type in KNOWN_NODE_CAPS


class TestNodeGetInfo:
    def test_should_return_appropriate_values(self, flow: NodeFlow) -> None:
        """Node Service / NodeGetInfo / should return appropriate values."""
        info = flow.ctx.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
        assert info.node_id
        assert info.max_volumes_per_node >= 0
        if PluginService.VOLUME_ACCESSIBILITY_CONSTRAINTS in plugin_services(flow.ctx.stubs):
            assert info.HasField("accessible_topology")


class TestNodePublishVolume:
    def test_should_fail_when_no_volume_id_is_provided(self, flow: NodeFlow) -> None:
        """Node Service / NodePublishVolume / should fail when no volume id is provided."""
        expect_error_code(flow.res.node_publish, csi_pb2.NodePublishVolumeRequest(), INVALID)

    def test_should_fail_when_no_target_path_is_provided(self, flow: NodeFlow) -> None:
        """Node Service / NodePublishVolume / should fail when no target path is provided."""
        expect_error_code(
            flow.ctx.stubs.node.NodePublishVolume,
            csi_pb2.NodePublishVolumeRequest(volume_id=valid_volume_id()),
            INVALID,
        )

    def test_should_fail_when_no_volume_capability_is_provided(self, flow: NodeFlow) -> None:
        """Node Service / NodePublishVolume / should fail when no volume capability is provided."""
        req = csi_pb2.NodePublishVolumeRequest(
            volume_id=valid_volume_id(), target_path=flow.ctx.target_path
        )
        expect_error_code(flow.res.node_publish, req, INVALID)
        assert not os.path.lexists(flow.ctx.target_path), (
            "a refused publish must not create the target"
        )

    def test_single_node_single_writer_already_mounted_at_a_different_target_path_fails(
        self, flow: NodeFlow
    ) -> None:
        """Node Service / NodePublishVolume / with single node multi writer capability / should fail
        when volume with single node single writer access mode is already mounted at a different
        target path."""
        if not flow.single_node_multi_writer_supported:
            pytest.skip("Service does not have single node multi writer capability")
        cap = mount_capability(AccessMode.SINGLE_NODE_SINGLE_WRITER)
        vol, pub = flow.stage_and_publish(unique_string("sanity-node-publish-snsw"), cap)
        req = flow.publish_request(vol, pub, cap, target=flow.ctx.other_target_path)
        expect_error_code(flow.res.node_publish, req, grpc.StatusCode.FAILED_PRECONDITION)


class TestNodeUnpublishVolume:
    def test_should_fail_when_no_volume_id_is_provided(self, flow: NodeFlow) -> None:
        """Node Service / NodeUnpublishVolume / should fail when no volume id is provided."""
        expect_error_code(
            flow.ctx.stubs.node.NodeUnpublishVolume, csi_pb2.NodeUnpublishVolumeRequest(), INVALID
        )

    def test_should_fail_when_no_target_path_is_provided(self, flow: NodeFlow) -> None:
        """Node Service / NodeUnpublishVolume / should fail when no target path is provided."""
        expect_error_code(
            flow.ctx.stubs.node.NodeUnpublishVolume,
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=valid_volume_id()),
            INVALID,
        )

    def test_should_remove_target_path(self, flow: NodeFlow) -> None:
        """Node Service / NodeUnpublishVolume / should remove target path."""
        vol, _ = flow.stage_and_publish(unique_string("sanity-node-unpublish-volume"))
        target = flow.ctx.target_path
        assert os.path.lexists(target), "target path should have been created by the CSI driver"
        flow.ctx.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=vol.volume.volume_id, target_path=target)
        )
        assert not os.path.lexists(target), (
            "the driver must remove the target path on NodeUnpublish"
        )


@pytest.fixture
def stage_flow(flow: NodeFlow) -> NodeFlow:
    if not flow.stage_supported:
        pytest.skip("NodeStageVolume not supported")
    return flow


class TestNodeStageVolume:
    device = {"device": "/dev/mock"}

    def test_should_fail_when_no_volume_id_is_provided(self, stage_flow: NodeFlow) -> None:
        """Node Service / NodeStageVolume / should fail when no volume id is provided."""
        req = csi_pb2.NodeStageVolumeRequest(
            staging_target_path=stage_flow.ctx.staging_path,
            volume_capability=mount_capability(),
            publish_context=self.device,
        )
        expect_error_code(stage_flow.res.node_stage, req, INVALID)

    def test_should_fail_when_no_staging_target_path_is_provided(
        self, stage_flow: NodeFlow
    ) -> None:
        """Node Service / NodeStageVolume / should fail when no staging target path is provided."""
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id=valid_volume_id(),
            volume_capability=mount_capability(),
            publish_context=self.device,
        )
        expect_error_code(stage_flow.ctx.stubs.node.NodeStageVolume, req, INVALID)

    def test_should_fail_when_no_volume_capability_is_provided(self, stage_flow: NodeFlow) -> None:
        """Node Service / NodeStageVolume / should fail when no volume capability is provided."""
        vol = stage_flow.res.must_create_volume(
            make_create_volume_req(unique_string("sanity-node-stage-nocaps"))
        )
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id=vol.volume.volume_id,
            staging_target_path=stage_flow.ctx.staging_path,
            publish_context=self.device,
        )
        expect_error_code(stage_flow.res.node_stage, req, INVALID)


class TestNodeUnstageVolume:
    def test_should_fail_when_no_volume_id_is_provided(self, stage_flow: NodeFlow) -> None:
        """Node Service / NodeUnstageVolume / should fail when no volume id is provided."""
        expect_error_code(
            stage_flow.ctx.stubs.node.NodeUnstageVolume,
            csi_pb2.NodeUnstageVolumeRequest(staging_target_path=stage_flow.ctx.staging_path),
            INVALID,
        )

    def test_should_fail_when_no_staging_target_path_is_provided(
        self, stage_flow: NodeFlow
    ) -> None:
        """Node Service / NodeUnstageVolume / should fail when no staging target path is
        provided."""
        expect_error_code(
            stage_flow.ctx.stubs.node.NodeUnstageVolume,
            csi_pb2.NodeUnstageVolumeRequest(volume_id=valid_volume_id()),
            INVALID,
        )


@pytest.fixture
def stats_flow(flow: NodeFlow) -> NodeFlow:
    if not flow.stats_supported:
        pytest.skip("NodeGetVolumeStats not supported")
    return flow


class TestNodeGetVolumeStats:
    def test_should_fail_when_no_volume_id_is_provided(self, stats_flow: NodeFlow) -> None:
        """Node Service / NodeGetVolumeStats / should fail when no volume id is provided."""
        expect_error_code(
            stats_flow.ctx.stubs.node.NodeGetVolumeStats,
            csi_pb2.NodeGetVolumeStatsRequest(volume_path="some/path"),
            INVALID,
        )

    def test_should_fail_when_no_volume_path_is_provided(self, stats_flow: NodeFlow) -> None:
        """Node Service / NodeGetVolumeStats / should fail when no volume path is provided."""
        expect_error_code(
            stats_flow.ctx.stubs.node.NodeGetVolumeStats,
            csi_pb2.NodeGetVolumeStatsRequest(volume_id=valid_volume_id()),
            INVALID,
        )

    def test_should_fail_when_volume_is_not_found(self, stats_flow: NodeFlow) -> None:
        """Node Service / NodeGetVolumeStats / should fail when volume is not found."""
        expect_error_code(
            stats_flow.ctx.stubs.node.NodeGetVolumeStats,
            csi_pb2.NodeGetVolumeStatsRequest(volume_id=valid_volume_id(), volume_path="some/path"),
            NOT_FOUND,
        )

    def test_should_fail_when_volume_does_not_exist_on_the_specified_path(
        self, stats_flow: NodeFlow
    ) -> None:
        """Node Service / NodeGetVolumeStats / should fail when volume does not exist on the
        specified path."""
        vol, _ = stats_flow.stage_and_publish(unique_string("sanity-node-get-volume-stats"))
        expect_error_code(
            stats_flow.ctx.stubs.node.NodeGetVolumeStats,
            csi_pb2.NodeGetVolumeStatsRequest(
                volume_id=vol.volume.volume_id, volume_path="some/path"
            ),
            NOT_FOUND,
        )


@pytest.fixture
def expand_flow(flow: NodeFlow) -> NodeFlow:
    if not flow.node_expansion_supported:
        pytest.skip("NodeExpandVolume not supported")
    return flow


class TestNodeExpandVolume:
    def test_should_fail_when_no_volume_id_is_provided(self, expand_flow: NodeFlow) -> None:
        """Node Service / NodeExpandVolume / should fail when no volume id is provided."""
        req = csi_pb2.NodeExpandVolumeRequest(
            volume_path=str(expand_flow.ctx.mount_dir), volume_capability=mount_capability()
        )
        expect_error_code(expand_flow.ctx.stubs.node.NodeExpandVolume, req, INVALID)

    def test_should_fail_when_no_volume_path_is_provided(self, expand_flow: NodeFlow) -> None:
        """Node Service / NodeExpandVolume / should fail when no volume path is provided."""
        vol = expand_flow.create_volume(unique_string("sanity-node-expand-volume-valid-id"))
        req = csi_pb2.NodeExpandVolumeRequest(
            volume_id=vol.volume.volume_id, volume_capability=mount_capability()
        )
        expect_error_code(expand_flow.ctx.stubs.node.NodeExpandVolume, req, INVALID)

    def test_should_fail_when_volume_is_not_found(self, expand_flow: NodeFlow) -> None:
        """Node Service / NodeExpandVolume / should fail when volume is not found."""
        req = csi_pb2.NodeExpandVolumeRequest(volume_id=valid_volume_id(), volume_path="some/path")
        expect_error_code(expand_flow.ctx.stubs.node.NodeExpandVolume, req, NOT_FOUND)

    def test_should_work_if_node_expand_is_called_after_node_publish(
        self, expand_flow: NodeFlow
    ) -> None:
        """Node Service / NodeExpandVolume / should work if node-expand is called after
        node-publish."""
        flow = expand_flow
        vol = flow.create_volume(unique_string("sanity-node-expand-volume"))
        if flow.controller_expansion_supported:
            rsp = flow.ctx.stubs.controller.ControllerExpandVolume(
                csi_pb2.ControllerExpandVolumeRequest(
                    volume_id=vol.volume.volume_id,
                    capacity_range=csi_pb2.CapacityRange(required_bytes=TEST_EXPAND_SIZE),
                )
            )
            assert rsp.capacity_bytes == TEST_EXPAND_SIZE
        pub = flow.controller_publish(vol, flow.node_info().node_id)
        flow.node_stage(vol, pub)
        flow.node_publish(vol, pub)
        flow.ctx.stubs.node.NodeExpandVolume(
            csi_pb2.NodeExpandVolumeRequest(
                volume_id=vol.volume.volume_id,
                volume_path=flow.ctx.target_path,
                capacity_range=csi_pb2.CapacityRange(required_bytes=TEST_EXPAND_SIZE),
            )
        )


class TestNodeServiceLifecycle:
    def test_should_work(self, flow: NodeFlow) -> None:
        """Node Service / should work."""
        if not flow.provides_controller:
            pytest.skip("Controller Service not provided: CreateVolume not supported")
        run_controller_test(flow, unique_string("sanity-node-full-1"), 1)

    def test_should_be_idempotent(self, flow: NodeFlow) -> None:
        """Node Service / should be idempotent."""
        if not flow.provides_controller:
            pytest.skip("Controller Service not provided: CreateVolume not supported")
        run_controller_test(
            flow, unique_string(f"sanity-node-full-{IDEMPOTENT_COUNT}"), IDEMPOTENT_COUNT
        )
