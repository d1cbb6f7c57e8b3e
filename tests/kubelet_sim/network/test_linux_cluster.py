"""The simulated cluster on the Linux dataplane: nodes are network namespaces on one
underlay segment, pods get real interfaces, and packets really cross nodes (root only)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource, pod_ips
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.network.linux_nodes import netns_names
from kubelet_sim.pod_probe import sandbox_netns, tcp_exchange

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces"),
]


def sh(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=10).stdout


def ip_json(netns: str | None, *args: str) -> list[dict]:
    prefix = ["nsenter", f"--net={netns}"] if netns else []
    return json.loads(sh(*prefix, "ip", "-j", *args) or "[]")


@dataclass
class Running:
    cluster: Cluster
    loop: asyncio.AbstractEventLoop

    def pod(self, name: str) -> Resource:
        return self.cluster.api.get("Pod", name, "default")

    def pod_netns(self, name: str) -> str:
        pod = self.pod(name)
        return sandbox_netns(self.cluster.kubelets[pod.spec["nodeName"]].runtime, pod)

    def node_netns(self, node: str) -> str:
        assert self.cluster.linux_nodes is not None
        return self.cluster.linux_nodes.netns_path(node)


def start_cluster(nodes: int) -> Running:
    loop = asyncio.new_event_loop()
    cluster = Cluster(ClusterConfig(nodes=default_nodes(nodes), dataplane="linux"))
    try:
        loop.run_until_complete(cluster.start())
    except BaseException:
        loop.run_until_complete(cluster.stop())
        loop.close()
        raise
    return Running(cluster, loop)


def stop_cluster(running: Running) -> None:
    running.loop.run_until_complete(running.cluster.stop())
    running.loop.close()


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[Running]:
    """app-a on node-1 and app-b on node-2, both Running."""
    running = start_cluster(2)
    try:
        api = running.cluster.api
        api.create(builders.pod("app-a", labels={"app": "a"}, node_name="node-1"))
        api.create(builders.pod("app-b", labels={"app": "b"}, node_name="node-2"))
        running.loop.run_until_complete(running.cluster.settle())
        yield running
    finally:
        stop_cluster(running)


def test_each_node_is_its_own_network_namespace_with_its_internal_ip_on_eth0(two_nodes):
    for i, node in enumerate(("node-1", "node-2"), start=1):
        eth0 = ip_json(two_nodes.node_netns(node), "addr", "show", "dev", "eth0")[0]
        addrs = [f"{a['local']}/{a['prefixlen']}" for a in eth0["addr_info"]
                 if a["family"] == "inet"]
        assert addrs == [f"192.168.0.{i}/24"]
        assert os.stat(two_nodes.node_netns(node)).st_ino != os.stat("/proc/self/ns/net").st_ino


def test_pods_get_their_ip_on_a_real_eth0_inside_their_netns(two_nodes):
    for name in ("app-a", "app-b"):
        pod = two_nodes.pod(name)
        assert pod.status["phase"] == "Running"
        eth0 = ip_json(two_nodes.pod_netns(name), "addr", "show", "dev", "eth0")[0]
        inet = [a for a in eth0["addr_info"] if a["family"] == "inet"]
        assert [a["local"] for a in inet] == pod_ips(pod)
        node = two_nodes.cluster.api.get("Node", pod.spec["nodeName"])
        assert ipaddress.ip_address(inet[0]["local"]) in ipaddress.ip_network(
            node.spec["podCIDR"])


def test_the_pod_bridge_and_gateway_live_in_the_node_namespace_not_the_root(two_nodes):
    cni0 = ip_json(two_nodes.node_netns("node-1"), "addr", "show", "dev", "cni0")[0]
    assert [a["local"] for a in cni0["addr_info"] if a["family"] == "inet"] == ["10.244.1.1"]
    root_addrs = {a["local"] for link in ip_json(None, "addr", "show")
                  for a in link.get("addr_info", [])}
    assert not root_addrs & {"10.244.1.1", "10.244.2.1", "192.168.0.1", "192.168.0.2"}


def test_node_namespaces_route_other_nodes_pod_cidrs_via_their_internal_ip(two_nodes):
    for node, other_cidr, gateway in (("node-1", "10.244.2.0/24", "192.168.0.2"),
                                      ("node-2", "10.244.1.0/24", "192.168.0.1")):
        routes = ip_json(two_nodes.node_netns(node), "-4", "route", "show")
        assert {"dst": other_cidr, "gateway": gateway, "dev": "eth0"}.items() <= next(
            r for r in routes if r["dst"] == other_cidr).items()
        forwarding = sh("nsenter", f"--net={two_nodes.node_netns(node)}",
                        "sysctl", "-n", "net.ipv4.ip_forward").strip()
        assert forwarding == "1"


def test_node_1_kernel_sends_app_b_traffic_via_node_2(two_nodes):
    assert two_nodes.cluster.linux_nodes is not None
    answer = two_nodes.cluster.linux_nodes.route_get("node-1", pod_ips(two_nodes.pod("app-b"))[0])
    assert " via 192.168.0.2 dev eth0 " in f" {answer} "


def test_a_tcp_connection_from_app_a_reaches_app_b_on_another_node_unmasqueraded(two_nodes):
    a_ip, b_ip = pod_ips(two_nodes.pod("app-a"))[0], pod_ips(two_nodes.pod("app-b"))[0]
    exchange = tcp_exchange(two_nodes.pod_netns("app-b"), b_ip, two_nodes.pod_netns("app-a"),
                            port=8080, server_name="app-b")
    assert exchange.text == f"hello from app-b {b_ip}:8080 to {a_ip}"
    assert exchange.server_saw == a_ip


def test_stop_removes_every_namespace_the_cluster_created():
    running = start_cluster(2)
    cluster = running.cluster
    assert cluster.linux_nodes is not None
    prefix = cluster.linux_nodes.prefix
    try:
        cluster.api.create(builders.pod("web", node_name="node-2"))
        running.loop.run_until_complete(cluster.settle())
        sandbox = running.pod_netns("web")
        ours = [n for n in netns_names() if n.startswith(prefix)]
        assert sorted(ours) == [f"{prefix}node-1", f"{prefix}node-2", f"{prefix}underlay"]
        assert os.path.basename(sandbox) in netns_names()
    finally:
        stop_cluster(running)
    left = netns_names()
    assert [n for n in left if n.startswith(prefix)] == []
    assert os.path.basename(sandbox) not in left
