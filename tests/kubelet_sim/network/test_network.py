"""host-gw routing between nodes, and reachability = routing AND policy."""

from __future__ import annotations

import pytest

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.network.host_gw import (
    LOCAL,
    NODE,
    UNREACHABLE,
    VIA,
    ClusterNetwork,
    Route,
    node_route_table,
)
from kubelet_sim.testing.fake_clock import FakeClock


@pytest.fixture
def api() -> APIServer:
    api = APIServer(clock=FakeClock())
    add_node(api, "node-1", "10.244.1.0/24", "192.168.0.1")
    add_node(api, "node-2", "10.244.2.0/24", "192.168.0.2")
    add_pod(api, "app-a", "node-1", "10.244.1.2", {"app": "a"})
    add_pod(api, "app-b", "node-2", "10.244.2.2", {"app": "b"})
    return api


def add_node(api: APIServer, name: str, cidr: str | None, ip: str | None) -> None:
    status = {"addresses": [{"type": "InternalIP", "address": ip}]} if ip else {}
    api.create(new("Node", name, spec={"podCIDR": cidr} if cidr else {}, status=status))


def add_pod(api: APIServer, name: str, node_name: str, ip: str, labels: dict[str, str]) -> None:
    pod = api.create(new("Pod", name, "default", labels=labels, spec={
        "nodeName": node_name, "containers": [{"name": "c", "image": "i"}]}))
    pod.status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    api.update_status(pod)


def test_node_1_reaches_a_node_2_pod_via_node_2s_internal_ip(api: APIServer) -> None:
    decision = ClusterNetwork(api).route("node-1", "10.244.2.2")
    assert decision.kind == VIA
    assert decision.next_hop == "192.168.0.2" and decision.dst_node == "node-2"


def test_route_table_lists_own_cidr_locally_then_other_nodes_via_their_ip(
        api: APIServer) -> None:
    add_node(api, "node-3", "10.244.3.0/24", "192.168.0.3")
    assert ClusterNetwork(api).route_table("node-1") == [
        Route("10.244.1.0/24", None, "node-1"),
        Route("10.244.2.0/24", "192.168.0.2", "node-2"),
        Route("10.244.3.0/24", "192.168.0.3", "node-3"),
    ]


def test_destination_on_own_pod_cidr_is_local(api: APIServer) -> None:
    decision = ClusterNetwork(api).route("node-1", "10.244.1.2")
    assert decision.kind == LOCAL and decision.next_hop is None


def test_node_internal_ip_is_on_the_node_segment(api: APIServer) -> None:
    decision = ClusterNetwork(api).route("node-1", "192.168.0.2")
    assert decision.kind == NODE and decision.dst_node == "node-2"


def test_address_outside_every_cidr_is_unreachable(api: APIServer) -> None:
    decision = ClusterNetwork(api).route("node-1", "10.99.0.1")
    assert decision.kind == UNREACHABLE and not decision.reachable


def test_node_without_internal_ip_gets_no_route(api: APIServer) -> None:
    add_node(api, "node-3", "10.244.3.0/24", None)
    assert ClusterNetwork(api).route("node-1", "10.244.3.4").kind == UNREACHABLE


def test_route_from_unknown_node_fails_not_found(api: APIServer) -> None:
    with pytest.raises(NotFound):
        ClusterNetwork(api).route("node-9", "10.244.1.2")


def test_longest_prefix_wins(api: APIServer) -> None:
    add_node(api, "node-3", "10.244.2.128/25", "192.168.0.3")
    net = ClusterNetwork(api)
    assert net.route("node-1", "10.244.2.200").next_hop == "192.168.0.3"
    assert net.route("node-1", "10.244.2.2").next_hop == "192.168.0.2"


def test_pod_reaches_pod_on_another_node_without_policies(api: APIServer) -> None:
    result = ClusterNetwork(api).reach(api.get("Pod", "app-a", "default"),
                                       api.get("Pod", "app-b", "default"), 80)
    assert result.reachable and result.route.next_hop == "192.168.0.2"


def test_policy_denial_makes_a_routable_pod_unreachable(api: APIServer) -> None:
    api.create(new("NetworkPolicy", "deny-b", "default",
                   spec={"podSelector": {"matchLabels": {"app": "b"}}}))
    result = ClusterNetwork(api).reach("10.244.1.2", "10.244.2.2", 80)
    assert result.route.reachable and result.verdict is not None
    assert not result.reachable and not result.verdict.allowed


def test_ip_without_a_pod_is_not_reachable(api: APIServer) -> None:
    result = ClusterNetwork(api).reach("10.244.1.2", "10.244.2.77", 80)
    assert not result.reachable and any("no pod holds" in r for r in result.reasons)


def test_pod_without_ip_is_not_reachable(api: APIServer) -> None:
    pending = api.create(new("Pod", "pending", "default", spec={
        "containers": [{"name": "c", "image": "i"}]}))
    result = ClusterNetwork(api).reach(api.get("Pod", "app-a", "default"), pending, 80)
    assert not result.reachable


def test_node_of_ip_knows_internal_ips_and_pod_cidrs(api: APIServer) -> None:
    net = ClusterNetwork(api)
    assert net.node_of_ip("192.168.0.2") == "node-2"
    assert net.node_of_ip("10.244.1.77") == "node-1"
    assert net.node_of_ip("8.8.8.8") is None


def test_route_table_lines_read_like_ip_route(api: APIServer) -> None:
    assert node_route_table(api, "node-2") == ["10.244.2.0/24 local",
                                               "10.244.1.0/24 via 192.168.0.1"]
    assert node_route_table(api, "node-9") == []


def test_node_ip_reaches_a_pod_on_another_node(api: APIServer) -> None:
    result = ClusterNetwork(api).reach("192.168.0.1", api.get("Pod", "app-b", "default"), 80)
    assert result.reachable and result.route.next_hop == "192.168.0.2"


def test_reachability_reads_like_a_verdict(api: APIServer) -> None:
    result = ClusterNetwork(api).reach("10.244.1.2", "10.244.2.2", 80)
    assert result.allowed is result.reachable is True and bool(result)
