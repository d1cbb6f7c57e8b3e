"""The SQLite connection layer under ``store``: WAL, synchronous=FULL, and group commit.

Two ways to make a transaction durable:

- immediate (the default): ``transaction()`` is BEGIN IMMEDIATE … COMMIT, and
  COMMIT fsyncs the WAL before it returns.  Used by tests, start-up work and
  code running in worker threads.
- group commit (``enable_group_commit()``, event-loop thread only): bodies run
  inside one open batch transaction, each under its own SAVEPOINT so a failing
  body rolls back alone; ``settle()`` commits the batch from a worker thread and
  every RPC whose body joined it answers only after that COMMIT (and its fsync)
  returned.  Concurrent RPCs thus share one fsync, and the event loop keeps
  serving while the disk syncs.  Durability is unchanged: nothing is answered
  OK before it is on disk.

Reads outside a transaction use a second connection, so they see committed
state only and never wait for a COMMIT in progress.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from csi_driver.errors import FailedPrecondition

log = logging.getLogger(__name__)


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # Small pages: a commit writes (and fsyncs) ~5 pages, so 1 KiB pages keep the
    # per-RPC fsync cheap.  Only takes effect when the database file is created.
    conn.execute("PRAGMA page_size=1024")
    _enter_wal(conn)
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=30000")
    # Every RPC writes, so a reader's page cache is reset at almost every read; memory-
    # mapped pages keep B-tree descents off the read() path as the store grows.
    conn.execute("PRAGMA mmap_size=268435456")
    conn.execute("PRAGMA cache_size=-32768")
    return conn


def _enter_wal(conn: sqlite3.Connection, attempts: int = 100) -> None:
    """Switch to WAL. Several driver processes opening a new state dir at once race for
    the conversion, and SQLite answers "database is locked" to the losers without
    calling the busy handler: retry until the winner is done."""
    for attempt in range(attempts):
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or attempt == attempts - 1:
                raise
            time.sleep(0.02)


def _run_hooks(hooks: list[Callable[[], None]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:
            log.exception("after-commit hook failed")


class Database:
    def __init__(self, path: str, schema: str) -> None:
        self.path = path
        self._conn = _connect(path)
        self._read = _connect(path)
        self._lock = threading.RLock()  # the write connection
        self._read_lock = threading.Lock()  # the read connection: never waits for a COMMIT
        self._depth = 0
        self._group_commit = False
        self._batch: asyncio.Future[None] | None = None
        self._commit_task: asyncio.Task[None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self.writes = 0  # bodies run so far; lets a caller see whether it wrote
        self._body_hooks: list[Callable[[], None]] = []
        self._batch_hooks: list[Callable[[], None]] = []
        self._body_pre: list[Callable[[], None]] = []
        self._batch_pre: list[Callable[[], None]] = []
        with self.transaction():
            for statement in schema.split(";"):
                if statement.strip():
                    self._conn.execute(statement)

    def close(self) -> None:
        self._conn.close()
        self._read.close()

    # transactions ---------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic write; durable on return (immediate) or after ``settle()`` (group)."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield
                finally:
                    self._depth -= 1
                return
            self.writes += 1
            if self._group_commit:
                with self._savepoint():
                    yield
                return
            self._conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield
                pre, self._body_pre = self._body_pre, []
                for hook in pre:
                    hook()
            except BaseException:
                self._depth = 0
                self._body_hooks.clear()
                self._body_pre.clear()
                self._conn.execute("ROLLBACK")
                raise
            self._depth = 0
            self._conn.execute("COMMIT")
            hooks, self._body_hooks = self._body_hooks, []
            _run_hooks(hooks)

    def before_commit(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` just before the current transaction commits (dropped on rollback);
        if it raises, the transaction (or the whole batch) fails."""
        assert self._depth, "before_commit() belongs inside transaction()"
        self._body_pre.append(hook)

    def after_commit(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` once the current transaction is durable (dropped on rollback)."""
        assert self._depth, "after_commit() belongs inside transaction()"
        self._body_hooks.append(hook)

    @contextmanager
    def _savepoint(self) -> Iterator[None]:
        assert not self._idle_blocked(), "a body ran while a COMMIT was in progress"
        if self._batch is None:
            self._conn.execute("BEGIN IMMEDIATE")
            self._batch = asyncio.get_running_loop().create_future()
        self._conn.execute("SAVEPOINT body")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self._body_hooks.clear()
            self._body_pre.clear()
            self._conn.execute("ROLLBACK TO body")
            self._conn.execute("RELEASE body")
            raise
        self._depth = 0
        self._conn.execute("RELEASE body")
        self._batch_hooks += self._body_hooks
        self._batch_pre += self._body_pre
        self._body_hooks = []
        self._body_pre = []

    def _idle_blocked(self) -> bool:
        return not self._idle.is_set()

    # group commit (event-loop thread only) -----------------------------------

    def enable_group_commit(self) -> None:
        self._group_commit = True

    async def ready(self) -> None:
        """Wait until no COMMIT is running, so a body may use the write connection."""
        while not self._idle.is_set():
            await self._idle.wait()

    async def settle(self, alone: bool = False) -> None:
        """Return once every body run so far is committed (raise if the COMMIT failed).

        ``alone``: no other RPC is waiting, so nothing could share the fsync or use
        the loop meanwhile; commit right here and skip the thread hand-off."""
        batch = self._batch
        if batch is None:
            return
        if alone and self._commit_task is None:
            self._batch = None
            hooks, self._batch_hooks = self._batch_hooks, []
            pre, self._batch_pre = self._batch_pre, []
            try:
                self._commit_now(pre)
            except BaseException as exc:
                batch.set_exception(exc)
                batch.exception()  # retrieved here; raised below
                raise
            batch.set_result(None)
            _run_hooks(hooks)
            return
        if self._commit_task is None:
            self._commit_task = asyncio.get_running_loop().create_task(self._commit())
        await asyncio.shield(batch)

    async def _commit(self) -> None:
        await asyncio.sleep(0)  # let bodies that are ready in this loop turn join the batch
        batch, self._batch = self._batch, None
        hooks, self._batch_hooks = self._batch_hooks, []
        pre, self._batch_pre = self._batch_pre, []
        assert batch is not None
        self._idle.clear()
        try:
            await asyncio.to_thread(self._commit_now, pre)
        except BaseException as exc:
            batch.set_exception(exc)
        else:
            batch.set_result(None)
            _run_hooks(hooks)
        finally:
            self._commit_task = None
            self._idle.set()

    def _commit_now(self, pre: list[Callable[[], None]]) -> None:
        with self._lock:
            try:
                for hook in pre:
                    hook()
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    # statements ----------------------------------------------------------

    def check_usable(self) -> None:
        """Raise FailedPrecondition when the database cannot be read."""
        try:
            with self._read_lock:
                self._read.execute("SELECT 1 FROM volumes LIMIT 1").fetchall()
        except sqlite3.Error as exc:
            raise FailedPrecondition(f"state store unusable: {exc}") from exc

    def _one(self, sql: str, *args: object) -> sqlite3.Row | None:
        if self._depth:
            with self._lock:
                row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
                return row
        with self._read_lock:
            found: sqlite3.Row | None = self._read.execute(sql, args).fetchone()
            return found

    def _all(self, sql: str, *args: object) -> list[sqlite3.Row]:
        if self._depth:
            with self._lock:
                return self._conn.execute(sql, args).fetchall()
        with self._read_lock:
            return self._read.execute(sql, args).fetchall()

    def _exec(self, sql: str, *args: object) -> int:
        assert self._depth, "store mutators must run inside transaction()"
        return self._conn.execute(sql, args).rowcount
