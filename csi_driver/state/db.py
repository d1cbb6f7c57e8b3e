"""The SQLite connection layer under ``store``: WAL, one of two durability levels, and
group commit.

Durability (``wait_for_disk``):

- False (``--durability process``, the default): synchronous=NORMAL.  COMMIT has
  written the WAL frames into the kernel before it returns, so an answered
  mutation survives kill -9 of any driver process; a host crash or power loss
  may roll back the last commits, never corrupt the store.
- True (``--durability host``): synchronous=FULL.  COMMIT also fsyncs the WAL.

Two ways to commit:

- immediate (the default): ``transaction()`` is BEGIN IMMEDIATE … COMMIT, done on
  return.  Used whenever commits cost no disk wait, and by tests, start-up work
  and code running in worker threads.
- group commit (``enable_group_commit()``, event-loop thread only; the server
  uses it when each commit waits for the disk): bodies run inside one open
  batch transaction, each under its own SAVEPOINT so a failing body rolls back
  alone; ``settle()`` commits the batch from a worker thread and every RPC whose
  body joined it answers only after that COMMIT (and its fsync) returned.
  Concurrent RPCs thus share one fsync, and the event loop keeps serving while
  the disk syncs.  Nothing is answered OK before it is durable.

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


def open_connection(path: str, wait_for_disk: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # Small pages: a commit writes ~5 pages, so 1 KiB pages keep it (and its fsync,
    # when there is one) cheap.  Only takes effect when the database file is created.
    conn.execute("PRAGMA page_size=1024")
    _enter_wal(conn)
    conn.execute(f"PRAGMA synchronous={'FULL' if wait_for_disk else 'NORMAL'}")
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


def _append_last(hooks: list[Callable[[], None]], hook: Callable[[], None]) -> None:
    if hook in hooks:
        hooks.remove(hook)
    hooks.append(hook)


def _run_hooks(hooks: list[Callable[[], None]]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:
            log.exception("after-commit hook failed")


class Database:
    def __init__(self, path: str, schema: str, wait_for_disk: bool = False,
                 added_columns: tuple[tuple[str, str, str], ...] = ()) -> None:
        self.path = path
        self.wait_for_disk = wait_for_disk
        self._conn = open_connection(path, wait_for_disk)
        self._read = open_connection(path, wait_for_disk)
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
            for table, column, definition in added_columns:
                present = {row["name"] for row in
                           self._conn.execute(f"PRAGMA table_info({table})")}
                if column not in present:
                    self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {definition}")

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
        if it raises, the transaction (or the whole batch) fails.  A hook equal to one
        already waiting (the same bound method) moves to the end instead: it runs
        once, after the others, however many bodies of a batch asked for it."""
        assert self._depth, "before_commit() belongs inside transaction()"
        _append_last(self._body_pre, hook)

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
        for hook in self._body_pre:
            _append_last(self._batch_pre, hook)
        self._body_hooks = []
        self._body_pre = []

    def _idle_blocked(self) -> bool:
        return not self._idle.is_set()

    # group commit (event-loop thread only) -----------------------------------

    def enable_group_commit(self) -> None:
        self._group_commit = True

    @property
    def group_commit(self) -> bool:
        return self._group_commit

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
