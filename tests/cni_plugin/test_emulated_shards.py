"""The emulated dataplane's state is kept in shards: a command reads and writes only the
files of the namespaces it names, and the whole-node queries see one document."""

from __future__ import annotations

import os
from pathlib import Path

from cni_plugin.dataplane.emulated import EmulatedDataplane
from cni_plugin.dataplane.shards import HOST_FILE, ShardedState, marker_name, shard_name
from cni_spec.types import IPConfig


def _pod(tmp_path: Path, dataplane_dir: str, n: int) -> tuple[str, EmulatedDataplane]:
    netns = str(tmp_path / f"netns-{n}")
    Path(netns).touch()
    dp = EmulatedDataplane(dataplane_dir, "shardnet", f"c{n}")
    with dp.batch():
        dp.add_veth(netns, "eth0", 0, "", "shbr0", False, 0)
    with dp.batch():
        dp.configure_iface(netns, "eth0", [IPConfig(address=f"10.8.0.{n + 2}/24")], [], False)
    return netns, dp


def _files(dataplane_dir: str) -> set[str]:
    return {n for n in os.listdir(dataplane_dir) if n != "lock"}


def test_a_veth_pair_is_kept_in_its_sandbox_namespace_shard(tmp_path: Path,
                                                            dataplane_dir: str) -> None:
    EmulatedDataplane(dataplane_dir).ensure_bridge("shbr0", 0, False, False)
    netns, dp = _pod(tmp_path, dataplane_dir, 0)
    host_end = next(link for link in dp.links(None) if link.kind == "veth")
    shard = shard_name("ns", os.path.abspath(netns))
    assert _files(dataplane_dir) == {HOST_FILE, shard, marker_name(host_end.name)}
    assert os.readlink(os.path.join(dataplane_dir, marker_name(host_end.name))) == shard
    found = dp.get_link(None, host_end.name)
    assert found is not None and found.peer_name == "eth0"


def test_a_command_leaves_the_other_pods_shards_untouched(tmp_path: Path,
                                                          dataplane_dir: str) -> None:
    EmulatedDataplane(dataplane_dir).ensure_bridge("shbr0", 0, False, False)
    _pod(tmp_path, dataplane_dir, 0)
    before = {n: os.stat(os.path.join(dataplane_dir, n), follow_symlinks=False).st_ino
              for n in _files(dataplane_dir)}
    netns, dp = _pod(tmp_path, dataplane_dir, 1)
    assert dp.delete_link(netns, "eth0") == ["10.8.0.3/24"]
    after = {n: os.stat(os.path.join(dataplane_dir, n), follow_symlinks=False).st_ino
             for n in _files(dataplane_dir)}
    assert after == before


def test_deleting_a_host_veth_end_by_name_drops_both_ends_and_its_marker(
        tmp_path: Path, dataplane_dir: str) -> None:
    EmulatedDataplane(dataplane_dir).ensure_bridge("shbr0", 0, False, False)
    netns, dp = _pod(tmp_path, dataplane_dir, 0)
    host_end = next(link for link in dp.links(None) if link.kind == "veth")
    dp.delete_host_link(host_end.name)
    assert dp.get_link(netns, "eth0") is None
    assert [link.name for link in dp.links(None)] == ["shbr0"]
    assert _files(dataplane_dir) == {HOST_FILE}


def test_the_whole_node_document_holds_every_shard(tmp_path: Path, dataplane_dir: str) -> None:
    dp = EmulatedDataplane(dataplane_dir, "shardnet", "c0")
    dp.ensure_bridge("shbr0", 0, False, False)
    dp.setup_masquerade("10.8.0.2/24", "CNI-shard", "c0")
    netns, _ = _pod(tmp_path, dataplane_dir, 0)
    state = ShardedState(dataplane_dir).snapshot()
    assert sorted(state["namespaces"]) == ["", os.path.abspath(netns)]
    host_links = state["namespaces"][""]["links"].values()
    assert sorted(link["kind"] for link in host_links) == ["bridge", "veth"]
    assert state["masquerade"]["CNI-shard"]["sources"] == ["10.8.0.2/24"]
    assert [a["netns"] for a in dp.attachments()] == [os.path.abspath(netns)]


def test_an_old_single_document_state_is_ignored(dataplane_dir: str) -> None:
    os.makedirs(dataplane_dir)
    Path(dataplane_dir, "state.json").write_text('{"namespaces": {"": {"links": {}}}}')
    dp = EmulatedDataplane(dataplane_dir)
    assert dp.namespaces() == []
    dp.ensure_bridge("shbr0", 0, False, False)
    assert [link.name for link in dp.links(None)] == ["shbr0"]
