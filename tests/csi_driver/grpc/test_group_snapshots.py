"""VolumeGroupSnapshots beyond csi-sanity: create, idempotent repeat, ALREADY_EXISTS,
get (with and without a mismatching snapshot list), delete, restore from a member."""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    PluginService,
    SanityContext,
    expect_error_code,
    make_create_volume_req,
    plugin_services,
    unique_string,
    verify_snapshot_info,
)


@pytest.fixture
def ctx(sanity: SanityContext) -> SanityContext:
    if PluginService.GROUP_CONTROLLER_SERVICE not in plugin_services(sanity.stubs):
        pytest.skip("GroupController service not advertised")
    return sanity


def volumes(ctx: SanityContext, count: int) -> list[str]:
    return [
        ctx.resources.must_create_volume(
            make_create_volume_req(unique_string(f"g{i}"), GiB)
        ).volume.volume_id
        for i in range(count)
    ]


def create_group(
    ctx: SanityContext, name: str, sources: list[str]
) -> csi_pb2.CreateVolumeGroupSnapshotResponse:
    return ctx.resources.create_group_snapshot(
        csi_pb2.CreateVolumeGroupSnapshotRequest(name=name, source_volume_ids=sources)
    )


class TestVolumeGroupSnapshots:
    def test_create_snapshots_every_member_and_a_repeat_is_idempotent(
        self, ctx: SanityContext
    ) -> None:
        sources = volumes(ctx, 2)
        name = unique_string("grp")
        first = create_group(ctx, name, sources).group_snapshot
        assert first.group_snapshot_id
        assert first.ready_to_use is True
        assert first.HasField("creation_time")
        assert sorted(s.source_volume_id for s in first.snapshots) == sorted(sources)
        for snap in first.snapshots:
            verify_snapshot_info(snap)
            assert snap.group_snapshot_id == first.group_snapshot_id
        again = create_group(ctx, name, sources).group_snapshot
        assert again.group_snapshot_id == first.group_snapshot_id
        assert sorted(s.snapshot_id for s in again.snapshots) == sorted(
            s.snapshot_id for s in first.snapshots
        )

    def test_same_name_with_other_sources_fails_already_exists(self, ctx: SanityContext) -> None:
        a, b, c = volumes(ctx, 3)
        name = unique_string("grp")
        create_group(ctx, name, [a, b])
        expect_error_code(
            ctx.stubs.group_controller.CreateVolumeGroupSnapshot,
            csi_pb2.CreateVolumeGroupSnapshotRequest(name=name, source_volume_ids=[a, c]),
            grpc.StatusCode.ALREADY_EXISTS,
        )

    def test_missing_source_volumes_fail_invalid_argument(self, ctx: SanityContext) -> None:
        expect_error_code(
            ctx.stubs.group_controller.CreateVolumeGroupSnapshot,
            csi_pb2.CreateVolumeGroupSnapshotRequest(name=unique_string("grp")),
            grpc.StatusCode.INVALID_ARGUMENT,
        )

    def test_get_returns_the_group_and_a_mismatching_list_is_invalid_argument(
        self, ctx: SanityContext
    ) -> None:
        group = create_group(ctx, unique_string("grp"), volumes(ctx, 2)).group_snapshot
        ids = [s.snapshot_id for s in group.snapshots]
        got = ctx.stubs.group_controller.GetVolumeGroupSnapshot(
            csi_pb2.GetVolumeGroupSnapshotRequest(
                group_snapshot_id=group.group_snapshot_id, snapshot_ids=ids
            )
        )
        assert got.group_snapshot.group_snapshot_id == group.group_snapshot_id
        assert sorted(s.snapshot_id for s in got.group_snapshot.snapshots) == sorted(ids)
        expect_error_code(
            ctx.stubs.group_controller.GetVolumeGroupSnapshot,
            csi_pb2.GetVolumeGroupSnapshotRequest(
                group_snapshot_id=group.group_snapshot_id, snapshot_ids=ids[:1]
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
        )

    def test_delete_removes_the_group_and_its_member_snapshots(self, ctx: SanityContext) -> None:
        group = create_group(ctx, unique_string("grp"), volumes(ctx, 2)).group_snapshot
        gid = group.group_snapshot_id
        ctx.stubs.group_controller.DeleteVolumeGroupSnapshot(
            csi_pb2.DeleteVolumeGroupSnapshotRequest(
                group_snapshot_id=gid, snapshot_ids=[s.snapshot_id for s in group.snapshots]
            )
        )
        expect_error_code(
            ctx.stubs.group_controller.GetVolumeGroupSnapshot,
            csi_pb2.GetVolumeGroupSnapshotRequest(group_snapshot_id=gid),
            grpc.StatusCode.NOT_FOUND,
        )
        for snap in group.snapshots:
            expect_error_code(
                ctx.stubs.controller.GetSnapshot,
                csi_pb2.GetSnapshotRequest(snapshot_id=snap.snapshot_id),
                grpc.StatusCode.NOT_FOUND,
            )

    def test_a_member_snapshot_restores_into_a_volume(self, ctx: SanityContext) -> None:
        group = create_group(ctx, unique_string("grp"), volumes(ctx, 2)).group_snapshot
        req = make_create_volume_req(unique_string("from-member"), GiB)
        req.volume_content_source.snapshot.snapshot_id = group.snapshots[0].snapshot_id
        vol = ctx.resources.must_create_volume(req)
        assert vol.volume.content_source.snapshot.snapshot_id == group.snapshots[0].snapshot_id

    def test_no_group_snapshots_flag_hides_the_service(self, spawn_driver: SpawnDriver) -> None:
        proc = spawn_driver("--no-group-snapshots")
        assert PluginService.GROUP_CONTROLLER_SERVICE not in plugin_services(proc.stubs)
        expect_error_code(
            proc.stubs.group_controller.CreateVolumeGroupSnapshot,
            csi_pb2.CreateVolumeGroupSnapshotRequest(name="g", source_volume_ids=["v"]),
            grpc.StatusCode.UNIMPLEMENTED,
        )
