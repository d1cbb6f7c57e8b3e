"""Expansion (controller ONLINE vs OFFLINE, node expansion) and ControllerModifyVolume
rules beyond csi-sanity (DESIGN.md, CSI section)."""

from __future__ import annotations

import grpc
import pytest

from csi_driver.state import loop_fs
from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    CtrlCap,
    GiB,
    NodeCap,
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    unique_string,
)

Expansion = csi_pb2.PluginCapability.VolumeExpansion


def expand_req(volume_id: str, size: int) -> csi_pb2.ControllerExpandVolumeRequest:
    return csi_pb2.ControllerExpandVolumeRequest(
        volume_id=volume_id, capacity_range=csi_pb2.CapacityRange(required_bytes=size)
    )


def expansion_modes(ctx: SanityContext) -> set[int]:
    caps = ctx.stubs.identity.GetPluginCapabilities(csi_pb2.GetPluginCapabilitiesRequest())
    return {c.volume_expansion.type for c in caps.capabilities if c.HasField("volume_expansion")}


class TestControllerExpandVolume:
    def test_online_expansion_of_a_published_volume_then_node_expand(
        self, sanity: SanityContext
    ) -> None:
        if expansion_modes(sanity) == {Expansion.OFFLINE} and not loop_fs.grows_online():
            pytest.skip("ext4 images grow offline on this host (no CAP_SYS_RESOURCE)")
        assert expansion_modes(sanity) == {Expansion.ONLINE}
        flow = NodeFlow(sanity)
        vol, _ = flow.stage_and_publish(unique_string("grow"))
        vid = vol.volume.volume_id
        before = sanity.stubs.controller.GetCapacity(csi_pb2.GetCapacityRequest())
        rsp = sanity.stubs.controller.ControllerExpandVolume(expand_req(vid, 12 * GiB))
        assert rsp.capacity_bytes == 12 * GiB
        assert rsp.node_expansion_required is True
        after = sanity.stubs.controller.GetCapacity(csi_pb2.GetCapacityRequest())
        assert before.available_capacity - after.available_capacity == 2 * GiB
        node = sanity.stubs.node.NodeExpandVolume(
            csi_pb2.NodeExpandVolumeRequest(
                volume_id=vid,
                volume_path=sanity.target_path,
                capacity_range=csi_pb2.CapacityRange(required_bytes=12 * GiB),
            )
        )
        assert node.capacity_bytes in (0, 12 * GiB)
        got = sanity.stubs.controller.ControllerGetVolume(
            csi_pb2.ControllerGetVolumeRequest(volume_id=vid)
        )
        assert got.volume.capacity_bytes == 12 * GiB

    def test_expanding_to_a_size_already_reached_answers_ok_with_the_current_size(
        self, sanity: SanityContext
    ) -> None:
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("g"), 4 * GiB)
        )
        rsp = sanity.stubs.controller.ControllerExpandVolume(expand_req(vol.volume.volume_id, GiB))
        assert rsp.capacity_bytes == 4 * GiB

    def test_expanding_beyond_the_maximum_size_fails_out_of_range(
        self, sanity: SanityContext
    ) -> None:
        vol = sanity.resources.must_create_volume(make_create_volume_req(unique_string("g"), GiB))
        expect_error_code(
            sanity.stubs.controller.ControllerExpandVolume,
            expand_req(vol.volume.volume_id, 2048 * GiB),
            grpc.StatusCode.OUT_OF_RANGE,
        )

    def test_expanding_an_unknown_volume_is_not_found(self, sanity: SanityContext) -> None:
        expect_error_code(
            sanity.stubs.controller.ControllerExpandVolume,
            expand_req("no-such-volume", GiB),
            grpc.StatusCode.NOT_FOUND,
        )

    def test_offline_expansion_refuses_a_published_volume_and_grows_an_unpublished_one(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        """The spec's OFFLINE flow: ControllerExpandVolume only while unpublished, then
        stage and publish again, then NodeExpandVolume on the published volume."""
        proc = spawn_driver("--expansion", "offline", node_id="n1")
        ctx = make_sanity(proc)
        assert expansion_modes(ctx) == {Expansion.OFFLINE}
        res = ctx.resources
        vol = res.must_create_volume(make_create_volume_req(unique_string("off"), GiB))
        vid = vol.volume.volume_id
        res.controller_publish(res.make_controller_publish_req(vid, "n1"))
        expect_error_code(
            ctx.stubs.controller.ControllerExpandVolume,
            expand_req(vid, 2 * GiB),
            grpc.StatusCode.FAILED_PRECONDITION,
        )
        ctx.stubs.controller.ControllerUnpublishVolume(
            csi_pb2.ControllerUnpublishVolumeRequest(volume_id=vid, node_id="n1")
        )
        rsp = ctx.stubs.controller.ControllerExpandVolume(expand_req(vid, 2 * GiB))
        assert rsp.capacity_bytes == 2 * GiB
        flow = NodeFlow(ctx)
        pub = flow.controller_publish(vol, "n1")
        flow.node_stage(vol, pub)
        flow.node_publish(vol, pub)
        grown = ctx.stubs.node.NodeExpandVolume(csi_pb2.NodeExpandVolumeRequest(
            volume_id=vid, volume_path=ctx.target_path, staging_target_path=ctx.staging_path,
            capacity_range=csi_pb2.CapacityRange(required_bytes=2 * GiB),
        ))
        assert grown.capacity_bytes == 2 * GiB

    def test_expansion_none_drops_the_capability_and_answers_unimplemented(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        proc = spawn_driver("--expansion", "none", "--no-node-expansion")
        ctx = make_sanity(proc)
        assert expansion_modes(ctx) == set()
        caps = ctx.stubs.controller.ControllerGetCapabilities(
            csi_pb2.ControllerGetCapabilitiesRequest()
        )
        assert CtrlCap.EXPAND_VOLUME not in {c.rpc.type for c in caps.capabilities}
        ncaps = ctx.stubs.node.NodeGetCapabilities(csi_pb2.NodeGetCapabilitiesRequest())
        assert NodeCap.EXPAND_VOLUME not in {c.rpc.type for c in ncaps.capabilities}
        vid = ctx.resources.must_create_volume(
            make_create_volume_req(unique_string("n"), GiB)
        ).volume.volume_id
        expect_error_code(
            ctx.stubs.controller.ControllerExpandVolume,
            expand_req(vid, 2 * GiB),
            grpc.StatusCode.UNIMPLEMENTED,
        )
        expect_error_code(
            ctx.stubs.node.NodeExpandVolume,
            csi_pb2.NodeExpandVolumeRequest(volume_id=vid, volume_path=ctx.target_path),
            grpc.StatusCode.UNIMPLEMENTED,
        )

    def test_without_node_expansion_the_controller_needs_no_node_step(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(spawn_driver("--no-node-expansion"))
        vid = ctx.resources.must_create_volume(
            make_create_volume_req(unique_string("nn"), GiB)
        ).volume.volume_id
        rsp = ctx.stubs.controller.ControllerExpandVolume(expand_req(vid, 2 * GiB))
        assert rsp.node_expansion_required is False


class TestControllerModifyVolume:
    def modify(self, ctx: SanityContext, vid: str, params: dict[str, str]) -> None:
        ctx.stubs.controller.ControllerModifyVolume(
            csi_pb2.ControllerModifyVolumeRequest(volume_id=vid, mutable_parameters=params)
        )

    def test_modify_is_idempotent(self, sanity: SanityContext) -> None:
        vid = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("m"), GiB)
        ).volume.volume_id
        self.modify(sanity, vid, {"iops": "5000"})
        self.modify(sanity, vid, {"iops": "5000"})

    def test_an_unknown_key_fails_invalid_argument_and_nothing_is_applied(
        self, sanity: SanityContext
    ) -> None:
        name = unique_string("m")
        req = make_create_volume_req(name, GiB)
        req.mutable_parameters["iops"] = "3000"
        vol = sanity.resources.must_create_volume(req)
        expect_error_code(
            sanity.stubs.controller.ControllerModifyVolume,
            csi_pb2.ControllerModifyVolumeRequest(
                volume_id=vol.volume.volume_id,
                mutable_parameters={"iops": "9000", "XXX_FakeKey": "1"},
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        # iops is still 3000, so repeating the original CreateVolume is still compatible.
        again = sanity.resources.must_create_volume(req)
        assert again.volume.volume_id == vol.volume.volume_id

    def test_accepted_names_follow_the_mutable_parameters_flag(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(spawn_driver("--mutable-parameters", "iops,throughput"))
        vid = ctx.resources.must_create_volume(
            make_create_volume_req(unique_string("m"), GiB)
        ).volume.volume_id
        self.modify(ctx, vid, {"throughput": "125", "iops": "100"})
        expect_error_code(
            ctx.stubs.controller.ControllerModifyVolume,
            csi_pb2.ControllerModifyVolumeRequest(volume_id=vid, mutable_parameters={"size": "1"}),
            grpc.StatusCode.INVALID_ARGUMENT,
        )

    def test_no_modify_volume_answers_unimplemented(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        ctx = make_sanity(spawn_driver("--no-modify-volume"))
        caps = ctx.stubs.controller.ControllerGetCapabilities(
            csi_pb2.ControllerGetCapabilitiesRequest()
        )
        assert CtrlCap.MODIFY_VOLUME not in {c.rpc.type for c in caps.capabilities}
        vid = ctx.resources.must_create_volume(
            make_create_volume_req(unique_string("m"), GiB)
        ).volume.volume_id
        expect_error_code(
            ctx.stubs.controller.ControllerModifyVolume,
            csi_pb2.ControllerModifyVolumeRequest(volume_id=vid, mutable_parameters={"iops": "1"}),
            grpc.StatusCode.UNIMPLEMENTED,
        )
