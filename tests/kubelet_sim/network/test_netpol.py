"""NetworkPolicy semantics, one case per rule."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.network.netpol import NetworkPolicyEngine
from kubelet_sim.testing.fake_clock import FakeClock

MYSQL = [{"name": "mysql", "containerPort": 3306}]


@pytest.fixture
def api() -> APIServer:
    api = APIServer(clock=FakeClock())
    api.create(new("Namespace", "prod", labels={"team": "prod"}))
    api.create(new("Namespace", "other"))
    for i in (1, 2):
        api.create(new("Node", f"node-{i}", spec={"podCIDR": f"10.244.{i}.0/24"},
                       status={"addresses": [{"type": "InternalIP",
                                              "address": f"192.168.0.{i}"}]}))
    add_pod(api, "web", "10.244.1.2", {"app": "web"}, node="node-1")
    add_pod(api, "db-1", "10.244.2.2", {"app": "db"}, node="node-2", ports=MYSQL)
    add_pod(api, "db-2", "10.244.2.3", {"app": "db"}, node="node-2")
    add_pod(api, "api", "10.244.1.5", {"app": "api"}, ns="prod")
    add_pod(api, "worker", "10.244.1.6", {"app": "worker"}, ns="prod")
    add_pod(api, "web", "10.244.1.7", {"app": "web"}, ns="other")
    add_pod(api, "far", "10.244.1.200", {"app": "far"})
    return api


def add_pod(api: APIServer, name: str, ip: str, labels: dict[str, str], ns: str = "default",
            node: str = "node-1", ports: list[dict[str, Any]] | None = None) -> None:
    pod = api.create(new("Pod", name, ns, labels=labels, spec={
        "nodeName": node, "containers": [{"name": "c", "image": "i", "ports": ports or []}]}))
    pod.status = {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}]}
    api.update_status(pod)


def policy(api: APIServer, name: str, spec: dict[str, Any], ns: str = "default") -> None:
    api.create(new("NetworkPolicy", name, ns, spec=spec))


def may(api: APIServer, src: str, dst: str, port: int, proto: str = "TCP") -> bool:
    engine = NetworkPolicyEngine(api)
    return engine.may_connect(_who(api, src), _who(api, dst), port, proto).allowed


def _who(api: APIServer, ref: str) -> Any:
    if "/" in ref:
        ns, name = ref.split("/")
        return api.get("Pod", name, ns)
    return ref if ref[0].isdigit() else api.get("Pod", ref, "default")


WEB_TO_DB_3306 = {"podSelector": {"matchLabels": {"app": "db"}},
                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                               "ports": [{"protocol": "TCP", "port": 3306}]}]}
DENY_ALL_INGRESS: dict[str, Any] = {"podSelector": {}}


def test_without_policies_everything_is_allowed(api: APIServer) -> None:
    verdict = NetworkPolicyEngine(api).may_connect(api.get("Pod", "web", "default"),
                                                   api.get("Pod", "db-1", "default"), 3306)
    assert verdict.allowed and not verdict.ingress.isolated and not verdict.egress.isolated


def test_scenario_3_only_web_reaches_db_on_3306_tcp(api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    assert may(api, "web", "db-1", 3306)
    assert not may(api, "web", "db-1", 8080)
    assert not may(api, "db-2", "db-1", 3306)
    assert not may(api, "web", "db-1", 3306, "UDP")


def test_verdict_names_the_isolating_and_allowing_policies(api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    engine = NetworkPolicyEngine(api)
    ok = engine.may_connect("10.244.1.2", "10.244.2.2", 3306)
    assert ok.ingress.isolating == ("default/db-allow-web",)
    assert ok.ingress.allowing == ("default/db-allow-web",)
    denied = engine.may_connect("10.244.1.2", "10.244.2.2", 8080)
    assert denied.ingress.allowing == () and not denied
    assert any("no rule allows" in r for r in denied.reasons)


def test_ingress_policy_does_not_isolate_egress(api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    assert may(api, "db-1", "web", 80)


def test_selecting_policy_with_no_ingress_rules_denies_all_ingress(api: APIServer) -> None:
    policy(api, "deny", DENY_ALL_INGRESS)
    assert not may(api, "web", "db-1", 3306)
    assert not may(api, "prod/api", "web", 80)
    assert may(api, "web", "prod/api", 80)  # prod is not selected by a default-namespace policy


def test_policy_types_default_adds_egress_when_egress_rules_exist(api: APIServer) -> None:
    to_db = {"to": [{"podSelector": {"matchLabels": {"app": "db"}}}]}
    policy(api, "web-egress", {"podSelector": {"matchLabels": {"app": "web"}}, "egress": [to_db]})
    assert may(api, "web", "db-1", 3306)
    assert not may(api, "web", "prod/api", 80)  # egress isolated
    assert not may(api, "db-1", "web", 80)  # ingress isolated too, with no ingress rules


def test_empty_egress_list_does_not_default_egress_isolation(api: APIServer) -> None:
    policy(api, "p", {"podSelector": {"matchLabels": {"app": "web"}}, "egress": []})
    assert may(api, "web", "prod/api", 80)
    assert not may(api, "db-1", "web", 80)


def test_explicit_egress_only_policy_leaves_ingress_open(api: APIServer) -> None:
    policy(api, "no-egress", {"podSelector": {"matchLabels": {"app": "web"}},
                              "policyTypes": ["Egress"]})
    assert not may(api, "web", "db-1", 3306)
    assert may(api, "db-1", "web", 80)


def test_connection_needs_egress_at_source_and_ingress_at_destination(api: APIServer) -> None:
    policy(api, "web-egress", {"podSelector": {"matchLabels": {"app": "web"}},
                               "policyTypes": ["Egress"], "egress": [{}]})
    policy(api, "db-deny", {"podSelector": {"matchLabels": {"app": "db"}}})
    verdict = NetworkPolicyEngine(api).may_connect("10.244.1.2", "10.244.2.2", 3306)
    assert verdict.egress.allowed and verdict.egress.isolated
    assert not verdict.ingress.allowed and not verdict.allowed


def test_policies_are_a_union_of_allows(api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    policy(api, "db-allow-prod", {"podSelector": {"matchLabels": {"app": "db"}},
                                  "ingress": [{"from": [{"namespaceSelector": {
                                      "matchLabels": {"team": "prod"}}}],
                                      "ports": [{"port": 5432}]}]})
    assert may(api, "web", "db-1", 3306)
    assert may(api, "prod/api", "db-1", 5432)
    assert not may(api, "prod/api", "db-1", 3306)
    assert not may(api, "web", "db-1", 5432)


def test_pod_selector_peer_only_matches_the_policys_namespace(api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    assert not may(api, "other/web", "db-1", 3306)


def test_namespace_selector_alone_selects_every_pod_of_those_namespaces(api: APIServer) -> None:
    policy(api, "from-prod", {"podSelector": {}, "ingress": [
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "prod"}}}]}]})
    assert may(api, "prod/api", "db-1", 1)
    assert may(api, "prod/worker", "db-1", 1)
    assert not may(api, "web", "db-1", 1)


def test_namespace_selector_by_metadata_name_label(api: APIServer) -> None:
    policy(api, "from-other", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "other"}}}]}]})
    assert may(api, "other/web", "db-1", 1)
    assert not may(api, "prod/api", "db-1", 1)


def test_both_selectors_in_one_peer_are_anded(api: APIServer) -> None:
    policy(api, "prod-api", {"podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "prod"}},
         "podSelector": {"matchLabels": {"app": "api"}}}]}]})
    assert may(api, "prod/api", "db-1", 1)
    assert not may(api, "prod/worker", "db-1", 1)


def test_selectors_in_separate_peers_are_ored(api: APIServer) -> None:
    policy(api, "prod-or-web", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "prod"}}},
                  {"podSelector": {"matchLabels": {"app": "web"}}}]}]})
    assert may(api, "prod/worker", "db-1", 1)
    assert may(api, "web", "db-1", 1)
    assert not may(api, "db-2", "db-1", 1)


def test_ip_block_with_except_matches_pod_and_external_ips(api: APIServer) -> None:
    policy(api, "blocks", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [{"from": [
        {"ipBlock": {"cidr": "10.244.1.0/24", "except": ["10.244.1.128/25"]}},
        {"ipBlock": {"cidr": "203.0.113.0/24"}}]}]})
    assert may(api, "web", "db-1", 3306)  # pod IP inside the block
    assert not may(api, "far", "db-1", 3306)  # inside the except
    assert may(api, "203.0.113.9", "db-1", 3306)  # outside the cluster
    assert not may(api, "198.51.100.1", "db-1", 3306)


def test_external_endpoints_match_no_pod_or_namespace_selector(api: APIServer) -> None:
    policy(api, "all-ns", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {}}]}]})
    assert may(api, "prod/api", "db-1", 1)
    assert not may(api, "203.0.113.9", "db-1", 1)


def test_named_port_resolves_on_the_destination_pod(api: APIServer) -> None:
    policy(api, "mysql", {"podSelector": {"matchLabels": {"app": "db"}},
                          "ingress": [{"ports": [{"port": "mysql"}]}]})
    assert may(api, "web", "db-1", 3306)
    assert not may(api, "web", "db-1", 3307)
    assert not may(api, "web", "db-2", 3306)  # db-2 has no port named mysql


def test_egress_named_port_resolves_on_the_destination_too(api: APIServer) -> None:
    policy(api, "web-out", {"podSelector": {"matchLabels": {"app": "web"}},
                            "policyTypes": ["Egress"], "egress": [{"ports": [{"port": "mysql"}]}]})
    assert may(api, "web", "db-1", 3306)
    assert not may(api, "web", "db-2", 3306)
    assert not may(api, "web", "203.0.113.9", 3306)


def test_end_port_allows_a_range(api: APIServer) -> None:
    policy(api, "range", {"podSelector": {}, "ingress": [
        {"ports": [{"protocol": "TCP", "port": 8000, "endPort": 8080}]}]})
    assert may(api, "web", "db-1", 8000) and may(api, "web", "db-1", 8080)
    assert not may(api, "web", "db-1", 7999) and not may(api, "web", "db-1", 8081)


@pytest.mark.parametrize(("ports", "port", "proto", "expected"), [
    ([{"port": 53}], 53, "TCP", True),  # protocol defaults to TCP
    ([{"port": 53}], 53, "UDP", False),
    ([{"protocol": "UDP", "port": 53}], 53, "UDP", True),
    ([{"protocol": "UDP", "port": 53}], 53, "TCP", False),
    ([{"protocol": "SCTP", "port": 9}], 9, "SCTP", True),
    ([{"protocol": "UDP"}], 4242, "UDP", True),  # no port: every port of that protocol
    ([{"protocol": "UDP"}], 4242, "TCP", False),
    ([], 4242, "SCTP", True),  # no ports: everything
])
def test_port_protocol_matching(api: APIServer, ports: list, port: int, proto: str,
                                expected: bool) -> None:
    policy(api, "p", {"podSelector": {}, "ingress": [{"ports": ports}]})
    assert may(api, "web", "db-1", port, proto) is expected


def test_empty_rule_allows_everything_in_its_direction(api: APIServer) -> None:
    policy(api, "all", {"podSelector": {}, "ingress": [{}]})
    assert may(api, "203.0.113.9", "db-1", 1, "UDP")


def test_a_pod_may_always_reach_itself(api: APIServer) -> None:
    policy(api, "deny", DENY_ALL_INGRESS)
    assert may(api, "db-1", "db-1", 3306)
    assert not may(api, "db-2", "db-1", 3306)


def test_traffic_from_the_pods_own_node_is_always_allowed(api: APIServer) -> None:
    policy(api, "deny", DENY_ALL_INGRESS)
    assert may(api, "192.168.0.2", "db-1", 3306)  # db-1 runs on node-2
    assert not may(api, "192.168.0.1", "db-1", 3306)


def test_host_network_pods_are_not_isolated(api: APIServer) -> None:
    host = api.create(new("Pod", "agent", "default", labels={"app": "db"}, spec={
        "nodeName": "node-1", "hostNetwork": True, "containers": [{"name": "c", "image": "i"}]}))
    host.status = {"phase": "Running", "podIP": "192.168.0.1", "podIPs": [{"ip": "192.168.0.1"}]}
    api.update_status(host)
    policy(api, "deny", DENY_ALL_INGRESS)
    engine = NetworkPolicyEngine(api)
    assert engine.may_connect(api.get("Pod", "web", "default"), api.get("Pod", "agent", "default"),
                              22).allowed


def test_unknown_protocol_is_rejected(api: APIServer) -> None:
    with pytest.raises(ValueError):
        may(api, "web", "db-1", 1, "ICMP")


def test_egress_ip_block_allows_external_destinations_only_inside_the_block(
        api: APIServer) -> None:
    policy(api, "web-out", {"podSelector": {"matchLabels": {"app": "web"}},
                            "policyTypes": ["Egress"],
                            "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0",
                                                            "except": ["10.0.0.0/8"]}}],
                                        "ports": [{"protocol": "TCP", "port": 443}]}]})
    assert may(api, "web", "203.0.113.9", 443)
    assert not may(api, "web", "203.0.113.9", 80)
    assert not may(api, "web", "db-1", 443)  # pod IP falls in the except


def test_policies_in_another_namespace_never_select_a_pod(api: APIServer) -> None:
    policy(api, "deny-prod", {"podSelector": {}}, ns="prod")
    assert may(api, "web", "db-1", 3306)
    assert not may(api, "web", "prod/api", 80)


def test_dual_stack_destination_is_reached_in_the_sources_family(api: APIServer) -> None:
    pod = api.get("Pod", "db-1", "default")
    pod.status["podIPs"] = [{"ip": "10.244.2.2"}, {"ip": "fd00:2::2"}]
    api.update_status(pod)
    policy(api, "v6-only", {"podSelector": {"matchLabels": {"app": "db"}}, "ingress": [
        {"from": [{"ipBlock": {"cidr": "fd00::/16"}}]}]})
    engine = NetworkPolicyEngine(api)
    verdict = engine.may_connect("fd00:1::9", api.get("Pod", "db-1", "default"), 3306)
    assert verdict.allowed and "fd00:2::2" in verdict.reasons[0]
    assert not engine.may_connect("10.244.1.2", api.get("Pod", "db-1", "default"), 3306)


def test_isolating_policies_lists_the_policies_selecting_a_pod_per_direction(
        api: APIServer) -> None:
    policy(api, "db-allow-web", WEB_TO_DB_3306)
    policy(api, "all-egress", {"podSelector": {}, "policyTypes": ["Egress"]})
    engine = NetworkPolicyEngine(api)
    db = api.get("Pod", "db-1", "default")
    assert [p.name for p in engine.isolating_policies(db, "Ingress")] == ["db-allow-web"]
    assert [p.name for p in engine.isolating_policies(db, "Egress")] == ["all-egress"]
