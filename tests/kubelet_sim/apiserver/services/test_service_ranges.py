"""The cluster IP and node port ranges: what is given, what is refused and in which words,
what comes back."""

from __future__ import annotations

import random

import pytest

from kubelet_sim.apiserver.services.ranges import (
    AlreadyAllocated,
    ClusterIPRange,
    NodePortRange,
    NotInRange,
    RangeFull,
    service_range_problem,
)


def test_the_first_address_of_the_default_range_is_the_kubernetes_services() -> None:
    assert ClusterIPRange().first() == "10.96.0.1"


def test_any_address_comes_from_the_upper_part_of_the_range_first() -> None:
    ips = ClusterIPRange("10.0.0.0/24", random.Random(1))
    given = {ips.allocate_next() for _ in range(50)}
    # a /24 keeps its first 16 usable addresses (10.0.0.1-16) for explicit requests
    assert all(16 < int(ip.rsplit(".", 1)[1]) < 255 for ip in given)
    assert len(given) == 50


def test_a_small_range_is_given_out_entirely_then_is_full() -> None:
    ips = ClusterIPRange("10.0.0.0/29", random.Random(2))
    given = sorted(ips.allocate_next() for _ in range(6))
    assert given == [f"10.0.0.{i}" for i in range(1, 7)]  # neither .0 nor .7 (broadcast)
    with pytest.raises(RangeFull):
        ips.allocate_next()


def test_an_address_asked_for_twice_is_refused_as_kube_apiserver_words_it() -> None:
    ips = ClusterIPRange()
    ips.allocate("10.96.0.10")
    with pytest.raises(AlreadyAllocated, match=r"^provided IP is already allocated$"):
        ips.allocate("10.96.0.10")


def test_an_address_outside_the_range_is_refused_with_the_range() -> None:
    with pytest.raises(NotInRange) as refused:
        ClusterIPRange().allocate("1.1.1.1")
    assert str(refused.value) == ("the provided IP (1.1.1.1) is not in the valid range. "
                                  "The range of valid IPs is 10.96.0.0/12")


def test_a_released_address_can_be_taken_again() -> None:
    ips = ClusterIPRange()
    ips.allocate("10.96.0.10")
    ips.release("10.96.0.10")
    ips.allocate("10.96.0.10")
    assert ips.allocated() == ["10.96.0.10"]


def test_node_ports_come_from_the_range_and_are_refused_outside_it() -> None:
    ports = NodePortRange("30000-30099", random.Random(3))
    assert 30000 <= ports.allocate_next() <= 30099
    with pytest.raises(NotInRange, match=r"The range of valid ports is 30000-30099$"):
        ports.allocate(8080)
    ports.allocate(30050)
    with pytest.raises(AlreadyAllocated, match=r"^provided port is already allocated$"):
        ports.allocate(30050)


def test_up_refuses_a_range_kube_apiserver_would_refuse() -> None:
    assert service_range_problem("10.96.0.0/12", "30000-32767") == ""
    assert "the mask must be >= 12" in service_range_problem("10.0.0.0/8", "30000-32767")
    assert "not a CIDR" in service_range_problem("nonsense", "30000-32767")
    assert "FIRST-LAST" in service_range_problem("10.96.0.0/12", "32767-30000")
