"""A dry run of a Service write answers what kube-apiserver's dry-run allocators answer
and takes nothing: the range's network address for a cluster IP left to the server, 32769
and up for node ports, an asked-for IP checked against the range only, an asked-for node
port refused when taken."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock(), service_cluster_ip_range="10.0.0.0/24",
                     service_node_port_range="30000-30100")


def test_a_dry_run_answers_the_network_address_and_32769_up_and_takes_nothing(
        api: APIServer) -> None:
    ports = [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]
    shown = api.create(service("web", type="NodePort", ports=ports), dry_run=True)
    assert shown.spec["clusterIPs"] == ["10.0.0.0"]
    assert [p["nodePort"] for p in shown.spec["ports"]] == [32769, 32770]
    assert api.services.ips.allocated() == [] and api.services.ports.allocated() == []


def test_a_dry_run_checks_an_asked_for_ip_against_the_range_but_not_the_taken_ones(
        api: APIServer) -> None:
    api.create(service("a", clusterIP="10.0.0.5"))
    assert api.create(service("b", clusterIP="10.0.0.5"), dry_run=True).spec["clusterIP"] \
        == "10.0.0.5"
    with pytest.raises(InvalidObject) as refused:
        api.create(service("c", clusterIP="10.1.0.5"), dry_run=True)
    assert "failed to allocate IP 10.1.0.5: the provided IP (10.1.0.5) is not in the valid " \
        "range" in refused.value.message


def test_a_dry_run_refuses_a_taken_node_port_and_gives_back_nothing_on_update(
        api: APIServer) -> None:
    made = api.create(service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30007}]))
    with pytest.raises(InvalidObject) as refused:
        api.create(service("b", type="NodePort", ports=[{"port": 80, "nodePort": 30007}]),
                   dry_run=True)
    assert "provided port is already allocated" in refused.value.message
    made.spec["type"] = "ClusterIP"
    made.spec["ports"][0].pop("nodePort")
    assert "nodePort" not in api.update(made, dry_run=True).spec["ports"][0]
    assert api.services.ports.allocated() == [30007]
