"""CNI versions and results as the runtime reads them: parsing, conversion, pod IPs."""

from __future__ import annotations

from typing import Any

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.results import (
    ALL_RESULT_VERSIONS,
    convert_result,
    create_result,
    parse_version,
    pod_ips,
    to_current,
    version_at_least,
)

CURRENT: dict[str, Any] = {
    "cniVersion": "1.1.0",
    "interfaces": [
        {"name": "cni0", "mac": "aa:aa:aa:aa:aa:01"},
        {"name": "eth0", "mac": "aa:aa:aa:aa:aa:02", "sandbox": "/var/run/netns/x", "mtu": 1400},
    ],
    "ips": [
        {"interface": 1, "address": "10.244.1.2/24", "gateway": "10.244.1.1"},
        {"interface": 1, "address": "10.244.1.3/24"},
        {"interface": 1, "address": "fd00::2/64", "gateway": "fd00::1"},
    ],
    "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.1.1"}, {"dst": "::/0"}],
    "dns": {"nameservers": ["10.96.0.10"]},
}


def test_an_empty_version_is_0_1_0_and_versions_compare_numerically():
    assert parse_version("") == (0, 1, 0)
    assert version_at_least("0.10.0", "0.4.0")
    assert not version_at_least("0.3.1", "0.4.0")


@pytest.mark.parametrize("bad", ["1.0.0.0", "a.b.c", "1.x"])
def test_a_malformed_version_is_an_error(bad):
    with pytest.raises(CNIError):
        parse_version(bad)


def test_an_unknown_result_version_is_unsupported():
    with pytest.raises(CNIError, match=r'unsupported CNI result version "9\.9\.9"'):
        create_result("9.9.9", {})


@pytest.mark.parametrize("version", ALL_RESULT_VERSIONS)
def test_every_version_converts_back_to_the_same_pod_ips(version):
    old = convert_result(CURRENT, version)
    assert old["cniVersion"] == version
    again = to_current(create_result(version, old))
    expected = ["10.244.1.2", "fd00::2"]
    assert [ip.ip for ip in pod_ips(again)] == expected


def test_0_4_0_results_carry_an_ip_version_and_drop_1_1_fields():
    old = convert_result(CURRENT, "0.4.0")
    assert [ip["version"] for ip in old["ips"]] == ["4", "4", "6"]
    assert "mtu" not in old["interfaces"][1]


def test_0_2_0_results_keep_the_first_address_per_family_with_its_routes():
    old = convert_result(CURRENT, "0.2.0")
    assert old["ip4"] == {
        "ip": "10.244.1.2/24",
        "gateway": "10.244.1.1",
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.1.1"}],
    }
    assert old["ip6"] == {"ip": "fd00::2/64", "gateway": "fd00::1", "routes": [{"dst": "::/0"}]}
    assert old["dns"] == {"nameservers": ["10.96.0.10"]}


def test_a_result_without_addresses_cannot_become_0_2_0():
    with pytest.raises(CNIError, match="no valid IP addresses"):
        convert_result({"cniVersion": "1.0.0", "interfaces": [{"name": "lo"}]}, "0.2.0")


def test_parsing_drops_keys_the_versions_type_does_not_have():
    parsed = create_result("1.0.0", {**CURRENT, "cniVersion": "1.0.0", "extra": 1})
    assert "extra" not in parsed


def test_pod_ips_take_the_first_ip_of_eth0_per_family_ipv4_first():
    reordered = {**CURRENT, "ips": list(reversed(CURRENT["ips"]))}
    assert [ip.ip for ip in pod_ips(reordered)] == ["10.244.1.3", "fd00::2"]


def test_pod_ips_ignore_addresses_on_other_interfaces():
    result = {
        "cniVersion": "1.0.0",
        "interfaces": [{"name": "cni0"}, {"name": "eth0", "sandbox": "/x"}],
        "ips": [
            {"interface": 0, "address": "10.0.0.1/24"},
            {"interface": 1, "address": "10.0.0.5/24"},
        ],
    }
    assert [ip.ip for ip in pod_ips(result)] == ["10.0.0.5"]


def test_an_ip_without_an_interface_index_belongs_to_the_default_interface():
    result = {"cniVersion": "1.0.0", "ips": [{"address": "10.0.0.9/24", "gateway": "10.0.0.1"}]}
    [ip] = pod_ips(result)
    assert (ip.ip, ip.gateway, ip.family) == ("10.0.0.9", "10.0.0.1", 4)


@pytest.mark.parametrize("address", ["10.0.0.5", "not-an-ip/24", "10.0.0.300/24"])
def test_a_result_address_that_is_not_a_cidr_fails_to_parse(address):
    with pytest.raises(CNIError, match="failed to parse result"):
        create_result("1.0.0", {"cniVersion": "1.0.0", "ips": [{"address": address}]})
