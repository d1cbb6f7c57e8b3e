"""Node namespaces for the Linux dataplane, without a cluster: underlay wiring, host-gw
routes as nodes join, plugin exec inside a node, and teardown (root only)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.network.linux_nodes import LinuxNodes, LinuxNodesError, netns_names
from kubelet_sim.pod_probe import ProbeError, tcp_exchange
from kubelet_sim.runtime.libcni.invoke import RealExec

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


@pytest.fixture
def nodes() -> Iterator[LinuxNodes]:
    made = LinuxNodes()
    try:
        yield made
    finally:
        made.teardown()


def join(api: APIServer, nodes: LinuxNodes, i: int) -> None:
    """What the cluster launcher does for node-<i>: the Node object, its namespace, routes."""
    api.create(builders.node(f"node-{i}", f"10.244.{i}.0/24", f"192.168.0.{i}"))
    nodes.add_node(f"node-{i}", f"192.168.0.{i}")
    nodes.sync_routes(api)


def routes_via(nodes: LinuxNodes, node: str) -> dict[str, str]:
    out = subprocess.run(["ip", "-j", "-n", nodes.nodes[node].netns, "-4", "route", "show"],
                         capture_output=True, text=True, check=True, timeout=10).stdout
    return {r["dst"]: r["gateway"] for r in json.loads(out) if "gateway" in r}


def test_a_node_that_joins_later_is_routed_from_every_earlier_node(nodes):
    api = APIServer()
    join(api, nodes, 1)
    assert routes_via(nodes, "node-1") == {}
    join(api, nodes, 2)
    join(api, nodes, 3)
    assert routes_via(nodes, "node-1") == {"10.244.2.0/24": "192.168.0.2",
                                           "10.244.3.0/24": "192.168.0.3"}
    assert routes_via(nodes, "node-3") == {"10.244.1.0/24": "192.168.0.1",
                                           "10.244.2.0/24": "192.168.0.2"}


def test_nodes_reach_each_other_over_the_underlay_segment(nodes):
    api = APIServer()
    join(api, nodes, 1)
    join(api, nodes, 2)
    exchange = tcp_exchange(nodes.netns_path("node-2"), "192.168.0.2",
                            nodes.netns_path("node-1"), port=8081, server_name="node-2")
    assert exchange.server_saw == "192.168.0.1"


def test_two_clusters_at_once_use_their_own_namespaces():
    first, second = LinuxNodes(), LinuxNodes()
    try:
        first.add_node("node-1", "192.168.0.1")
        second.add_node("node-1", "192.168.0.1")
        assert first.netns_path("node-1") != second.netns_path("node-1")
    finally:
        first.teardown()
        second.teardown()
    assert not [n for n in netns_names() if n.startswith((first.prefix, second.prefix))]


def test_teardown_after_a_failed_node_removes_what_was_created():
    made = LinuxNodes()
    made.add_node("node-1", "192.168.0.1")
    with pytest.raises(LinuxNodesError):
        made.add_node("node-2", "not-an-address")
    assert f"{made.prefix}node-2" in netns_names()
    assert made.teardown() == []
    assert not [n for n in netns_names() if n.startswith(made.prefix)]


def test_interface_names_fit_the_kernel_limit(nodes):
    node = nodes.add_node("a-node-with-a-rather-long-name", "192.168.0.9")
    assert len(node.uplink_peer) <= 15


def test_a_plugin_exec_with_netns_runs_inside_that_namespace(nodes, tmp_path: Path):
    nodes.add_node("node-1", "192.168.0.1")
    plugin = tmp_path / "whereami"
    plugin.write_text("#!/bin/sh\nreadlink /proc/self/ns/net\n")
    plugin.chmod(0o755)
    netns = nodes.netns_path("node-1")
    out = RealExec(netns=netns).exec_plugin(str(plugin), b"{}", {"CNI_COMMAND": "VERSION"})
    assert out.decode().strip() == f"net:[{os.stat(netns).st_ino}]"
    root = RealExec().exec_plugin(str(plugin), b"{}", {"CNI_COMMAND": "VERSION"})
    assert root.decode().strip() == f"net:[{os.stat('/proc/self/ns/net').st_ino}]"


def test_a_probe_whose_listener_cannot_bind_fails_instead_of_waiting(nodes):
    nodes.add_node("node-1", "192.168.0.1")
    netns = nodes.netns_path("node-1")
    with pytest.raises(ProbeError, match="listener exited"):
        tcp_exchange(netns, "192.168.0.77", netns, port=8082, timeout_s=2.0)
