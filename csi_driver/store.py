"""Durable shared state: one SQLite database (WAL, synchronous=FULL) per state dir.

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

from csi_driver.db import Database
from csi_driver.records import (
    Attachment,
    GroupSnapshot,
    Node,
    Publish,
    Snapshot,
    Stage,
    Volume,
    VolumeCapability,
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
    PRIMARY KEY (node_id, target_path)
);
CREATE INDEX IF NOT EXISTS publishes_by_volume ON publishes (volume_id, node_id);
"""


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _cap(text: str) -> VolumeCapability:
    return VolumeCapability.from_json(json.loads(text))


class Store(Database):
    """Typed access to the shared state database."""

    def __init__(self, state_dir: str) -> None:
        os.makedirs(state_dir, exist_ok=True)
        super().__init__(os.path.join(state_dir, "state.db"), SCHEMA)

    # volumes ---------------------------------------------------------------

    @staticmethod
    def _volume(row: sqlite3.Row | None) -> Volume | None:
        if row is None:
            return None
        return Volume(
            volume_id=row["volume_id"],
            name=row["name"],
            capacity_bytes=row["capacity_bytes"],
            pool=row["pool"],
            access_type=row["access_type"],
            parameters=json.loads(row["parameters"]),
            mutable_parameters=json.loads(row["mutable_parameters"]),
            accessible_topology=json.loads(row["accessible_topology"]),
            source_type=row["source_type"],
            source_id=row["source_id"],
            request_fingerprint=row["request_fingerprint"],
            created_at=row["created_at"],
            seq=row["seq"],
        )

    def get_volume(self, volume_id: str) -> Volume | None:
        return self._volume(self._one("SELECT * FROM volumes WHERE volume_id=?", volume_id))

    def get_volume_by_name(self, name: str) -> Volume | None:
        return self._volume(self._one("SELECT * FROM volumes WHERE name=?", name))

    def insert_volume(self, v: Volume) -> bool:
        """Insert and account the capacity; False when the name is already taken."""
        inserted = self._exec(
            "INSERT OR IGNORE INTO volumes (volume_id, name, capacity_bytes, pool, access_type,"
            " parameters, mutable_parameters, accessible_topology, source_type, source_id,"
            " request_fingerprint, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            v.volume_id, v.name, v.capacity_bytes, v.pool, v.access_type, _dump(v.parameters),
            _dump(v.mutable_parameters), _dump(v.accessible_topology), v.source_type,
            v.source_id, v.request_fingerprint, v.created_at,
        )
        if inserted:
            self._add_pool_usage(v.pool, v.capacity_bytes)
        return bool(inserted)

    def volume_in_use(self, volume_id: str) -> str:
        """Why the volume cannot be deleted ("" when nothing holds it), in one query."""
        row = self._one(
            "SELECT EXISTS(SELECT 1 FROM attachments WHERE volume_id=?1) AS attached,"
            " EXISTS(SELECT 1 FROM stages WHERE volume_id=?1) AS staged,"
            " EXISTS(SELECT 1 FROM publishes WHERE volume_id=?1) AS published,"
            " EXISTS(SELECT 1 FROM snapshots WHERE source_volume_id=?1) AS snapshotted",
            volume_id,
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
            "UPDATE volumes SET mutable_parameters=? WHERE volume_id=?", _dump(params), volume_id
        )

    def list_volumes(self, after_seq: int, limit: int) -> list[Volume]:
        rows = self._all(
            "SELECT * FROM volumes WHERE seq>? ORDER BY seq LIMIT ?", after_seq, limit
        )
        return [v for v in map(self._volume, rows) if v is not None]

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

    @staticmethod
    def _snapshot(row: sqlite3.Row | None) -> Snapshot | None:
        if row is None:
            return None
        return Snapshot(
            snapshot_id=row["snapshot_id"],
            name=row["name"],
            source_volume_id=row["source_volume_id"],
            size_bytes=row["size_bytes"],
            access_type=row["access_type"],
            created_at=row["created_at"],
            group_snapshot_id=row["group_snapshot_id"],
            parameters=json.loads(row["parameters"]),
            seq=row["seq"],
        )

    def get_snapshot(self, snapshot_id: str) -> Snapshot | None:
        return self._snapshot(
            self._one("SELECT * FROM snapshots WHERE snapshot_id=?", snapshot_id)
        )

    def get_snapshot_by_name(self, name: str) -> Snapshot | None:
        return self._snapshot(self._one("SELECT * FROM snapshots WHERE name=?", name))

    def insert_snapshot(self, s: Snapshot) -> None:
        self._exec(
            "INSERT INTO snapshots (snapshot_id, name, source_volume_id, size_bytes, access_type,"
            " created_at, group_snapshot_id, parameters) VALUES (?,?,?,?,?,?,?,?)",
            s.snapshot_id, s.name, s.source_volume_id, s.size_bytes, s.access_type,
            s.created_at, s.group_snapshot_id, _dump(s.parameters),
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
        return [s for s in map(self._snapshot, rows) if s is not None]

    # group snapshots -------------------------------------------------------

    @staticmethod
    def _group(row: sqlite3.Row | None) -> GroupSnapshot | None:
        if row is None:
            return None
        return GroupSnapshot(
            group_snapshot_id=row["group_snapshot_id"],
            name=row["name"],
            source_volume_ids=tuple(json.loads(row["source_volume_ids"])),
            parameters=json.loads(row["parameters"]),
            created_at=row["created_at"],
            snapshot_ids=tuple(json.loads(row["snapshot_ids"])),
        )

    def get_group_snapshot(self, group_id: str) -> GroupSnapshot | None:
        return self._group(
            self._one("SELECT * FROM group_snapshots WHERE group_snapshot_id=?", group_id)
        )

    def get_group_snapshot_by_name(self, name: str) -> GroupSnapshot | None:
        return self._group(self._one("SELECT * FROM group_snapshots WHERE name=?", name))

    def insert_group_snapshot(self, g: GroupSnapshot) -> None:
        self._exec(
            "INSERT INTO group_snapshots (group_snapshot_id, name, source_volume_ids, parameters,"
            " created_at, snapshot_ids) VALUES (?,?,?,?,?,?)",
            g.group_snapshot_id, g.name, _dump(list(g.source_volume_ids)), _dump(g.parameters),
            g.created_at, _dump(list(g.snapshot_ids)),
        )

    def delete_group_snapshot(self, group_id: str) -> bool:
        return bool(
            self._exec("DELETE FROM group_snapshots WHERE group_snapshot_id=?", group_id)
        )

    # nodes -----------------------------------------------------------------

    def upsert_node(self, n: Node) -> None:
        self._exec(
            "INSERT INTO nodes (node_id, topology, max_volumes) VALUES (?,?,?) "
            "ON CONFLICT(node_id) DO UPDATE SET topology=excluded.topology,"
            " max_volumes=excluded.max_volumes",
            n.node_id, _dump(n.topology), n.max_volumes,
        )

    def get_node(self, node_id: str) -> Node | None:
        row = self._one("SELECT * FROM nodes WHERE node_id=?", node_id)
        if row is None:
            return None
        return Node(row["node_id"], json.loads(row["topology"]), row["max_volumes"])

    def list_nodes(self) -> list[Node]:
        rows = self._all("SELECT * FROM nodes ORDER BY node_id")
        return [Node(r["node_id"], json.loads(r["topology"]), r["max_volumes"]) for r in rows]

    # attachments (ControllerPublish) ----------------------------------------

    @staticmethod
    def _attachment(row: sqlite3.Row) -> Attachment:
        return Attachment(
            row["volume_id"], row["node_id"], bool(row["readonly"]), _cap(row["capability"])
        )

    def get_attachment(self, volume_id: str, node_id: str) -> Attachment | None:
        row = self._one(
            "SELECT * FROM attachments WHERE volume_id=? AND node_id=?", volume_id, node_id
        )
        return self._attachment(row) if row else None

    def attachments_of_volume(self, volume_id: str) -> list[Attachment]:
        rows = self._all("SELECT * FROM attachments WHERE volume_id=?", volume_id)
        return [self._attachment(r) for r in rows]

    def count_attachments_on_node(self, node_id: str) -> int:
        row = self._one("SELECT COUNT(*) AS n FROM attachments WHERE node_id=?", node_id)
        return int(row["n"]) if row else 0

    def insert_attachment(self, a: Attachment) -> None:
        self._exec(
            "INSERT INTO attachments (volume_id, node_id, readonly, capability) VALUES (?,?,?,?)",
            a.volume_id, a.node_id, int(a.readonly), _dump(a.capability.to_json()),
        )

    def delete_attachment(self, volume_id: str, node_id: str) -> bool:
        return bool(
            self._exec(
                "DELETE FROM attachments WHERE volume_id=? AND node_id=?", volume_id, node_id
            )
        )

    # stages and publishes (node side) ---------------------------------------

    def get_stage(self, volume_id: str, node_id: str) -> Stage | None:
        row = self._one("SELECT * FROM stages WHERE volume_id=? AND node_id=?", volume_id, node_id)
        if row is None:
            return None
        return Stage(row["volume_id"], row["node_id"], row["staging_path"],
                     _cap(row["capability"]))

    def stages_of_volume(self, volume_id: str) -> list[Stage]:
        rows = self._all("SELECT * FROM stages WHERE volume_id=?", volume_id)
        return [Stage(r["volume_id"], r["node_id"], r["staging_path"], _cap(r["capability"]))
                for r in rows]

    def insert_stage(self, s: Stage) -> None:
        self._exec(
            "INSERT INTO stages (volume_id, node_id, staging_path, capability) VALUES (?,?,?,?)",
            s.volume_id, s.node_id, s.staging_path, _dump(s.capability.to_json()),
        )

    def delete_stage(self, volume_id: str, node_id: str) -> bool:
        return bool(
            self._exec("DELETE FROM stages WHERE volume_id=? AND node_id=?", volume_id, node_id)
        )

    @staticmethod
    def _publish(row: sqlite3.Row) -> Publish:
        return Publish(
            volume_id=row["volume_id"],
            node_id=row["node_id"],
            target_path=row["target_path"],
            staging_path=row["staging_path"],
            readonly=bool(row["readonly"]),
            capability=_cap(row["capability"]),
            method=row["method"],
        )

    def get_publish(self, node_id: str, target_path: str) -> Publish | None:
        row = self._one(
            "SELECT * FROM publishes WHERE node_id=? AND target_path=?", node_id, target_path
        )
        return self._publish(row) if row else None

    def publishes_of_volume(self, volume_id: str, node_id: str | None = None) -> list[Publish]:
        if node_id is None:
            rows = self._all("SELECT * FROM publishes WHERE volume_id=?", volume_id)
        else:
            rows = self._all(
                "SELECT * FROM publishes WHERE volume_id=? AND node_id=?", volume_id, node_id
            )
        return [self._publish(r) for r in rows]

    def publishes_on_node(self, node_id: str) -> list[Publish]:
        return [self._publish(r) for r in
                self._all("SELECT * FROM publishes WHERE node_id=?", node_id)]

    def insert_publish(self, p: Publish) -> None:
        self._exec(
            "INSERT INTO publishes (node_id, target_path, volume_id, staging_path, readonly,"
            " capability, method) VALUES (?,?,?,?,?,?,?)",
            p.node_id, p.target_path, p.volume_id, p.staging_path, int(p.readonly),
            _dump(p.capability.to_json()), p.method,
        )

    def delete_publish(self, node_id: str, target_path: str) -> bool:
        return bool(
            self._exec(
                "DELETE FROM publishes WHERE node_id=? AND target_path=?", node_id, target_path
            )
        )
