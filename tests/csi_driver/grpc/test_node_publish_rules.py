"""Node-side rules beyond csi-sanity: access modes at a second target, read-only
publishes, staging requirements, idempotent stage/publish, what NodeUnpublish removes,
block targets, and both mount methods (bind as root, symlink)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver, needs_root
from tests.csi_driver.grpc.node_flow import NodeFlow
from tests.csi_driver.grpc.sanity_support import (
    AccessMode,
    SanityContext,
    block_capability,
    expect_error_code,
    mount_capability,
    unique_string,
)

FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


@pytest.fixture
def flow(sanity: SanityContext) -> NodeFlow:
    return NodeFlow(sanity)


@pytest.fixture
def bind_flow(spawn_driver: SpawnDriver, make_sanity: MakeSanity) -> NodeFlow:
    """A driver that must bind mount (`--mount-method bind`), whatever the session uses."""
    return NodeFlow(make_sanity(spawn_driver("--mount-method", "bind", node_id="bind-node")))


def is_mount_point(path: str) -> bool:
    real = os.path.realpath(path)
    with open("/proc/self/mountinfo") as info:
        return any(line.split()[4] == real for line in info)


class TestSecondTargetOnOneNode:
    def test_single_node_writer_at_a_second_target_is_allowed_like_the_reference_driver(
        self, flow: NodeFlow
    ) -> None:
        """Spec table says FAILED_PRECONDITION; Kubernetes and csi-driver-host-path allow it."""
        cap = mount_capability(AccessMode.SINGLE_NODE_WRITER)
        vol, pub = flow.stage_and_publish(unique_string("snw"), cap)
        flow.res.node_publish(flow.publish_request(vol, pub, cap, flow.ctx.other_target_path))
        assert os.path.isdir(flow.ctx.other_target_path)

    def test_single_node_multi_writer_at_a_second_target_is_allowed(self, flow: NodeFlow) -> None:
        cap = mount_capability(AccessMode.SINGLE_NODE_MULTI_WRITER)
        vol, pub = flow.stage_and_publish(unique_string("snmw"), cap)
        flow.res.node_publish(flow.publish_request(vol, pub, cap, flow.ctx.other_target_path))

    def test_single_node_single_writer_repeat_at_the_same_target_is_idempotent(
        self, flow: NodeFlow
    ) -> None:
        cap = mount_capability(AccessMode.SINGLE_NODE_SINGLE_WRITER)
        vol, pub = flow.stage_and_publish(unique_string("snsw"), cap)
        flow.res.node_publish(flow.publish_request(vol, pub, cap))


class TestReadOnlyPublish:
    def test_multi_node_reader_only_without_readonly_fails_invalid_argument(
        self, flow: NodeFlow
    ) -> None:
        cap = mount_capability(AccessMode.MULTI_NODE_READER_ONLY)
        vol = flow.create_volume(unique_string("mnro"), cap)
        req = csi_pb2.ControllerPublishVolumeRequest(
            volume_id=vol.volume.volume_id,
            node_id="sanity-node",
            volume_capability=cap,
            readonly=True,
        )
        pub = flow.res.controller_publish(req)
        flow.node_stage(vol, pub, cap)
        expect_error_code(
            flow.res.node_publish,
            flow.publish_request(vol, pub, cap, readonly=False),
            grpc.StatusCode.INVALID_ARGUMENT,
        )
        assert not os.path.lexists(flow.ctx.target_path)
        flow.res.node_publish(flow.publish_request(vol, pub, cap, readonly=True))

    @needs_root
    def test_readonly_publish_refuses_writes_at_the_target(self, bind_flow: NodeFlow) -> None:
        flow = bind_flow
        vol = flow.create_volume(unique_string("ro"))
        pub = flow.controller_publish(vol, "bind-node")
        flow.node_stage(vol, pub)
        flow.res.node_publish(flow.publish_request(vol, pub, readonly=True))
        with pytest.raises(OSError) as err:
            Path(flow.ctx.target_path, "f").write_text("x")
        assert err.value.errno == errno.EROFS

    def test_same_target_with_a_different_readonly_flag_fails_already_exists(
        self, flow: NodeFlow
    ) -> None:
        vol, pub = flow.stage_and_publish(unique_string("ro-flip"))
        expect_error_code(
            flow.res.node_publish,
            flow.publish_request(vol, pub, readonly=True),
            grpc.StatusCode.ALREADY_EXISTS,
        )


class TestStaging:
    def test_publish_without_staging_path_fails_precondition(self, flow: NodeFlow) -> None:
        vol = flow.create_volume(unique_string("nostage"))
        pub = flow.controller_publish(vol, "sanity-node")
        flow.node_stage(vol, pub)
        req = flow.publish_request(vol, pub)
        req.staging_target_path = ""
        expect_error_code(flow.res.node_publish, req, FAILED_PRECONDITION)
        assert not os.path.lexists(flow.ctx.target_path)

    def test_publish_of_a_volume_that_is_not_staged_fails_precondition(
        self, flow: NodeFlow
    ) -> None:
        vol = flow.create_volume(unique_string("unstaged"))
        pub = flow.controller_publish(vol, "sanity-node")
        expect_error_code(
            flow.res.node_publish, flow.publish_request(vol, pub), FAILED_PRECONDITION
        )

    def test_stage_twice_compatibly_is_ok_and_incompatibly_already_exists(
        self, flow: NodeFlow
    ) -> None:
        vol = flow.create_volume(unique_string("stage2"))
        pub = flow.controller_publish(vol, "sanity-node")
        flow.node_stage(vol, pub)
        flow.node_stage(vol, pub)
        other = mount_capability(AccessMode.SINGLE_NODE_READER_ONLY)
        req = csi_pb2.NodeStageVolumeRequest(
            volume_id=vol.volume.volume_id,
            staging_target_path=flow.ctx.staging_path,
            volume_capability=other,
        )
        expect_error_code(flow.res.node_stage, req, grpc.StatusCode.ALREADY_EXISTS)

    def test_unstage_and_unpublish_of_what_is_not_there_answer_ok(self, flow: NodeFlow) -> None:
        vol = flow.create_volume(unique_string("absent"))
        vid = vol.volume.volume_id
        flow.ctx.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=vid, target_path=flow.ctx.target_path)
        )
        flow.ctx.stubs.node.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(
                volume_id=vid, staging_target_path=flow.ctx.staging_path
            )
        )

    def test_unstage_at_a_path_where_the_volume_is_not_staged_answers_ok(
        self, flow: NodeFlow
    ) -> None:
        """Spec (NodeUnstageVolume): "If the volume corresponding to the volume_id is not staged
        to the staging_target_path, the Plugin MUST reply 0 OK." The real stage stays."""
        vol = flow.create_volume(unique_string("elsewhere"))
        pub = flow.controller_publish(vol, "sanity-node")
        flow.node_stage(vol, pub)
        other = flow.ctx.base / "other-staging"
        other.mkdir()
        flow.ctx.stubs.node.NodeUnstageVolume(
            csi_pb2.NodeUnstageVolumeRequest(
                volume_id=vol.volume.volume_id, staging_target_path=str(other)
            )
        )
        flow.node_publish(vol, pub)  # still staged at the real staging path

    def test_paths_longer_than_128_bytes_are_accepted(self, flow: NodeFlow) -> None:
        """Spec: staging_target_path and target_path override the general size limit; the SP
        MUST accept at least 128 bytes and SHOULD support the OS maximum."""
        deep = flow.ctx.base / ("p" * 150)
        (deep / "stage").mkdir(parents=True)
        (deep / "mnt").mkdir()
        staging, target = str(deep / "stage"), str(deep / "mnt" / "target")
        assert len(staging.encode()) > 128 and len(target.encode()) > 128
        vol = flow.create_volume(unique_string("long"))
        pub = flow.controller_publish(vol, "sanity-node")
        flow.res.node_stage(
            csi_pb2.NodeStageVolumeRequest(
                volume_id=vol.volume.volume_id,
                staging_target_path=staging,
                volume_capability=mount_capability(),
            )
        )
        req = flow.publish_request(vol, pub, target=target)
        req.staging_target_path = staging
        flow.res.node_publish(req)
        assert os.path.isdir(target)
        stats = flow.ctx.stubs.node.NodeGetVolumeStats(
            csi_pb2.NodeGetVolumeStatsRequest(volume_id=vol.volume.volume_id, volume_path=target)
        )
        assert stats.usage


class TestTargets:
    @needs_root
    def test_mount_publish_bind_mounts_a_directory_that_holds_the_volume_data(
        self, bind_flow: NodeFlow
    ) -> None:
        flow = bind_flow
        vol, pub = flow.stage_and_publish(unique_string("data"))
        target = flow.ctx.target_path
        assert os.path.isdir(target) and is_mount_point(target)
        Path(target, "hello.txt").write_text("hello")
        flow.res.node_publish(flow.publish_request(vol, pub, target=flow.ctx.other_target_path))
        assert Path(flow.ctx.other_target_path, "hello.txt").read_text() == "hello"

    def test_block_publish_creates_a_file_target_and_unpublish_removes_it(
        self, flow: NodeFlow
    ) -> None:
        cap = block_capability()
        vol, _ = flow.stage_and_publish(unique_string("blk"), cap)
        target = flow.ctx.target_path
        assert os.path.exists(target) and not os.path.isdir(target)
        flow.ctx.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=vol.volume.volume_id, target_path=target)
        )
        assert not os.path.lexists(target)

    def test_symlink_mount_method_publishes_the_data_and_removes_the_link(
        self, spawn_driver: SpawnDriver, make_sanity: MakeSanity
    ) -> None:
        proc = spawn_driver("--mount-method", "symlink", node_id="n1")
        flow = NodeFlow(make_sanity(proc))
        vol = flow.create_volume(unique_string("sym"))
        pub = flow.controller_publish(vol, "n1")
        flow.node_stage(vol, pub)
        flow.node_publish(vol, pub)
        target = flow.ctx.target_path
        assert os.path.islink(target)
        Path(target, "via-link").write_text("x")
        flow.ctx.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=vol.volume.volume_id, target_path=target)
        )
        assert not os.path.lexists(target)
        flow.res.node_publish(flow.publish_request(vol, pub, target=flow.ctx.other_target_path))
        assert Path(flow.ctx.other_target_path, "via-link").read_text() == "x"

    def test_unpublish_naming_another_volume_leaves_the_publish_in_place(
        self, flow: NodeFlow
    ) -> None:
        flow.stage_and_publish(unique_string("mine"))
        other = flow.create_volume(unique_string("other"))
        Path(flow.ctx.target_path, "mine.txt").write_text("still mine")
        try:
            flow.ctx.stubs.node.NodeUnpublishVolume(
                csi_pb2.NodeUnpublishVolumeRequest(
                    volume_id=other.volume.volume_id, target_path=flow.ctx.target_path
                )
            )
        except grpc.RpcError as err:  # OK, or a refusal with a real code
            assert err.code() not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL)
        assert Path(flow.ctx.target_path, "mine.txt").read_text() == "still mine"


class TestInlineEphemeralVolumes:
    """Kubernetes inline ephemeral volumes (volume_context csi.storage.k8s.io/ephemeral=true):
    no CreateVolume, no controller calls, no stage; csi-driver-host-path creates the volume in
    NodePublish and deletes it in NodeUnpublish."""

    def publish(self, flow: NodeFlow, handle: str, target: str) -> None:
        flow.res.node_publish(
            csi_pb2.NodePublishVolumeRequest(
                volume_id=handle,
                target_path=target,
                volume_capability=mount_capability(),
                volume_context={"csi.storage.k8s.io/ephemeral": "true"},
            )
        )

    def unpublish(self, flow: NodeFlow, handle: str, target: str) -> None:
        flow.ctx.stubs.node.NodeUnpublishVolume(
            csi_pb2.NodeUnpublishVolumeRequest(volume_id=handle, target_path=target)
        )

    def test_publish_creates_the_volume_and_unpublish_deletes_it(self, flow: NodeFlow) -> None:
        handle = unique_string("csi-eph")
        target = flow.ctx.target_path
        self.publish(flow, handle, target)
        Path(target, "scratch").write_text("pod data")
        self.publish(flow, handle, target)  # a repeat is idempotent
        assert Path(target, "scratch").read_text() == "pod data"
        self.unpublish(flow, handle, target)
        assert not os.path.lexists(target)
        self.publish(flow, handle, target)
        assert not Path(target, "scratch").exists(), "the old ephemeral data was deleted"
        self.unpublish(flow, handle, target)
