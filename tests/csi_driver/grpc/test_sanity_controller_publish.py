"""csi-sanity port: "Controller Service [Controller Server]" (pkg/sanity/controller.go),
the attach half: ControllerPublishVolume, volume lifecycle, ControllerUnpublishVolume.
"""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    IDEMPOTENT_COUNT,
    CtrlCap,
    Resources,
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    mount_capability,
    require_controller_capability,
    unique_string,
    valid_node_id,
    valid_volume_id,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def node_info(res: Resources) -> csi_pb2.NodeGetInfoResponse:
    info = res.stubs.node.NodeGetInfo(csi_pb2.NodeGetInfoRequest())
    assert info.node_id
    return info


class TestControllerPublishVolume:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(
            sanity.stubs, CtrlCap.PUBLISH_UNPUBLISH_VOLUME, "ControllerPublishVolume"
        )

    def test_should_fail_when_no_volume_id_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerPublishVolume / should fail when no volume id is
        provided."""
        expect_error_code(
            sanity.resources.controller_publish, csi_pb2.ControllerPublishVolumeRequest(), INVALID
        )

    def test_should_fail_when_no_node_id_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerPublishVolume / should fail when no node id is
        provided."""
        expect_error_code(
            sanity.resources.controller_publish,
            csi_pb2.ControllerPublishVolumeRequest(volume_id=valid_volume_id()),
            INVALID,
        )

    def test_should_fail_when_no_volume_capability_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerPublishVolume / should fail when no volume capability is
        provided."""
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=valid_volume_id(), node_id=valid_node_id()
        )
        expect_error_code(sanity.resources.controller_publish, req, INVALID)

    def test_should_fail_when_publishing_more_volumes_than_the_node_max_attach_limit(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        """Controller Service / ControllerPublishVolume / should fail when publishing more volumes
        than the node max attach limit (csi-sanity's -testnodevolumeattachlimit, enabled here on a
        driver started with --max-volumes-per-node 2)."""
        ctx = make_sanity(spawn_driver("--max-volumes-per-node", "2"))
        res = ctx.resources
        info = node_info(res)
        assert info.max_volumes_per_node == 2
        for i in range(info.max_volumes_per_node):
            vol = res.must_create_volume(
                make_create_volume_req(unique_string(f"sanity-max-attach-{i}"))
            )
            res.controller_publish(
                res.make_controller_publish_req(vol.volume.volume_id, info.node_id)
            )
        extra = res.must_create_volume(
            make_create_volume_req(unique_string("sanity-max-attach-extra"))
        )
        # csi-sanity only asks for an error; the spec names the code.
        expect_error_code(
            res.controller_publish,
            res.make_controller_publish_req(extra.volume.volume_id, info.node_id),
            grpc.StatusCode.RESOURCE_EXHAUSTED,
        )

    def test_should_fail_when_the_volume_does_not_exist(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerPublishVolume / should fail when the volume does not
        exist."""
        req = sanity.resources.make_controller_publish_req(valid_volume_id(), valid_node_id())
        expect_error_code(sanity.resources.controller_publish, req, grpc.StatusCode.NOT_FOUND)

    def test_should_fail_when_the_node_does_not_exist(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerPublishVolume / should fail when the node does not
        exist."""
        res = sanity.resources
        vol = res.must_create_volume(make_create_volume_req(unique_string("sanity-wrong-node")))
        req = res.make_controller_publish_req(vol.volume.volume_id, valid_node_id())
        expect_error_code(res.controller_publish, req, grpc.StatusCode.NOT_FOUND)

    def test_should_fail_when_the_volume_is_already_published_but_is_incompatible(
        self, sanity: SanityContext
    ) -> None:
        """Controller Service / ControllerPublishVolume / should fail when the volume is already
        published but is incompatible."""
        require_controller_capability(sanity.stubs, CtrlCap.PUBLISH_READONLY, "readonly publish")
        res = sanity.resources
        vol = res.must_create_volume(
            make_create_volume_req(unique_string("sanity-published-incompat"))
        )
        info = node_info(res)
        req = res.make_controller_publish_req(vol.volume.volume_id, info.node_id)
        res.controller_publish(req)
        req.readonly = True
        expect_error_code(res.controller_publish, req, grpc.StatusCode.ALREADY_EXISTS)


def volume_lifecycle(res: Resources, count: int) -> None:
    """csi-sanity's VolumeLifecycle: create in the node's topology, publish `count` times."""
    info = node_info(res)
    req = make_create_volume_req(unique_string(f"sanity-controller-publish-{count}"))
    if info.HasField("accessible_topology"):
        req.accessibility_requirements.requisite.append(info.accessible_topology)
    vol = res.must_create_volume(req)
    contexts = []
    for _ in range(count):
        rsp = res.controller_publish(
            csi_pb2.ControllerPublishVolumeRequest(
                volume_id=vol.volume.volume_id,
                node_id=info.node_id,
                volume_capability=mount_capability(),
                volume_context=vol.volume.volume_context,
            )
        )
        contexts.append(dict(rsp.publish_context))
    assert all(c == contexts[0] for c in contexts), "repeats must answer the same publish_context"


class TestVolumeLifecycle:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(
            sanity.stubs, CtrlCap.PUBLISH_UNPUBLISH_VOLUME, "Controller Publish, UnpublishVolume"
        )

    def test_should_work(self, sanity: SanityContext) -> None:
        """Controller Service / volume lifecycle / should work."""
        volume_lifecycle(sanity.resources, 1)

    def test_should_be_idempotent(self, sanity: SanityContext) -> None:
        """Controller Service / volume lifecycle / should be idempotent."""
        volume_lifecycle(sanity.resources, IDEMPOTENT_COUNT)


class TestControllerUnpublishVolume:
    def test_should_fail_when_no_volume_id_is_provided(self, sanity: SanityContext) -> None:
        """Controller Service / ControllerUnpublishVolume / should fail when no volume id is
        provided."""
        require_controller_capability(
            sanity.stubs, CtrlCap.PUBLISH_UNPUBLISH_VOLUME, "ControllerUnpublishVolume"
        )
        expect_error_code(
            sanity.stubs.controller.ControllerUnpublishVolume,
            csi_pb2.ControllerUnpublishVolumeRequest(),
            INVALID,
        )
