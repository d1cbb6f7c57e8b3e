"""Snapshot and group-snapshot rules (pure domain).  Snapshots are fully copied
point-in-time images: they outlive their source volume (unless
``--snapshots-block-delete`` keeps the volume until they are deleted)."""

from __future__ import annotations

import time
import uuid

from csi_driver.domain.lookup import must_exist
from csi_driver.domain.pagination import decode_token, encode_token
from csi_driver.errors import AlreadyExists, InvalidArgument, NotFound
from csi_driver.state.records import GroupSnapshot, Snapshot, Volume
from csi_driver.state.store import Store
from csi_driver.state.volume_data import VolumeData


class Snapshots:
    def __init__(self, store: Store, data: VolumeData) -> None:
        self.store = store
        self.data = data

    def get(self, snapshot_id: str) -> Snapshot:
        return must_exist(self.store.get_snapshot(snapshot_id), "snapshot", snapshot_id)

    def _source(self, volume_id: str) -> Volume:
        return must_exist(self.store.get_volume(volume_id), "source volume", volume_id)

    def _cut(self, name: str, volume: Volume, params: dict[str, str], group_id: str) -> Snapshot:
        snapshot = Snapshot(
            snapshot_id=str(uuid.uuid4()),
            name=name,
            source_volume_id=volume.volume_id,
            size_bytes=volume.capacity_bytes,
            access_type=volume.access_type,
            created_at=time.time(),
            group_snapshot_id=group_id,
            parameters=dict(params),
        )
        self.data.take_snapshot(volume.volume_id, snapshot.snapshot_id, volume.access_type)
        return snapshot

    # CreateSnapshot --------------------------------------------------------

    def create_snapshot(
        self, name: str, source_volume_id: str, parameters: dict[str, str]
    ) -> Snapshot:
        """Same name + same source → the existing snapshot (OK); same name + another
        source → ALREADY_EXISTS; unknown source volume → NOT_FOUND."""
        existing = self.store.get_snapshot_by_name(name)
        if existing is not None:
            return self._same_source(existing, source_volume_id)
        volume = self._source(source_volume_id)
        snapshot = self._cut(name, volume, parameters, "")
        with self.store.transaction():
            raced = self.store.get_snapshot_by_name(name)
            if raced is None:
                self.store.insert_snapshot(snapshot)
                return snapshot
        self.data.delete_snapshot(snapshot.snapshot_id, snapshot.access_type)
        return self._same_source(raced, source_volume_id)

    @staticmethod
    def _same_source(existing: Snapshot, source_volume_id: str) -> Snapshot:
        if existing.source_volume_id != source_volume_id:
            raise AlreadyExists(
                f"snapshot {existing.name!r} exists for another source volume"
            )
        return existing

    # DeleteSnapshot --------------------------------------------------------

    def delete_snapshot(self, snapshot_id: str) -> None:
        """Unknown id → OK.  Part of a group snapshot → INVALID_ARGUMENT (delete the group)."""
        with self.store.transaction():
            snapshot = self.store.get_snapshot(snapshot_id)
            if snapshot is None:
                return
            if snapshot.group_snapshot_id:
                raise InvalidArgument(
                    f"snapshot {snapshot_id!r} belongs to group snapshot "
                    f"{snapshot.group_snapshot_id!r}; delete the group instead"
                )
            self.store.delete_snapshot(snapshot_id)
        self.data.delete_snapshot(snapshot_id, snapshot.access_type)

    # ListSnapshots ---------------------------------------------------------

    def list_snapshots(
        self, max_entries: int, starting_token: str, source_volume_id: str, snapshot_id: str
    ) -> tuple[list[Snapshot], str]:
        """Invalid token → ABORTED.  Filters that match nothing → empty list (not an error)."""
        if max_entries < 0:
            raise InvalidArgument("max_entries must not be negative")
        after = decode_token(starting_token)
        if snapshot_id:
            snapshot = self.store.get_snapshot(snapshot_id)
            found = [snapshot] if snapshot and snapshot.seq > after else []
            if source_volume_id:
                found = [s for s in found if s.source_volume_id == source_volume_id]
            return found, ""
        limit = max_entries + 1 if max_entries else -1
        snapshots = self.store.list_snapshots(after, limit, source_volume_id)
        next_token = ""
        if max_entries and len(snapshots) > max_entries:
            snapshots = snapshots[:max_entries]
            next_token = encode_token(snapshots[-1].seq)
        return snapshots, next_token

    # Group snapshots -------------------------------------------------------

    def get_group(self, group_id: str, snapshot_ids: tuple[str, ...]) -> GroupSnapshot:
        """Unknown → NOT_FOUND; snapshot_ids given but not the group's → INVALID_ARGUMENT."""
        group = self.store.get_group_snapshot(group_id)
        if group is None:
            raise NotFound(f"group snapshot {group_id!r} does not exist")
        self._check_members(group, snapshot_ids)
        return group

    @staticmethod
    def _check_members(group: GroupSnapshot, snapshot_ids: tuple[str, ...]) -> None:
        if snapshot_ids and sorted(snapshot_ids) != sorted(group.snapshot_ids):
            raise InvalidArgument("snapshot_ids do not match the group snapshot's members")

    def group_members(self, group: GroupSnapshot) -> list[Snapshot]:
        members = [self.store.get_snapshot(s) for s in group.snapshot_ids]
        return [s for s in members if s is not None]

    def create_group(
        self, name: str, source_volume_ids: tuple[str, ...], parameters: dict[str, str]
    ) -> GroupSnapshot:
        """Same name + same volumes and parameters → OK; otherwise ALREADY_EXISTS.
        All members are cut in one pass and recorded in one transaction."""
        if len(set(source_volume_ids)) != len(source_volume_ids):
            raise InvalidArgument("source_volume_ids must not repeat a volume")
        existing = self.store.get_group_snapshot_by_name(name)
        if existing is not None:
            return self._same_group(existing, source_volume_ids, parameters)
        volumes = [self._source(v) for v in source_volume_ids]
        group_id = str(uuid.uuid4())
        cut: list[Snapshot] = []
        try:
            for volume in volumes:
                cut.append(self._cut(f"{group_id}-{volume.volume_id}", volume, parameters,
                                     group_id))
            group = GroupSnapshot(
                group_snapshot_id=group_id,
                name=name,
                source_volume_ids=tuple(source_volume_ids),
                parameters=dict(parameters),
                created_at=time.time(),
                snapshot_ids=tuple(s.snapshot_id for s in cut),
            )
            with self.store.transaction():
                raced = self.store.get_group_snapshot_by_name(name)
                if raced is None:
                    for snapshot in cut:
                        self.store.insert_snapshot(snapshot)
                    self.store.insert_group_snapshot(group)
                    return group
        except BaseException:
            self._discard(cut)
            raise
        self._discard(cut)
        return self._same_group(raced, source_volume_ids, parameters)

    def _discard(self, snapshots: list[Snapshot]) -> None:
        for s in snapshots:
            self.data.delete_snapshot(s.snapshot_id, s.access_type)

    @staticmethod
    def _same_group(
        group: GroupSnapshot, source_volume_ids: tuple[str, ...], parameters: dict[str, str]
    ) -> GroupSnapshot:
        if sorted(group.source_volume_ids) != sorted(source_volume_ids) or \
                group.parameters != parameters:
            raise AlreadyExists(
                f"group snapshot {group.name!r} exists with other volumes or parameters"
            )
        return group

    def delete_group(self, group_id: str, snapshot_ids: tuple[str, ...]) -> None:
        """Unknown → OK; mismatched snapshot_ids → INVALID_ARGUMENT; deletes every member."""
        with self.store.transaction():
            group = self.store.get_group_snapshot(group_id)
            if group is None:
                return
            self._check_members(group, snapshot_ids)
            members = self.group_members(group)
            for snapshot in members:
                self.store.delete_snapshot(snapshot.snapshot_id)
            self.store.delete_group_snapshot(group_id)
        self._discard(members)
