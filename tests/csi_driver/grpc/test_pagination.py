"""ListVolumes / ListSnapshots pagination: max_entries honoured, next_token walks every
entry exactly once, an empty next_token ends the walk, a bad token is ABORTED."""

from __future__ import annotations

from collections.abc import Callable

import grpc
import pytest

from csi_protos import csi_pb2
from tests.csi_driver.grpc.conftest import MakeSanity, SpawnDriver
from tests.csi_driver.grpc.sanity_support import (
    GiB,
    SanityContext,
    expect_error_code,
    make_create_snapshot_req,
    make_create_volume_req,
    unique_string,
)


def walk(call: Callable, request_type: type, page: int) -> list[str]:
    """Follow next_token from the start; return the ids seen, in order."""
    seen: list[str] = []
    token = ""
    for _ in range(1000):
        rsp = call(request_type(max_entries=page, starting_token=token))
        assert len(rsp.entries) <= page
        for entry in rsp.entries:
            seen.append(
                entry.volume.volume_id if hasattr(entry, "volume") else entry.snapshot.snapshot_id
            )
        token = rsp.next_token
        if not token:
            return seen
        assert rsp.entries, "a page with a next_token must not be empty"
    raise AssertionError("next_token never ended")


@pytest.fixture
def fresh(spawn_driver: SpawnDriver, make_sanity: MakeSanity) -> SanityContext:
    return make_sanity(spawn_driver())


class TestListVolumesPagination:
    def test_pages_of_two_visit_every_volume_once(self, fresh: SanityContext) -> None:
        made = {
            fresh.resources.must_create_volume(
                make_create_volume_req(unique_string(f"p{i}"), GiB)
            ).volume.volume_id
            for i in range(5)
        }
        seen = walk(fresh.stubs.controller.ListVolumes, csi_pb2.ListVolumesRequest, 2)
        assert len(seen) == len(set(seen)) == 5
        assert set(seen) == made

    def test_zero_max_entries_returns_everything(self, fresh: SanityContext) -> None:
        for i in range(3):
            fresh.resources.must_create_volume(make_create_volume_req(unique_string(f"z{i}"), GiB))
        rsp = fresh.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest())
        assert len(rsp.entries) == 3
        assert rsp.next_token == ""

    def test_negative_max_entries_is_invalid_argument(self, sanity: SanityContext) -> None:
        expect_error_code(
            sanity.stubs.controller.ListVolumes,
            csi_pb2.ListVolumesRequest(max_entries=-1),
            grpc.StatusCode.INVALID_ARGUMENT,
        )

    def test_tokens_stay_valid_when_listed_volumes_are_deleted_between_pages(
        self, fresh: SanityContext
    ) -> None:
        """Port of csi-sanity's pending spec (XIt, not among its 95): "pagination should detect
        volumes added between pages and accept tokens when the last volume from a page is
        deleted" — no duplicates, nothing that was deleted, no more than what remains."""
        existing = {
            fresh.resources.must_create_volume(
                make_create_volume_req(unique_string(f"x{i}"), GiB)
            ).volume.volume_id
            for i in range(3)
        }
        first = fresh.stubs.controller.ListVolumes(csi_pb2.ListVolumesRequest(max_entries=2))
        assert len(first.entries) == 2 and first.next_token
        for entry in first.entries:
            assert entry.volume.volume_id in existing
            fresh.resources.delete_volume(entry.volume.volume_id)
            existing.discard(entry.volume.volume_id)
        added = fresh.resources.must_create_volume(make_create_volume_req("new-addition", GiB))
        existing.add(added.volume.volume_id)
        rest = fresh.stubs.controller.ListVolumes(
            csi_pb2.ListVolumesRequest(starting_token=first.next_token)
        )
        ids = [e.volume.volume_id for e in rest.entries]
        assert len(ids) == len(set(ids)) <= 3 - 2 + 1
        assert set(ids) <= existing


class TestListSnapshotsPagination:
    def test_pages_of_two_visit_every_snapshot_once(self, fresh: SanityContext) -> None:
        vid = fresh.resources.must_create_volume(
            make_create_volume_req(unique_string("src"), GiB)
        ).volume.volume_id
        made = {
            fresh.resources.must_create_snapshot(
                make_create_snapshot_req(unique_string(f"s{i}"), vid)
            ).snapshot.snapshot_id
            for i in range(5)
        }
        seen = walk(fresh.stubs.controller.ListSnapshots, csi_pb2.ListSnapshotsRequest, 2)
        assert len(seen) == len(set(seen)) == 5
        assert set(seen) == made

    def test_an_invalid_starting_token_is_aborted(self, sanity: SanityContext) -> None:
        expect_error_code(
            sanity.stubs.controller.ListSnapshots,
            csi_pb2.ListSnapshotsRequest(starting_token="invalid-token"),
            grpc.StatusCode.ABORTED,
        )


# Tokens we never hand out: '²' passes str.isdigit() but not int(); Arabic-Indic digits
# pass both; 30 digits overflow SQLite's INTEGER; signs, spaces and leading zeros are not
# ours either.
MALFORMED_TOKENS = ["p²", "p\u0661\u0662", "p" + "9" * 30, "p9223372036854775808", "p-1",
                    "p 1", "p01", "p", "1"]


@pytest.mark.parametrize("token", MALFORMED_TOKENS)
@pytest.mark.parametrize("rpc", ["ListVolumes", "ListSnapshots"])
def test_a_malformed_starting_token_is_aborted(
    sanity: SanityContext, rpc: str, token: str
) -> None:
    request = getattr(csi_pb2, f"{rpc}Request")(starting_token=token)
    expect_error_code(getattr(sanity.stubs.controller, rpc), request, grpc.StatusCode.ABORTED)


def test_the_largest_sequence_sqlite_holds_is_a_valid_token_past_the_end(
    sanity: SanityContext,
) -> None:
    rsp = sanity.stubs.controller.ListVolumes(
        csi_pb2.ListVolumesRequest(starting_token=f"p{(1 << 63) - 1}")
    )
    assert not rsp.entries and not rsp.next_token
