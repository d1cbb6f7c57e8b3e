"""csi-sanity port: "GroupController Service" [GroupController Server] and
[GroupController VolumeGroupSnapshots] (pkg/sanity/groupcontroller.go, 6 specs).
"""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.sanity_support import (
    INVALID_VOLUME_ID,
    PluginService,
    SanityContext,
    expect_error_code,
    plugin_services,
)

GroupCap = csi_pb2.GroupControllerServiceCapability.RPC
INVALID = grpc.StatusCode.INVALID_ARGUMENT


def group_capabilities(ctx: SanityContext) -> set[int]:
    rsp = ctx.stubs.group_controller.GroupControllerGetCapabilities(
        csi_pb2.GroupControllerGetCapabilitiesRequest()
    )
    return {c.rpc.type for c in rsp.capabilities}


@pytest.fixture
def group(sanity: SanityContext) -> SanityContext:
    if PluginService.GROUP_CONTROLLER_SERVICE not in plugin_services(sanity.stubs):
        pytest.skip("GroupControllerService not supported")
    return sanity


@pytest.fixture
def group_snapshots(group: SanityContext) -> SanityContext:
    if GroupCap.CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT not in group_capabilities(group):
        pytest.skip("VolumeGroupSnapshots not supported")
    return group


class TestGroupControllerGetCapabilities:
    def test_should_return_appropriate_capabilities(self, group: SanityContext) -> None:
        """GroupController Service / GroupControllerGetCapabilities / should return appropriate
        capabilities."""
        rsp = group.stubs.group_controller.GroupControllerGetCapabilities(
            csi_pb2.GroupControllerGetCapabilitiesRequest()
        )
        assert rsp.capabilities
        for cap in rsp.capabilities:
            assert cap.HasField("rpc")
            assert cap.rpc.type == GroupCap.CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT


class TestCreateVolumeGroupSnapshot:
    def test_should_fail_when_no_name_is_provided(self, group_snapshots: SanityContext) -> None:
        """VolumeGroupSnapshots / CreateVolumeGroupSnapshot / should fail when no name is
        provided."""
        expect_error_code(
            group_snapshots.stubs.group_controller.CreateVolumeGroupSnapshot,
            csi_pb2.CreateVolumeGroupSnapshotRequest(),
            INVALID,
        )


class TestGetVolumeGroupSnapshot:
    def test_should_fail_when_no_volume_id_is_provided(
        self, group_snapshots: SanityContext
    ) -> None:
        """VolumeGroupSnapshots / GetVolumeGroupSnapshot / should fail when no volume id is
        provided."""
        expect_error_code(
            group_snapshots.stubs.group_controller.GetVolumeGroupSnapshot,
            csi_pb2.GetVolumeGroupSnapshotRequest(),
            INVALID,
        )

    def test_should_fail_when_an_invalid_volume_id_is_used(
        self, group_snapshots: SanityContext
    ) -> None:
        """VolumeGroupSnapshots / GetVolumeGroupSnapshot / should fail when an invalid volume id
        is used."""
        expect_error_code(
            group_snapshots.stubs.group_controller.GetVolumeGroupSnapshot,
            csi_pb2.GetVolumeGroupSnapshotRequest(group_snapshot_id=INVALID_VOLUME_ID),
            grpc.StatusCode.NOT_FOUND,
        )


class TestDeleteVolumeGroupSnapshot:
    def test_should_fail_when_no_volume_id_is_provided(
        self, group_snapshots: SanityContext
    ) -> None:
        """VolumeGroupSnapshots / DeleteVolumeGroupSnapshot / should fail when no volume id is
        provided."""
        expect_error_code(
            group_snapshots.stubs.group_controller.DeleteVolumeGroupSnapshot,
            csi_pb2.DeleteVolumeGroupSnapshotRequest(),
            INVALID,
        )

    def test_should_succeed_when_an_invalid_volume_id_is_used(
        self, group_snapshots: SanityContext
    ) -> None:
        """VolumeGroupSnapshots / DeleteVolumeGroupSnapshot / should succeed when an invalid
        volume id
        is used."""
        group_snapshots.stubs.group_controller.DeleteVolumeGroupSnapshot(
            csi_pb2.DeleteVolumeGroupSnapshotRequest(group_snapshot_id=INVALID_VOLUME_ID)
        )
