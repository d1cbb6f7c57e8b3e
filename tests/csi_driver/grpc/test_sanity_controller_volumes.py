"""csi-sanity port: "Controller Service [Controller Server]" (pkg/sanity/controller.go),
the volume half: ControllerGetCapabilities, GetCapacity, ListVolumes, CreateVolume,
DeleteVolume, ValidateVolumeCapabilities.
"""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.sanity_support import (
    INVALID_VOLUME_ID,
    MAX_NAME_LENGTH,
    MUTABLE_PARAMETERS,
    TEST_VOLUME_SIZE,
    CtrlCap,
    SanityContext,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    mount_capability,
    require_controller_capability,
    unique_string,
    unique_string_with_length,
    valid_volume_id,
)

KNOWN_CONTROLLER_CAPS = {
    CtrlCap.CREATE_DELETE_VOLUME,
    CtrlCap.PUBLISH_UNPUBLISH_VOLUME,
    CtrlCap.LIST_VOLUMES,
    CtrlCap.GET_CAPACITY,
    CtrlCap.CREATE_DELETE_SNAPSHOT,
    CtrlCap.LIST_SNAPSHOTS,
    CtrlCap.PUBLISH_READONLY,
    CtrlCap.CLONE_VOLUME,
    CtrlCap.EXPAND_VOLUME,
    CtrlCap.MODIFY_VOLUME,
    CtrlCap.LIST_VOLUMES_PUBLISHED_NODES,
    CtrlCap.GET_VOLUME,
    CtrlCap.VOLUME_CONDITION,
    CtrlCap.SINGLE_NODE_MULTI_WRITER,
    CtrlCap.GET_SNAPSHOT,
}
NOT_FOUND = grpc.StatusCode.NOT_FOUND
INVALID = grpc.StatusCode.INVALID_ARGUMENT


class TestControllerGetCapabilities:
    def test_should_return_appropriate_capabilities(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerGetCapabilities / should return appropriate
        capabilities."""
        rsp = sanity.stubs.controller.ControllerGetCapabilities(
            csi_pb2.ControllerGetCapabilitiesRequest()
        )
        assert rsp.capabilities
        for cap in rsp.capabilities:
            assert cap.HasField("rpc")
            assert cap.rpc.type in KNOWN_CONTROLLER_CAPS, f"unknown capability {cap.rpc.type}"


class TestGetCapacity:
    def test_should_return_capacity_no_optional_values_added(self, sanity: SanityContext) -> None:
        """Controller Service / GetCapacity / should return capacity (no optional values added)."""
        require_controller_capability(sanity.stubs, CtrlCap.GET_CAPACITY, "GetCapacity")
        sanity.stubs.controller.GetCapacity(csi_pb2.GetCapacityRequest())


class TestListVolumes:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.LIST_VOLUMES, "ListVolumes")

    def test_should_return_appropriate_values_no_optional_values_added(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ListVolumes / should return appropriate values (no optional
        values added)."""
        sanity.resources.must_create_volume(make_create_volume_req(unique_string("sanity-list")))
        rsp = sanity.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest())
        assert rsp.entries
        for entry in rsp.entries:
            assert entry.volume.volume_id

    def test_should_fail_when_an_invalid_starting_token_is_passed(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ListVolumes / should fail when an invalid starting_token is
        passed."""
        expect_error_code(
            sanity.stubs.controller.ListVolumes,
            csi_pb2.ListVolumesRequest(starting_token="invalid-token"),
            grpc.StatusCode.ABORTED,
        )

    def test_new_volumes_present_and_deleted_ones_absent(self, sanity: SanityContext) -> None:
        """Controller Service / ListVolumes / check the presence of new volumes and absence of
        deleted ones in the volume list."""
        list_volumes = sanity.stubs.controller.ListVolumes
        total = len(list_volumes(csi_pb2.ListVolumesRequest()).entries)
        vol = sanity.resources.must_create_volume(make_create_volume_req("sanity"))
        assert len(list_volumes(csi_pb2.ListVolumesRequest()).entries) == total + 1
        sanity.resources.delete_volume(vol.volume.volume_id)
        assert len(list_volumes(csi_pb2.ListVolumesRequest()).entries) == total


class TestCreateVolume:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.CREATE_DELETE_VOLUME, "CreateVolume")

    def test_should_fail_when_no_name_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / CreateVolume / should fail when no name is provided."""
        expect_error_code(sanity.resources.create_volume, csi_pb2.CreateVolumeRequest(), INVALID)

    def test_should_fail_when_no_volume_capabilities_are_provided(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should fail when no volume capabilities are
        provided."""
        req = csi_pb2.CreateVolumeRequest(name=unique_string("sanity-create-no-caps"))
        expect_error_code(sanity.resources.create_volume, req, INVALID)

    def test_should_return_appropriate_values_single_node_writer_no_capacity(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should return appropriate values SingleNodeWriter
        NoCapacity (csi-sanity still sends the default capacity; we send none, as its FIXME
        wants)."""
        req = make_create_volume_req(unique_string("sanity-create-single-no-capacity"))
        req.ClearField("capacity_range")
        sanity.resources.must_create_volume(req)

    def test_should_return_appropriate_values_single_node_writer_with_capacity_1gi(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should return appropriate values SingleNodeWriter
        WithCapacity 1Gi."""
        rsp = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-create-single-with-capacity"))
        )
        assert rsp.volume.capacity_bytes >= TEST_VOLUME_SIZE or rsp.volume.capacity_bytes == 0

    def test_should_not_fail_with_already_existing_name_and_same_capacity(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should not fail when requesting to create a volume
        with already existing name and same capacity."""
        name = unique_string("sanity-create-twice")
        vol1 = sanity.resources.must_create_volume(make_create_volume_req(name))
        vol2 = sanity.resources.must_create_volume(make_create_volume_req(name))
        for vol in (vol1, vol2):
            assert vol.volume.capacity_bytes >= TEST_VOLUME_SIZE or vol.volume.capacity_bytes == 0
        assert vol1.volume.volume_id == vol2.volume.volume_id

    def test_should_fail_with_already_existing_name_and_different_capacity(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should fail when requesting to create a volume with
        already existing name and different capacity."""
        name = unique_string("sanity-create-twice-different")
        req1 = make_create_volume_req(name)
        req1.capacity_range.limit_bytes = TEST_VOLUME_SIZE
        vol1 = sanity.resources.must_create_volume(req1)
        assert vol1.volume.capacity_bytes == TEST_VOLUME_SIZE
        req2 = make_create_volume_req(name, 2 * TEST_VOLUME_SIZE)
        req2.capacity_range.limit_bytes = 2 * TEST_VOLUME_SIZE
        expect_error_code(sanity.resources.create_volume, req2, grpc.StatusCode.ALREADY_EXISTS)

    def test_should_not_fail_when_creating_volume_with_maximum_length_name(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should not fail when creating volume with
        maximum-length name."""
        name = unique_string_with_length("sanity-controller-create-maxlen", MAX_NAME_LENGTH)
        rsp = sanity.resources.must_create_volume(make_create_volume_req(name))
        assert rsp.volume.capacity_bytes >= TEST_VOLUME_SIZE or rsp.volume.capacity_bytes == 0

    def test_should_create_volume_from_an_existing_source_snapshot(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should create volume from an existing source
        snapshot."""
        require_controller_capability(sanity.stubs, CtrlCap.CREATE_DELETE_SNAPSHOT, "Snapshot")
        res = sanity.resources
        vol1 = res.must_create_volume(make_create_volume_req(unique_string("sanity-source-vol")))
        snap = res.must_create_snapshot(
            make_create_snapshot_req(unique_string("sanity-snap-from-vol"), vol1.volume.volume_id)
        )
        assert snap.snapshot.ready_to_use, "a local copy is ready at once"
        req = make_create_volume_req(unique_string("sanity-vol-from-snap"))
        req.volume_content_source.snapshot.snapshot_id = snap.snapshot.snapshot_id
        vol2 = res.create_volume(req)
        assert vol2.volume.HasField("content_source")
        assert vol2.volume.content_source.snapshot.snapshot_id == snap.snapshot.snapshot_id

    def test_should_fail_when_the_volume_source_snapshot_is_not_found(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should fail when the volume source snapshot is not
        found."""
        require_controller_capability(sanity.stubs, CtrlCap.CREATE_DELETE_SNAPSHOT, "Snapshot")
        req = make_create_volume_req(unique_string("sanity-vol-from-snap"))
        req.volume_content_source.snapshot.snapshot_id = "non-existing-snapshot-id"
        expect_error_code(sanity.resources.create_volume, req, NOT_FOUND)

    def test_should_create_volume_from_an_existing_source_volume(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should create volume from an existing source
        volume."""
        require_controller_capability(sanity.stubs, CtrlCap.CLONE_VOLUME, "Volume Cloning")
        vol1 = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-source-vol"))
        )
        req = make_create_volume_req(unique_string("sanity-vol-from-vol"))
        req.volume_content_source.volume.volume_id = vol1.volume.volume_id
        sanity.resources.must_create_volume(req)

    def test_should_fail_when_the_volume_source_volume_is_not_found(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should fail when the volume source volume is not
        found."""
        require_controller_capability(sanity.stubs, CtrlCap.CLONE_VOLUME, "Volume Cloning")
        req = make_create_volume_req(unique_string("sanity-vol-from-vol"))
        req.volume_content_source.volume.volume_id = valid_volume_id()
        expect_error_code(sanity.resources.create_volume, req, NOT_FOUND)

    def test_should_create_volume_with_a_volume_attribute_class(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should create volume with a volume attribute
        class."""
        require_controller_capability(sanity.stubs, CtrlCap.MODIFY_VOLUME, "Modify volume")
        req = make_create_volume_req(unique_string("sanity-vol-with-mutable-parameters"))
        req.mutable_parameters.update(MUTABLE_PARAMETERS)
        sanity.resources.must_create_volume(req)

    def test_should_not_create_volume_with_an_invalid_volume_attribute_class(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / CreateVolume / should not create volume with an invalid volume
        attribute class."""
        require_controller_capability(sanity.stubs, CtrlCap.MODIFY_VOLUME, "Modify volume")
        req = make_create_volume_req(unique_string("sanity-vol-with-mutable-parameters"))
        req.mutable_parameters["XXX_FakeKey"] = "XXX_FakeValue"
        expect_error_code(sanity.resources.create_volume, req, INVALID)


class TestDeleteVolume:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.CREATE_DELETE_VOLUME, "DeleteVolume")

    def test_should_fail_when_no_volume_id_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / DeleteVolume / should fail when no volume id is provided."""
        expect_error_code(
            sanity.stubs.controller.DeleteVolume, csi_pb2.DeleteVolumeRequest(), INVALID
        )

    def test_should_succeed_when_an_invalid_volume_id_is_used(self, sanity: SanityContext) -> None:
        """Controller Service / DeleteVolume / should succeed when an invalid volume id is used."""
        sanity.stubs.controller.DeleteVolume(
            csi_pb2.DeleteVolumeRequest(volume_id=INVALID_VOLUME_ID)
        )

    def test_should_return_appropriate_values_no_optional_values_added(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / DeleteVolume / should return appropriate values (no optional
        values added)."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-create-appropriate"))
        )
        sanity.resources.delete_volume(vol.volume.volume_id)


class TestValidateVolumeCapabilities:
    def test_should_fail_when_no_volume_id_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / ValidateVolumeCapabilities / should fail when no volume id is
        provided."""
        expect_error_code(
            sanity.stubs.controller.ValidateVolumeCapabilities,
            csi_pb2.ValidateVolumeCapabilitiesRequest(),
            INVALID,
        )

    def test_should_fail_when_no_volume_capabilities_are_provided(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ValidateVolumeCapabilities / should fail when no volume capabilities
        are provided."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-validate-nocaps"))
        )
        expect_error_code(
            sanity.stubs.controller.ValidateVolumeCapabilities,
            csi_pb2.ValidateVolumeCapabilitiesRequest(volume_id=vol.volume.volume_id),
            INVALID,
        )

    def test_should_return_appropriate_values_no_optional_values_added(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ValidateVolumeCapabilities / should return appropriate values
        (no optional values added)."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-validate"))
        )
        rsp = sanity.stubs.controller.ValidateVolumeCapabilities(
            csi_pb2.ValidateVolumeCapabilitiesRequest(
                volume_id=vol.volume.volume_id, volume_capabilities=[mount_capability()]
            )
        )
        assert rsp.HasField("confirmed"), "the capability the volume was created with is supported"
        assert rsp.confirmed.volume_capabilities

    def test_should_fail_when_the_requested_volume_does_not_exist(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ValidateVolumeCapabilities / should fail when the requested volume
        does not exist."""
        expect_error_code(
            sanity.stubs.controller.ValidateVolumeCapabilities,
            csi_pb2.ValidateVolumeCapabilitiesRequest(
                volume_id=valid_volume_id(), volume_capabilities=[mount_capability()]
            ),
            NOT_FOUND,
        )
