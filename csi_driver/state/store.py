"""Durable shared state: one SQLite database (WAL) per state dir.

Several driver processes (a controller and N nodes) open the same file; it is
the "storage array".  Every lookup goes through a primary key or an index so
the cost of an RPC does not grow with the number of volumes.  Writers call the
mutators inside ``transaction()`` (BEGIN IMMEDIATE), so a check and the write
that depends on it happen atomically across processes.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from dataclasses import fields
from typing import Any, TypeVar

from csi_driver.state import private_files
from csi_driver.state.bindings import BindingTables, dump_json
from csi_driver.state.records import (
    GroupSnapshot,
    Snapshot,
    Volume,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS volumes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    volume_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    capacity_bytes INTEGER NOT NULL,
    pool TEXT NOT NULL,
    access_type TEXT NOT NULL,
    parameters TEXT NOT NULL,
    mutable_parameters TEXT NOT NULL,
    accessible_topology TEXT NOT NULL,
    source_type TEXT NOT NULL,
    source_id TEXT NOT NULL,
    request_fingerprint TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS pool_usage (
    pool TEXT PRIMARY KEY,
    used_bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    snapshot_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL UNIQUE,
    source_volume_id TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    access_type TEXT NOT NULL,
    created_at REAL NOT NULL,
    group_snapshot_id TEXT NOT NULL,
    parameters TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS snapshots_by_source ON snapshots (source_volume_id, seq);
CREATE TABLE IF NOT EXISTS group_snapshots (
    group_snapshot_id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    source_volume_ids TEXT NOT NULL,
    parameters TEXT NOT NULL,
    created_at REAL NOT NULL,
    snapshot_ids TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS nodes (
    node_id TEXT PRIMARY KEY,
    topology TEXT NOT NULL,
    max_volumes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS attachments (
    volume_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    readonly INTEGER NOT NULL,
    capability TEXT NOT NULL,
    PRIMARY KEY (volume_id, node_id)
);
CREATE INDEX IF NOT EXISTS attachments_by_node ON attachments (node_id);
CREATE TABLE IF NOT EXISTS stages (
    volume_id TEXT NOT NULL,
    node_id TEXT NOT NULL,
    staging_path TEXT NOT NULL,
    capability TEXT NOT NULL,
    PRIMARY KEY (volume_id, node_id)
);
CREATE TABLE IF NOT EXISTS publishes (
    node_id TEXT NOT NULL,
    target_path TEXT NOT NULL,
    volume_id TEXT NOT NULL,
    staging_path TEXT NOT NULL,
    readonly INTEGER NOT NULL,
    capability TEXT NOT NULL,
    method TEXT NOT NULL,
    created_target INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (node_id, target_path)
);
CREATE INDEX IF NOT EXISTS publishes_by_volume ON publishes (volume_id, node_id);
"""
# Columns added after a release: (table, column, definition), added to older state dirs.
ADDED_COLUMNS = (
    ("publishes", "created_target", "INTEGER NOT NULL DEFAULT 1"),
)


R = TypeVar("R", Volume, Snapshot, GroupSnapshot)

# How a column of a record type is kept: JSON text for dicts/lists, a JSON list for tuples.
_DECODERS: dict[str, Callable[[Any], Any]] = {
    "dict": json.loads, "list": json.loads, "tuple": lambda text: tuple(json.loads(text))}


_COLUMNS: dict[type, tuple[tuple[str, Callable[[Any], Any] | None], ...]] = {
    record: tuple((f.name, _DECODERS.get(str(f.type).split("[", 1)[0])) for f in fields(record))
    for record in (Volume, Snapshot, GroupSnapshot)
}


def _decode(record: type[R], row: sqlite3.Row) -> R:
    """The record a row holds: one column per dataclass field, of the same name."""
    return record(**{name: decoder(row[name]) if decoder else row[name]
                     for name, decoder in _COLUMNS[record]})


def _record(record: type[R], row: sqlite3.Row | None) -> R | None:
    return None if row is None else _decode(record, row)


class Store(BindingTables):
    """Typed access to the shared state database."""

    def __init__(self, state_dir: str, wait_for_disk: bool = False) -> None:
        """``wait_for_disk``: every commit fsyncs (``--durability host``); otherwise a
        commit survives kill -9 of the process but not a host crash (see ``db``)."""
        private_files.make_dir(state_dir)
        path = os.path.join(state_dir, "state.db")
        # SQLite gives the -wal and -shm files it creates the database file's mode.
        private_files.make_file(path)
        for name in (path + "-wal", path + "-shm"):
            private_files.tighten_file(name)
        super().__init__(path, SCHEMA, wait_for_disk, ADDED_COLUMNS)

    def _row(self, table: str, column: str, value: str) -> sqlite3.Row | None:
        """The row of ``table`` whose unique ``column`` (an id or the name) is ``value``;
        ``table`` and ``column`` are this module's own names, never input."""
        return self._one(f"SELECT * FROM {table} WHERE {column}=?", value)

    def counts(self) -> dict[str, int]:
        """How many volumes and snapshots are recorded (for the metrics)."""
        row = self._one("SELECT (SELECT COUNT(*) FROM volumes) AS volumes, "
                        "(SELECT COUNT(*) FROM snapshots) AS snapshots")
        return {"volumes": int(row["volumes"]), "snapshots": int(row["snapshots"])} \
            if row is not None else {}

    # volumes ---------------------------------------------------------------

    def get_volume(self, volume_id: str) -> Volume | None:
        return _record(Volume, self._row("volumes", "volume_id", volume_id))

    def get_volume_by_name(self, name: str) -> Volume | None:
        return _record(Volume, self._row("volumes", "name", name))

    def insert_volume(self, v: Volume) -> bool:
        """Insert and account the capacity; False when the name is already taken."""
        inserted = self._exec(
            "INSERT OR IGNORE INTO volumes (volume_id, name, capacity_bytes, pool, access_type,"
            " parameters, mutable_parameters, accessible_topology, source_type, source_id,"
            " request_fingerprint, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            v.volume_id, v.name, v.capacity_bytes, v.pool, v.access_type, dump_json(v.parameters),
            dump_json(v.mutable_parameters), dump_json(v.accessible_topology), v.source_type,
            v.source_id, v.request_fingerprint, v.created_at,
        )
        if inserted:
            self._add_pool_usage(v.pool, v.capacity_bytes)
        return bool(inserted)

    def volume_in_use(self, volume_id: str, snapshots_hold: bool = False) -> str:
        """Why the volume cannot be deleted ("" when nothing holds it), in one query;
        ``snapshots_hold``: its snapshots hold it too."""
        row = self._one(
            "SELECT EXISTS(SELECT 1 FROM attachments WHERE volume_id=?1) AS attached,"
            " EXISTS(SELECT 1 FROM stages WHERE volume_id=?1) AS staged,"
            " EXISTS(SELECT 1 FROM publishes WHERE volume_id=?1) AS published,"
            " ?2 AND EXISTS(SELECT 1 FROM snapshots WHERE source_volume_id=?1) AS snapshotted",
            volume_id, snapshots_hold,
        )
        assert row is not None
        for column, reason in (("attached", "published to a node"),
                               ("staged", "staged on a node"),
                               ("published", "published on a node"),
                               ("snapshotted", "the source of existing snapshots")):
            if row[column]:
                return reason
        return ""

    def delete_volume(self, v: Volume) -> bool:
        if self._exec("DELETE FROM volumes WHERE volume_id=?", v.volume_id):
            self._add_pool_usage(v.pool, -v.capacity_bytes)
            return True
        return False

    def set_volume_capacity(self, v: Volume, capacity_bytes: int) -> None:
        self._exec(
            "UPDATE volumes SET capacity_bytes=? WHERE volume_id=?", capacity_bytes, v.volume_id
        )
        self._add_pool_usage(v.pool, capacity_bytes - v.capacity_bytes)

    def set_mutable_parameters(self, volume_id: str, params: dict[str, str]) -> None:
        self._exec(
            "UPDATE volumes SET mutable_parameters=? WHERE volume_id=?",
            dump_json(params), volume_id,
        )

    def list_volumes(self, after_seq: int, limit: int) -> list[Volume]:
        rows = self._all(
            "SELECT * FROM volumes WHERE seq>? ORDER BY seq LIMIT ?", after_seq, limit
        )
        return [_decode(Volume, row) for row in rows]

    # capacity --------------------------------------------------------------

    def _add_pool_usage(self, pool: str, delta: int) -> None:
        self._exec(
            "INSERT INTO pool_usage (pool, used_bytes) VALUES (?, ?) "
            "ON CONFLICT(pool) DO UPDATE SET used_bytes = used_bytes + excluded.used_bytes",
            pool, delta,
        )

    def pool_used(self, pool: str) -> int:
        row = self._one("SELECT used_bytes FROM pool_usage WHERE pool=?", pool)
        return int(row["used_bytes"]) if row else 0

    # snapshots -------------------------------------------------------------

    def get_snapshot(self, snapshot_id: str) -> Snapshot | None:
        return _record(Snapshot, self._row("snapshots", "snapshot_id", snapshot_id))

    def get_snapshot_by_name(self, name: str) -> Snapshot | None:
        return _record(Snapshot, self._row("snapshots", "name", name))

    def insert_snapshot(self, s: Snapshot) -> None:
        self._exec(
            "INSERT INTO snapshots (snapshot_id, name, source_volume_id, size_bytes, access_type,"
            " created_at, group_snapshot_id, parameters) VALUES (?,?,?,?,?,?,?,?)",
            s.snapshot_id, s.name, s.source_volume_id, s.size_bytes, s.access_type,
            s.created_at, s.group_snapshot_id, dump_json(s.parameters),
        )

    def delete_snapshot(self, snapshot_id: str) -> bool:
        return bool(self._exec("DELETE FROM snapshots WHERE snapshot_id=?", snapshot_id))

    def has_snapshots_of(self, volume_id: str) -> bool:
        return self._one(
            "SELECT 1 FROM snapshots WHERE source_volume_id=? LIMIT 1", volume_id
        ) is not None

    def list_snapshots(
        self, after_seq: int, limit: int, source_volume_id: str = ""
    ) -> list[Snapshot]:
        if source_volume_id:
            rows = self._all(
                "SELECT * FROM snapshots WHERE source_volume_id=? AND seq>? ORDER BY seq LIMIT ?",
                source_volume_id, after_seq, limit,
            )
        else:
            rows = self._all(
                "SELECT * FROM snapshots WHERE seq>? ORDER BY seq LIMIT ?", after_seq, limit
            )
        return [_decode(Snapshot, row) for row in rows]

    # group snapshots -------------------------------------------------------

    def insert_group_snapshot(self, g: GroupSnapshot) -> None:
        self._exec(
            "INSERT INTO group_snapshots (group_snapshot_id, name, source_volume_ids, parameters,"
            " created_at, snapshot_ids) VALUES (?,?,?,?,?,?)",
            g.group_snapshot_id, g.name, dump_json(list(g.source_volume_ids)),
            dump_json(g.parameters), g.created_at, dump_json(list(g.snapshot_ids)),
        )

    def get_group_snapshot(self, group_id: str) -> GroupSnapshot | None:
        return _record(GroupSnapshot,
                       self._row("group_snapshots", "group_snapshot_id", group_id))

    def get_group_snapshot_by_name(self, name: str) -> GroupSnapshot | None:
        return _record(GroupSnapshot, self._row("group_snapshots", "name", name))

    def delete_group_snapshot(self, group_id: str) -> bool:
        return bool(
            self._exec("DELETE FROM group_snapshots WHERE group_snapshot_id=?", group_id)
        )
