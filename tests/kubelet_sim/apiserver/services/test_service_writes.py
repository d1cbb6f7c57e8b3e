"""Services through the in-process API server: defaults, allocation on create, the rules
of an update, release on delete, and the allocations rebuilt from the stored Services
when the API server starts again on its database."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubelet_sim.api.errors import InvalidObject
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock


def service(name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("ports", [{"port": 80}])
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock(), service_cluster_ip_range="10.0.0.0/24",
                     service_node_port_range="30000-30100")


def test_a_new_service_is_defaulted_and_given_a_cluster_ip_from_the_range(api: APIServer) -> None:
    svc = api.create(service("web", selector={"app": "web"}))
    assert svc.spec["type"] == "ClusterIP"
    assert svc.spec["sessionAffinity"] == "None"
    assert svc.spec["internalTrafficPolicy"] == "Cluster"
    assert svc.spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert svc.spec["clusterIP"].startswith("10.0.0.")
    assert svc.spec["clusterIPs"] == [svc.spec["clusterIP"]]
    assert (svc.spec["ipFamilies"], svc.spec["ipFamilyPolicy"]) == (["IPv4"], "SingleStack")
    assert svc.status == {"loadBalancer": {}}


def test_an_explicit_cluster_ip_taken_by_another_service_is_refused(api: APIServer) -> None:
    api.create(service("a", clusterIP="10.0.0.5"))
    with pytest.raises(InvalidObject) as refused:
        api.create(service("b", clusterIP="10.0.0.5"))
    assert refused.value.message == (
        'Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.5"}: '
        "failed to allocate IP 10.0.0.5: provided IP is already allocated")


def test_a_node_port_service_gets_a_node_port_and_an_explicit_one_is_kept(api: APIServer) -> None:
    svc = api.create(service("np", type="NodePort", ports=[
        {"name": "a", "port": 80}, {"name": "b", "port": 81, "nodePort": 30007}]))
    first, second = svc.spec["ports"]
    assert 30000 <= first["nodePort"] <= 30100 and second["nodePort"] == 30007
    assert svc.spec["externalTrafficPolicy"] == "Cluster"
    with pytest.raises(InvalidObject, match=r"spec.ports\[0\].nodePort: Invalid value: 30007: "
                                            r"provided port is already allocated"):
        api.create(service("np2", type="NodePort", ports=[{"port": 80, "nodePort": 30007}]))


def test_a_failed_create_gives_its_allocations_back(api: APIServer) -> None:
    api.create(service("a", type="NodePort", ports=[{"port": 80, "nodePort": 30001}]))
    with pytest.raises(InvalidObject):  # the second port's node port is taken
        api.create(service("b", type="NodePort", clusterIP="10.0.0.9", ports=[
            {"name": "x", "port": 80, "nodePort": 30002},
            {"name": "y", "port": 81, "nodePort": 30001}]))
    again = api.create(service("b", type="NodePort", clusterIP="10.0.0.9",
                               ports=[{"port": 80, "nodePort": 30002}]))
    assert again.spec["clusterIP"] == "10.0.0.9"


def test_headless_external_name_and_load_balancer_services(api: APIServer) -> None:
    headless = api.create(service("db", clusterIP="None", ports=[]))
    assert headless.spec["clusterIPs"] == ["None"]
    named = api.create(service("ext", type="ExternalName", externalName="example.com"))
    assert "clusterIP" not in named.spec
    balanced = api.create(service("lb", type="LoadBalancer"))
    assert balanced.spec["ports"][0]["nodePort"] and balanced.spec["clusterIP"]
    assert balanced.spec["allocateLoadBalancerNodePorts"] is True
    assert balanced.status == {"loadBalancer": {}}  # no cloud provider fills it


def test_validation_speaks_as_kube_apiserver(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create(service("bad", type="Magic", ports=[{"port": 0, "protocol": "HTTP"}]))
    assert [str(e) for e in refused.value.errors] == [
        'spec.type: Unsupported value: "Magic": supported values: "ClusterIP", '
        '"ExternalName", "LoadBalancer", "NodePort"',
        "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        'spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", '
        '"TCP", "UDP"',
        # the target port defaults to the port
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"]
    with pytest.raises(InvalidObject, match=r"spec.ports\[1\].name: Required value"):
        api.create(service("two", ports=[{"name": "a", "port": 80}, {"port": 81}]))
    with pytest.raises(InvalidObject, match=r"spec\.ports: Required value"):
        api.create(service("none", ports=[]))
    with pytest.raises(InvalidObject, match="may not be used when `type` is 'ClusterIP'"):
        api.create(service("cip", ports=[{"port": 80, "nodePort": 30010}]))


def test_an_update_without_cluster_ip_keeps_it_and_changing_it_is_refused(
        api: APIServer) -> None:
    created = api.create(service("web", type="NodePort"))
    replaced = api.update(Resource.from_dict(service("web", type="NodePort")))
    assert replaced.spec["clusterIP"] == created.spec["clusterIP"]
    assert replaced.spec["ports"][0]["nodePort"] == created.spec["ports"][0]["nodePort"]
    with pytest.raises(InvalidObject) as refused:
        api.patch("Service", "web", {"spec": {"clusterIP": "10.0.0.77"}}, "default")
    assert str(refused.value.errors[0]) == (
        'spec.clusterIPs[0]: Invalid value: []string{"10.0.0.77"}: may not change once set')


def test_an_update_to_cluster_ip_gives_the_node_ports_back(api: APIServer) -> None:
    api.create(service("web", type="NodePort", ports=[{"port": 80, "nodePort": 30020}]))
    api.patch("Service", "web", {"spec": {"type": "ClusterIP"}}, "default")
    assert "nodePort" not in api.get("Service", "web", "default").spec["ports"][0]
    api.create(service("other", type="NodePort", ports=[{"port": 80, "nodePort": 30020}]))


def test_delete_gives_the_cluster_ip_and_node_ports_back(api: APIServer) -> None:
    api.create(service("web", type="NodePort", clusterIP="10.0.0.7",
                       ports=[{"port": 80, "nodePort": 30030}]))
    api.delete("Service", "web", "default")
    again = api.create(service("web2", type="NodePort", clusterIP="10.0.0.7",
                               ports=[{"port": 80, "nodePort": 30030}]))
    assert again.spec["clusterIP"] == "10.0.0.7"


def test_allocations_are_rebuilt_from_the_stored_services_after_a_restart(
        tmp_path: Path) -> None:
    path = tmp_path / "objects.db"
    first = APIServer(database=ObjectDatabase(path))
    held = first.create(service("web", type="NodePort"))
    ip, port = held.spec["clusterIP"], held.spec["ports"][0]["nodePort"]
    second = APIServer(database=ObjectDatabase(path))
    with pytest.raises(InvalidObject, match="provided IP is already allocated"):
        second.create(service("copy", clusterIP=ip))
    with pytest.raises(InvalidObject, match="provided port is already allocated"):
        second.create(service("copy", type="NodePort", ports=[{"port": 80, "nodePort": port}]))


def test_a_single_stack_cluster_refuses_the_other_family(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create(service("six", clusterIP="fd00::10"))
    assert str(refused.value.errors[0]) == ('spec.clusterIPs[0]: Invalid value: '
                                            '[]string{"fd00::10"}: IPv6 is not configured '
                                            "on this cluster")
    with pytest.raises(InvalidObject, match="this cluster is not configured for dual-stack"):
        api.create(service("dual", ipFamilyPolicy="RequireDualStack"))
    preferred = api.create(service("prefer", ipFamilyPolicy="PreferDualStack"))
    assert preferred.spec["ipFamilies"] == ["IPv4"]


def test_a_headless_service_without_selector_asks_for_both_families(api: APIServer) -> None:
    bare = api.create(service("bare", clusterIP="None"))
    assert (bare.spec["ipFamilyPolicy"], bare.spec["ipFamilies"]) == ("RequireDualStack",
                                                                      ["IPv4", "IPv6"])
    selecting = api.create(service("selecting", clusterIP="None", selector={"app": "db"}))
    assert (selecting.spec["ipFamilyPolicy"], selecting.spec["ipFamilies"]) == (
        "SingleStack", ["IPv4"])


def test_a_named_target_port_must_be_an_iana_service_name(api: APIServer) -> None:
    with pytest.raises(InvalidObject) as refused:
        api.create(service("named", ports=[{"port": 80, "targetPort": "Web--"}]))
    assert [str(e) for e in refused.value.errors] == [
        'spec.ports[0].targetPort: Invalid value: "Web--": must contain only alpha-numeric '
        "characters (a-z, 0-9), and hyphens (-)",
        'spec.ports[0].targetPort: Invalid value: "Web--": must not contain consecutive '
        "hyphens",
        'spec.ports[0].targetPort: Invalid value: "Web--": must not begin or end with a '
        "hyphen"]


def test_client_ip_affinity_defaults_its_timeout_to_three_hours(api: APIServer) -> None:
    sticky = api.create(service("sticky", sessionAffinity="ClientIP"))
    assert sticky.spec["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 10800}}
