"""csi-sanity port: "ListSnapshots", "GetSnapshot", "DeleteSnapshot", "CreateSnapshot"
[Controller Server] (pkg/sanity/controller.go, 18 specs).
"""

from __future__ import annotations

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.sanity_support import (
    MAX_NAME_LENGTH,
    CtrlCap,
    SanityContext,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    require_controller_capability,
    unique_string,
    unique_string_with_length,
    valid_volume_id,
    verify_snapshot_info,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


def three_snapshots(ctx: SanityContext, tag: str) -> csi_pb2.CreateSnapshotResponse:
    """One target snapshot between two unrelated ones, each of its own volume."""
    res = ctx.resources
    res.must_create_snapshot_from_volume_request(
        make_create_volume_req(unique_string(f"{tag}-volume-unrelated-1")),
        unique_string(f"{tag}-snapshot-unrelated-1"),
    )
    target, _ = res.must_create_snapshot_from_volume_request(
        make_create_volume_req(unique_string(f"{tag}-volume-target")),
        unique_string(f"{tag}-snapshot-target"),
    )
    res.must_create_snapshot_from_volume_request(
        make_create_volume_req(unique_string(f"{tag}-volume-unrelated-2")),
        unique_string(f"{tag}-snapshot-unrelated-2"),
    )
    return target


class TestListSnapshots:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.LIST_SNAPSHOTS, "ListSnapshots")

    def list(self, ctx: SanityContext, **kw: object) -> csi_pb2.ListSnapshotsResponse:
        return ctx.stubs.controller.ListSnapshots(csi_pb2.ListSnapshotsRequest(**kw))  # type: ignore[arg-type]

    def test_should_return_appropriate_values_no_optional_values_added(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return appropriate values (no optional values added)."""
        sanity.resources.must_create_snapshot_from_volume_request(
            make_create_volume_req(unique_string("listSnapshots-volume")),
            unique_string("listSnapshots"),
        )
        rsp = self.list(sanity)
        assert rsp.entries
        for entry in rsp.entries:
            verify_snapshot_info(entry.snapshot)

    def test_should_return_snapshots_that_match_the_specified_snapshot_id(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return snapshots that match the specified snapshot id."""
        target = three_snapshots(sanity, "listSnapshots-s")
        rsp = self.list(sanity, snapshot_id=target.snapshot.snapshot_id)
        assert len(rsp.entries) == 1
        verify_snapshot_info(rsp.entries[0].snapshot)
        assert rsp.entries[0].snapshot.snapshot_id == target.snapshot.snapshot_id

    def test_should_return_empty_when_the_specified_snapshot_id_does_not_exist(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return empty when the specified snapshot id does not exist."""
        assert list(self.list(sanity, snapshot_id="none-exist-id").entries) == []

    def test_should_return_snapshots_that_match_the_specified_source_volume_id(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return snapshots that match the specified source volume id."""
        target = three_snapshots(sanity, "listSnapshots-v")
        rsp = self.list(sanity, source_volume_id=target.snapshot.source_volume_id)
        assert len(rsp.entries) == 1
        verify_snapshot_info(rsp.entries[0].snapshot)
        assert rsp.entries[0].snapshot.source_volume_id == target.snapshot.source_volume_id

    def test_should_return_empty_when_the_specified_source_volume_id_does_not_exist(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return empty when the specified source volume id does not
        exist."""
        assert list(self.list(sanity, source_volume_id=valid_volume_id()).entries) == []

    def test_check_the_presence_of_new_snapshots_in_the_snapshot_list(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / check the presence of new snapshots in the snapshot list."""
        total = len(self.list(sanity).entries)
        snap, _ = sanity.resources.must_create_snapshot_from_volume_request(
            make_create_volume_req(unique_string("listSnapshots-volume-3")),
            unique_string("listSnapshots-snapshot-3"),
        )
        assert len(self.list(sanity).entries) == total + 1
        sanity.resources.delete_snapshot(snap.snapshot.snapshot_id)
        assert len(self.list(sanity).entries) == total

    def test_should_return_next_token_when_a_limited_number_of_entries_are_requested(
        self, sanity: SanityContext
    ) -> None:
        """ListSnapshots / should return next token when a limited number of entries are
        requested."""
        total = len(self.list(sanity).entries)
        for i in range(max(0, 5 - total)):
            sanity.resources.must_create_snapshot_from_volume_request(
                make_create_volume_req(unique_string(f"volume{i}")), unique_string(f"snapshot{i}")
            )
        total = max(total, 5)
        first = self.list(sanity, max_entries=2)
        assert len(first.entries) == 2
        assert first.next_token
        rest = self.list(sanity, starting_token=first.next_token)
        assert len(rest.entries) == total - 2


class TestGetSnapshot:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(sanity.stubs, CtrlCap.GET_SNAPSHOT, "GetSnapshot")

    def test_should_return_an_error(self, sanity: SanityContext) -> None:
        """GetSnapshot / should return an error (no snapshot id: the spec's code is
        INVALID_ARGUMENT)."""
        expect_error_code(
            sanity.stubs.controller.GetSnapshot, csi_pb2.GetSnapshotRequest(), INVALID
        )

    def test_should_return_snapshot_that_match_the_specified_snapshot_id(
        self, sanity: SanityContext
    ) -> None:
        """GetSnapshot / should return snapshot that match the specified snapshot id."""
        target = three_snapshots(sanity, "getSnapshot-s")
        rsp = sanity.stubs.controller.GetSnapshot(
            csi_pb2.GetSnapshotRequest(snapshot_id=target.snapshot.snapshot_id)
        )
        verify_snapshot_info(rsp.snapshot)
        assert rsp.snapshot.snapshot_id == target.snapshot.snapshot_id

    def test_should_return_an_error_when_the_specified_snapshot_id_does_not_exist(
        self, sanity: SanityContext
    ) -> None:
        """GetSnapshot / should return an error when the specified snapshot id does not exist."""
        expect_error_code(
            sanity.stubs.controller.GetSnapshot,
            csi_pb2.GetSnapshotRequest(snapshot_id="none-exist-id"),
            grpc.StatusCode.NOT_FOUND,
        )


class TestDeleteSnapshot:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(
            sanity.stubs, CtrlCap.CREATE_DELETE_SNAPSHOT, "DeleteSnapshot"
        )

    def test_should_fail_when_no_snapshot_id_is_provided(self, sanity: SanityContext) -> None:
        """DeleteSnapshot / should fail when no snapshot id is provided."""
        expect_error_code(
            sanity.stubs.controller.DeleteSnapshot, csi_pb2.DeleteSnapshotRequest(), INVALID
        )

    def test_should_succeed_when_an_invalid_snapshot_id_is_used(
        self, sanity: SanityContext
    ) -> None:
        """DeleteSnapshot / should succeed when an invalid snapshot id is used."""
        sanity.stubs.controller.DeleteSnapshot(
            csi_pb2.DeleteSnapshotRequest(snapshot_id="reallyfakesnapshotid")
        )

    def test_should_return_appropriate_values_no_optional_values_added(
        self, sanity: SanityContext
    ) -> None:
        """DeleteSnapshot / should return appropriate values (no optional values added)."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("DeleteSnapshot-volume-1"))
        )
        snap = sanity.resources.must_create_snapshot(
            make_create_snapshot_req(
                unique_string("DeleteSnapshot-snapshot-1"), vol.volume.volume_id
            )
        )
        sanity.resources.delete_snapshot(snap.snapshot.snapshot_id)


class TestCreateSnapshot:
    @pytest.fixture(autouse=True)
    def _gate(self, sanity: SanityContext) -> None:
        require_controller_capability(
            sanity.stubs, CtrlCap.CREATE_DELETE_SNAPSHOT, "CreateSnapshot"
        )

    def test_should_fail_when_no_name_is_provided(self, sanity: SanityContext) -> None:
        """CreateSnapshot / should fail when no name is provided."""
        expect_error_code(
            sanity.resources.create_snapshot,
            csi_pb2.CreateSnapshotRequest(source_volume_id="testId"),
            INVALID,
        )

    def test_should_fail_when_no_source_volume_id_is_provided(self, sanity: SanityContext) -> None:
        """CreateSnapshot / should fail when no source volume id is provided."""
        expect_error_code(
            sanity.resources.create_snapshot, csi_pb2.CreateSnapshotRequest(name="name"), INVALID
        )

    def test_should_succeed_with_already_existing_name_and_same_source_volume_id(
        self, sanity: SanityContext
    ) -> None:
        """CreateSnapshot / should succeed when requesting to create a snapshot with already
        existing name and same source volume ID."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("CreateSnapshot-volume-1"))
        )
        req = make_create_snapshot_req(
            unique_string("CreateSnapshot-snapshot-1"), vol.volume.volume_id
        )
        first = sanity.resources.must_create_snapshot(req)
        second = sanity.resources.must_create_snapshot(req)
        assert first.snapshot.snapshot_id == second.snapshot.snapshot_id

    def test_should_fail_with_already_existing_name_and_different_source_volume_id(
        self, sanity: SanityContext
    ) -> None:
        """CreateSnapshot / should fail when requesting to create a snapshot with already existing
        name and different source volume ID."""
        name = unique_string("CreateSnapshot-snapshot-2")
        sanity.resources.must_create_snapshot_from_volume_request(
            make_create_volume_req(unique_string("CreateSnapshot-volume-2")), name
        )
        vol2 = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("CreateSnapshot-volume-3"))
        )
        expect_error_code(
            sanity.resources.create_snapshot,
            make_create_snapshot_req(name, vol2.volume.volume_id),
            grpc.StatusCode.ALREADY_EXISTS,
        )

    def test_should_succeed_when_creating_snapshot_with_maximum_length_name(
        self, sanity: SanityContext
    ) -> None:
        """CreateSnapshot / should succeed when creating snapshot with maximum-length name."""
        vol = sanity.resources.must_create_volume(
            make_create_volume_req(unique_string("CreateSnapshot-volume-maxlen-name"))
        )
        name = unique_string_with_length("CreateSnapshot-snapshot-maxlen", MAX_NAME_LENGTH)
        req = make_create_snapshot_req(name, vol.volume.volume_id)
        sanity.resources.must_create_snapshot(req)
        sanity.resources.must_create_snapshot(req)
