"""csi-sanity port: "ExpandVolume [Controller Server]" and "ModifyVolume [Controller Server]"
(pkg/sanity/controller.go, 9 specs).
"""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.sanity_support import (
    MUTABLE_PARAMETERS,
    TEST_EXPAND_SIZE,
    CtrlCap,
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    make_expand_volume_req,
    make_modify_volume_req,
    require_controller_capability,
    unique_string,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT
FAKE_MUTABLE = {"XXX_FakeKey": "XXX_FakeValue"}


class TestExpandVolume:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.EXPAND_VOLUME, "ControllerExpandVolume")

    def test_should_fail_if_no_volume_id_is_given(self, sanity: SanityContext) -> None:
        """ExpandVolume / should fail if no volume id is given."""
        expect_error_code(
            sanity.stubs.controller.ControllerExpandVolume, make_expand_volume_req(""), INVALID
        )

    def test_should_fail_if_no_capacity_range_is_given(self, sanity: SanityContext) -> None:
        """ExpandVolume / should fail if no capacity range is given."""
        expect_error_code(
            sanity.stubs.controller.ControllerExpandVolume,
            csi_pb2.ControllerExpandVolumeRequest(volume_id=""),
            INVALID,
        )

    def test_should_work(self, sanity: SanityContext) -> None:
        """ExpandVolume / should work."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-expand-volume"))
        )
        rsp = sanity.stubs.controller.ControllerExpandVolume(
            make_expand_volume_req(vol.volume.volume_id)
        )
        assert rsp.capacity_bytes == TEST_EXPAND_SIZE


class TestModifyVolume:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.MODIFY_VOLUME, "ControllerModifyVolume")

    def modify(self, ctx: SanityContext, req: csi_pb2.ControllerModifyVolumeRequest) -> object:
        return ctx.stubs.controller.ControllerModifyVolume(req)

    def test_should_fail_if_no_volume_id_is_given(self, sanity: SanityContext) -> None:
        """ModifyVolume / should fail if no volume id is given."""
        expect_error_code(
            sanity.stubs.controller.ControllerModifyVolume, make_modify_volume_req(""), INVALID
        )

    def test_should_fail_if_volume_does_not_exist(self, sanity: SanityContext) -> None:
        """ModifyVolume / should fail if volume does not exist."""
        expect_error_code(
            sanity.stubs.controller.ControllerModifyVolume,
            make_modify_volume_req("non-existing-volume-id"),
            grpc.StatusCode.NOT_FOUND,
        )

    def test_should_fail_if_specified_mutable_parameters_are_not_supported_by_the_volume(
        self, sanity: SanityContext
    ) -> None:
        """ModifyVolume / should fail if specified mutable parameters are not supported by the
        volume."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-modify-volume-unsupported"))
        )
        req = csi_pb2.ControllerModifyVolumeRequest(
            volume_id=vol.volume.volume_id, mutable_parameters=FAKE_MUTABLE
        )
        expect_error_code(sanity.stubs.controller.ControllerModifyVolume, req, INVALID)

    def test_should_modify_a_volume_created_without_a_volume_attribute_class(
        self, sanity: SanityContext
    ) -> None:
        """ModifyVolume / should modify a volume created without a volume attribute class."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("sanity-modify-volume"))
        )
        self.modify(sanity, make_modify_volume_req(vol.volume.volume_id))

    def test_should_modify_a_volume_created_with_a_volume_attribute_class(
        self, sanity: SanityContext
    ) -> None:
        """ModifyVolume / should modify a volume created with a volume attribute class."""
        req = make_create_volume_req(unique_string("sanity-modify-volume-with-vac"))
        req.mutable_parameters.update(MUTABLE_PARAMETERS)
        vol = sanity.resources.must_create_volume(req)
        self.modify(sanity, make_modify_volume_req(vol.volume.volume_id))

    def test_should_fail_to_modify_a_vac_volume_if_new_mutable_parameters_are_not_supported(
        self, sanity: SanityContext
    ) -> None:
        """ModifyVolume / should fail to modify a volume created with a volume attribute class if
        new mutable parameters are not supported by volume."""
        req = make_create_volume_req(unique_string("sanity-modify-volume-with-vac-not-supported"))
        req.mutable_parameters.update(MUTABLE_PARAMETERS)
        vol = sanity.resources.must_create_volume(req)
        modify = csi_pb2.ControllerModifyVolumeRequest(
            volume_id=vol.volume.volume_id, mutable_parameters=FAKE_MUTABLE
        )
        expect_error_code(sanity.stubs.controller.ControllerModifyVolume, modify, INVALID)
