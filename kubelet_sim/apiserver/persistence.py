"""etcd's part under the API server: the committed objects on disk, so a cluster started
again on the same state dir has every object it had, under the same resourceVersions.

One SQLite database (WAL). Each commit of the store is one transaction holding the
object's new body (or its removal) and the store's resourceVersion counter; it is
written before the write is answered, so an answered write survives a kill -9 of the
simulator. (``synchronous=NORMAL``: a power loss may take the last commits, as an etcd
member without fsync would; the process crash may not.)
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path

from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.crd.definition import KIND as CRD_KIND
from kubelet_sim.apiserver.crd.registry import register_stored_definition

_SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    kind TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name)
);
CREATE TABLE IF NOT EXISTS counter (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER);
INSERT OR IGNORE INTO counter (id, version) VALUES (1, 0);
"""


class ObjectDatabase:
    """The objects and the resourceVersion counter of one cluster, kept at ``path``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Readable by its owner only, as etcd's data: SQLite gives the -wal and -shm
        # files the database file's mode, so the database is made 0600 before it opens.
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        for part in (path, path.with_name(path.name + "-wal"),
                     path.with_name(path.name + "-shm")):
            with contextlib.suppress(FileNotFoundError):
                part.chmod(0o600)  # a database made before this rule
        path.parent.chmod(0o700)
        self.path = path
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

    def load(self) -> tuple[int, list[Resource]]:
        """The counter and every stored object (each with its resourceVersion)."""
        with self._lock:
            (version,) = self._conn.execute("SELECT version FROM counter").fetchone()
            rows = self._conn.execute("SELECT kind, body FROM objects").fetchall()
        keyed = [(kind, json.loads(body)) for (kind, body) in rows]
        # the definitions first: the kinds they add must be known to read their objects
        definitions = [Resource.from_dict(b) for _, b in keyed if b.get("kind") == CRD_KIND]
        for crd in definitions:
            register_stored_definition(crd)
        others = [(kind, Resource.from_dict(b)) for kind, b in keyed
                  if b.get("kind") != CRD_KIND]
        self._rekey([(kind, obj) for kind, obj in others if kind != obj.kind])
        return int(version), definitions + [obj for _, obj in others]

    def _rekey(self, moved: list[tuple[str, Resource]]) -> None:
        """Rows written under an older key for their kind (custom resources were once
        kept under their bare kind) move to the key the store uses now."""
        if not moved:
            return
        with self._lock:
            for old, obj in moved:
                self._conn.execute("UPDATE OR REPLACE objects SET kind=? WHERE kind=? AND "
                                   "namespace=? AND name=?",
                                   (obj.kind, old, obj.namespace, obj.name))

    def commit(self, version: int, obj: Resource, deleted: bool) -> None:
        """Durably record ``obj`` (or its removal) as of ``version``."""
        key = (obj.kind, obj.namespace, obj.name)
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                if deleted:
                    self._conn.execute(
                        "DELETE FROM objects WHERE kind=? AND namespace=? AND name=?", key)
                else:
                    self._conn.execute(
                        "INSERT OR REPLACE INTO objects (kind, namespace, name, body) "
                        "VALUES (?, ?, ?, ?)", (*key, json.dumps(obj.to_dict())))
                self._conn.execute("UPDATE counter SET version=? WHERE id=1", (version,))
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
