"""What answered OK is on disk: immediate commits, group commits, and a reopened store."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable

import pytest

from csi_driver.state.records import Node
from csi_driver.state.store import Store

from .conftest import create_args, make_domain, mount_cap


def test_a_reopened_store_holds_volumes_attachments_and_stages(tmp_path):
    d = make_domain(tmp_path)
    v = d.volumes.create_volume(create_args("v"))
    d.attachments.publish(v.volume_id, "node-1", mount_cap(), False)
    staging = tmp_path / "staging"
    staging.mkdir()
    d.node.stage(v.volume_id, str(staging), mount_cap())
    # No close(): as after kill -9, only what was committed counts.
    again = Store(str(tmp_path))
    volume = again.get_volume(v.volume_id)
    assert volume is not None and volume.name == "v"
    assert again.get_attachment(v.volume_id, "node-1") is not None
    stage = again.get_stage(v.volume_id, "node-1")
    assert stage is not None and stage.staging_path == str(staging)


async def test_group_commit_makes_concurrent_bodies_durable_before_settle_returns(tmp_path):
    store = Store(str(tmp_path))
    store.enable_group_commit()

    async def register(node_id: str) -> None:
        await store.ready()
        with store.transaction():
            store.upsert_node(Node(node_id, {}, 0))
        await store.settle()

    await asyncio.gather(*(register(f"n{i}") for i in range(5)))
    other = Store(str(tmp_path))  # another process's view: committed data only
    assert sorted(n.node_id for n in other.list_nodes()) == [f"n{i}" for i in range(5)]


async def test_a_failing_body_rolls_back_alone_in_a_group_commit(tmp_path):
    store = Store(str(tmp_path))
    store.enable_group_commit()
    with store.transaction():
        store.upsert_node(Node("kept", {}, 0))
    with pytest.raises(RuntimeError), store.transaction():
        store.upsert_node(Node("dropped", {}, 0))
        raise RuntimeError("body fails")
    await store.settle()
    assert [n.node_id for n in Store(str(tmp_path)).list_nodes()] == ["kept"]


async def test_reads_outside_a_transaction_see_only_committed_state(tmp_path):
    store = Store(str(tmp_path))
    store.enable_group_commit()
    with store.transaction():
        store.upsert_node(Node("pending", {}, 0))
    assert store.get_node("pending") is None
    await store.settle(alone=True)
    assert store.get_node("pending") is not None


def test_after_commit_hooks_run_only_for_committed_work(tmp_path):
    store = Store(str(tmp_path))
    ran: list[str] = []
    with store.transaction():
        store.after_commit(lambda: ran.append("committed"))
    with pytest.raises(RuntimeError), store.transaction():
        store.after_commit(lambda: ran.append("rolled back"))
        raise RuntimeError
    assert ran == ["committed"]


def test_before_commit_hooks_run_before_the_record_is_durable_and_not_on_rollback(tmp_path):
    store = Store(str(tmp_path))
    reader = sqlite3.connect(store.path)
    seen: list[bool] = []

    def committed() -> bool:
        return reader.execute("SELECT 1 FROM nodes WHERE node_id='n'").fetchone() is not None

    with store.transaction():
        store.upsert_node(Node("n", {}, 0))
        store.before_commit(lambda: seen.append(not committed()))
    with pytest.raises(RuntimeError), store.transaction():
        store.before_commit(lambda: seen.append(False))
        raise RuntimeError
    assert seen == [True]
    assert committed()


async def test_a_failing_before_commit_hook_fails_the_commit(tmp_path):
    store = Store(str(tmp_path))
    store.enable_group_commit()

    def broken() -> None:
        raise OSError("disk full")

    with store.transaction():
        store.upsert_node(Node("n", {}, 0))
        store.before_commit(broken)
    with pytest.raises(OSError):
        await store.settle()
    assert Store(str(tmp_path)).get_node("n") is None


# durability levels -----------------------------------------------------------


def test_durability_defaults_to_process_and_host_is_a_flag():
    from csi_driver.cli import parse_config

    assert parse_config(["--endpoint", "/tmp/x.sock"]).durability == "process"
    assert parse_config(["--endpoint", "/tmp/x.sock", "--durability", "host"]).durability == "host"
    with pytest.raises(SystemExit) as exited:
        parse_config(["--endpoint", "/tmp/x.sock", "--durability", "power"])
    assert exited.value.code == 2


@pytest.mark.parametrize(("wait_for_disk", "level"), [(False, 1), (True, 2)])
def test_commits_fsync_only_when_asked_to_wait_for_the_disk(tmp_path, wait_for_disk, level):
    """SQLite's levels: NORMAL (1) writes the WAL before COMMIT returns, durable against a
    killed process; FULL (2) also fsyncs it, durable against a host crash."""
    store = Store(str(tmp_path), wait_for_disk=wait_for_disk)
    for conn in (store._conn, store._read):
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == level
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.parametrize("durability", ["process", "host"])
def test_a_new_volume_directory_entry_is_synced_only_for_host_durability(
    tmp_path, monkeypatch, durability
):
    import csi_driver.state.volume_data as volume_data

    synced: list[str] = []
    monkeypatch.setattr(volume_data, "sync_dir", synced.append)
    d = make_domain(tmp_path, durability=durability)
    v = d.volumes.create_volume(create_args("v"))
    assert d.data.exists(v.volume_id, "mount")
    assert synced == ([d.data.volumes_dir] if durability == "host" else [])


async def test_an_equal_before_commit_hook_runs_once_after_the_others_in_a_batch(tmp_path):
    store = Store(str(tmp_path))
    store.enable_group_commit()
    ran: list[str] = []

    class Dir:
        def sync(self) -> None:
            ran.append("sync")

    d = Dir()
    def mkdir(name: str) -> Callable[[], None]:
        return lambda: ran.append(f"mkdir {name}")

    for name in ("a", "b", "c"):
        with store.transaction():
            store.upsert_node(Node(name, {}, 0))
            store.before_commit(mkdir(name))
            store.before_commit(d.sync)
    await store.settle()
    assert ran == ["mkdir a", "mkdir b", "mkdir c", "sync"]


def test_host_durability_syncs_the_volumes_directory_once_per_commit(tmp_path, monkeypatch):
    import csi_driver.state.volume_data as volume_data

    synced: list[str] = []
    monkeypatch.setattr(volume_data, "sync_dir", synced.append)
    d = make_domain(tmp_path, durability="host")
    for name in ("v1", "v2"):
        d.volumes.create_volume(create_args(name))
    assert synced == [d.data.volumes_dir] * 2  # immediate commits: one each
