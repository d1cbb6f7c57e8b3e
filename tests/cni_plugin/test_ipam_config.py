"""host-local configuration: range sets, legacy fields, requested IPs, reference messages."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cni_plugin.ipam.ipam_config import IPAMConfig, IPAMConfigError, load_ipam_config


def load(ipam: dict[str, Any] | None, version: str = "1.0.0",
         cni_args: dict[str, str] | None = None, **top: Any) -> IPAMConfig:
    net: dict[str, Any] = {"cniVersion": version, "name": "net1", "type": "bridge", **top}
    if ipam is not None:
        net["ipam"] = ipam
    return load_ipam_config(json.dumps(net).encode(), cni_args or {})


def error_of(*args: Any, **kwargs: Any) -> str:
    with pytest.raises(IPAMConfigError) as info:
        load(*args, **kwargs)
    return str(info.value)


def test_legacy_single_range_is_prepended_to_ranges() -> None:
    conf = load({"subnet": "10.1.0.0/16", "ranges": [[{"subnet": "fd00::/64"}]]})
    assert [str(rs) for rs in conf.ranges] == ["10.1.0.1-10.1.255.254",
                                               "fd00::1-fd00::ffff:ffff:ffff:ffff"]


def test_defaults_data_dir_to_var_lib_cni_networks() -> None:
    assert load({"subnet": "10.1.0.0/16"}).data_dir == "/var/lib/cni/networks"


def test_missing_ipam_section_is_reported() -> None:
    assert error_of(None) == "IPAM config missing 'ipam' key"


def test_no_ranges_is_reported() -> None:
    assert error_of({"ranges": []}) == "no IP ranges specified"


def test_overlapping_range_sets_are_reported_by_index() -> None:
    assert error_of({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.2.0/25"}]]}) \
        == "range set 0 overlaps with 1"


def test_invalid_range_is_reported_with_its_range_set_index() -> None:
    assert error_of({"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.3.0/31"}]]}) \
        == "invalid range set 1: Network 10.1.3.0/31 too small to allocate from"


def test_unparseable_subnet_is_a_decode_error() -> None:
    assert error_of({"subnet": "bad"}) == "invalid CIDR address: bad"


def test_unparseable_gateway_is_a_decode_error() -> None:
    assert error_of({"subnet": "10.0.0.0/8", "gateway": "xx"}) == "invalid IP address: xx"


def test_routes_of_the_wrong_type_read_as_go_decoder_errors() -> None:
    assert error_of({"subnet": "10.0.0.0/8", "routes": "x"}) == (
        "json: cannot unmarshal string into Go struct field IPAMConfig.ipam.routes "
        "of type []*types.Route")


def test_a_mistyped_field_is_reported_even_when_later_checks_would_fail() -> None:
    assert error_of({"dataDir": 5}) == ("json: cannot unmarshal number into Go struct field "
                                        "IPAMConfig.ipam.dataDir of type string")


def test_a_parse_error_beats_an_earlier_type_mismatch() -> None:
    assert error_of({"dataDir": 5, "subnet": "bad"}) == "invalid CIDR address: bad"


def test_keys_match_field_names_case_insensitively_as_in_go() -> None:
    conf = load({"SUBNET": "10.1.0.0/16", "DataDir": "/tmp/x"})
    assert (str(conf.ranges[0]), conf.data_dir) == ("10.1.0.1-10.1.255.254", "/tmp/x")


def test_null_subnet_is_an_empty_cidr_but_a_missing_one_is_a_nil_address() -> None:
    assert error_of({"ranges": [[{"subnet": None}]]}) == "invalid CIDR address: "
    assert error_of({"ranges": [[{"rangeStart": "10.0.0.1"}]]}) == \
        "invalid range set 0: IP <nil> not v4 nor v6"


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0"])
def test_old_versions_refuse_two_range_sets_of_one_family(version: str) -> None:
    ipam = {"ranges": [[{"subnet": "10.1.2.0/24"}], [{"subnet": "10.1.3.0/24"}]]}
    assert error_of(ipam, version=version) == \
        f"CNI version {version} does not support more than 1 address per family"


def test_requested_ips_come_from_cni_args_then_args_then_runtime_config() -> None:
    conf = load({"subnet": "10.1.0.0/16"}, cni_args={"IP": "10.1.0.5"},
                args={"cni": {"ips": ["10.1.0.6/16"]}}, runtimeConfig={"ips": ["10.1.0.7"]})
    assert [str(ip) for ip in conf.requested_ips] == ["10.1.0.5", "10.1.0.6", "10.1.0.7"]


def test_cni_args_ip_that_does_not_parse_is_reported_with_its_pair() -> None:
    assert error_of({"subnet": "10.1.0.0/16"}, cni_args={"IP": "garbage"}) == \
        'ARGS: error parsing value of pair "IP=garbage": invalid IP address garbage'


def test_cni_args_ip_list_is_one_unparseable_value_as_in_the_reference() -> None:
    assert error_of({"subnet": "10.1.0.0/16"}, cni_args={"IP": "10.1.0.5,10.1.0.6"}) == \
        ('ARGS: error parsing value of pair "IP=10.1.0.5,10.1.0.6": '
         "invalid IP address 10.1.0.5,10.1.0.6")


def test_runtime_ip_ranges_are_prepended() -> None:
    conf = load({"subnet": "10.1.0.0/16"},
                runtimeConfig={"ipRanges": [[{"subnet": "192.168.0.0/24"}]]})
    assert str(conf.ranges[0]) == "192.168.0.1-192.168.0.254"


def test_routes_keep_the_destination_as_written() -> None:
    conf = load({"subnet": "10.1.0.0/16",
                 "routes": [{"dst": "10.9.0.3/16", "gw": "10.1.0.1"}, {"dst": "::/0"}]})
    assert [(r.dst_text, r.gw_text) for r in conf.routes] == [
        ("10.9.0.3/16", "10.1.0.1"), ("::/0", "")]
