"""Node-side and attachment tables of the store: nodes, attachments (ControllerPublish),
stages and publishes (the node's own records, re-checked after a restart)."""

from __future__ import annotations

import json
import sqlite3

from csi_driver.state.db import Database
from csi_driver.state.records import Attachment, Node, Publish, Stage, VolumeCapability


def dump_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _cap(text: str) -> VolumeCapability:
    return VolumeCapability.from_json(json.loads(text))


class BindingTables(Database):
    """Typed access to nodes, attachments, stages and publishes."""

    # nodes -----------------------------------------------------------------

    def upsert_node(self, n: Node) -> None:
        self._exec(
            "INSERT INTO nodes (node_id, topology, max_volumes) VALUES (?,?,?) "
            "ON CONFLICT(node_id) DO UPDATE SET topology=excluded.topology,"
            " max_volumes=excluded.max_volumes",
            n.node_id, dump_json(n.topology), n.max_volumes,
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
            a.volume_id, a.node_id, int(a.readonly), dump_json(a.capability.to_json()),
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
        return None if row is None else self._stage(row)

    @staticmethod
    def _stage(r: sqlite3.Row) -> Stage:
        return Stage(r["volume_id"], r["node_id"], r["staging_path"], _cap(r["capability"]))

    def stages_of_volume(self, volume_id: str) -> list[Stage]:
        return [self._stage(r) for r in
                self._all("SELECT * FROM stages WHERE volume_id=?", volume_id)]

    def stages_on_node(self, node_id: str) -> list[Stage]:
        return [self._stage(r) for r in
                self._all("SELECT * FROM stages WHERE node_id=?", node_id)]

    def insert_stage(self, s: Stage) -> None:
        self._exec(
            "INSERT INTO stages (volume_id, node_id, staging_path, capability) VALUES (?,?,?,?)",
            s.volume_id, s.node_id, s.staging_path, dump_json(s.capability.to_json()),
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
            created_target=bool(row["created_target"]),
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
            "INSERT OR REPLACE INTO publishes (node_id, target_path, volume_id, staging_path,"
            " readonly, capability, method, created_target) VALUES (?,?,?,?,?,?,?,?)",
            p.node_id, p.target_path, p.volume_id, p.staging_path, int(p.readonly),
            dump_json(p.capability.to_json()), p.method, int(p.created_target),
        )

    def delete_publish(self, node_id: str, target_path: str) -> bool:
        return bool(
            self._exec(
                "DELETE FROM publishes WHERE node_id=? AND target_path=?", node_id, target_path
            )
        )
