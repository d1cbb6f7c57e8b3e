"""Results converted to and from every spec version, as the reference converters do."""

from __future__ import annotations

import pytest

from cni_spec.types import DNS, Interface, IPConfig, Result, Route
from cni_spec.version import (
    ALL_VERSIONS,
    VersionError,
    greater_or_equal,
    parse_version,
    result_from_json,
    result_to_json,
)

DUAL = Result(
    interfaces=[Interface(name="eth0", mac="0a:58:0a:01:00:02", mtu=1400, sandbox="/ns")],
    ips=[IPConfig(address="10.1.0.2/24", gateway="10.1.0.1", interface=0),
         IPConfig(address="10.1.0.3/24", interface=0),
         IPConfig(address="fd00::2/64", gateway="fd00::1", interface=0)],
    routes=[Route(dst="0.0.0.0/0", gw="10.1.0.1"), Route(dst="::/0")],
    dns=DNS(nameservers=["10.1.0.10"], search=["svc"]))


def test_parse_version_as_the_reference() -> None:
    assert parse_version("") == (0, 1, 0)
    assert parse_version("1") == (1, 0, 0)
    assert parse_version("0.4.0") == (0, 4, 0)
    with pytest.raises(VersionError, match="too many parts"):
        parse_version("1.2.3.4")
    with pytest.raises(VersionError, match='major version part "x"'):
        parse_version("x.1.0")


def test_versions_compare_numerically() -> None:
    assert greater_or_equal("0.10.0", "0.4.0")
    assert not greater_or_equal("0.3.1", "0.4.0")
    assert greater_or_equal("1.1.0", "1.1.0")


def test_legacy_versions_keep_the_first_ipv4_and_ipv6_with_their_routes() -> None:
    for version in ("0.1.0", "0.2.0"):
        assert result_to_json(DUAL, version) == {
            "cniVersion": version,
            "ip4": {"ip": "10.1.0.2/24", "gateway": "10.1.0.1",
                    "routes": [{"dst": "0.0.0.0/0", "gw": "10.1.0.1"}]},
            "ip6": {"ip": "fd00::2/64", "gateway": "fd00::1", "routes": [{"dst": "::/0"}]},
            "dns": {"nameservers": ["10.1.0.10"], "search": ["svc"]}}


def test_legacy_versions_cannot_express_a_result_without_addresses() -> None:
    with pytest.raises(ValueError, match="no valid IP addresses"):
        result_to_json(Result(interfaces=[Interface(name="lo")]), "0.2.0")


@pytest.mark.parametrize("version", ["0.3.0", "0.3.1", "0.4.0"])
def test_0_3_and_0_4_add_ip_version_and_drop_1_1_interface_fields(version: str) -> None:
    out = result_to_json(DUAL, version)
    assert out["interfaces"] == [{"name": "eth0", "mac": "0a:58:0a:01:00:02", "sandbox": "/ns"}]
    assert [ip["version"] for ip in out["ips"]] == ["4", "4", "6"]
    assert list(out["ips"][0]) == ["version", "interface", "address", "gateway"]
    assert out["dns"] == {"nameservers": ["10.1.0.10"], "search": ["svc"]}


def test_1_0_0_always_prints_dns_and_1_1_0_omits_it_when_empty() -> None:
    bare = Result(ips=[IPConfig(address="10.0.0.2/8")])
    assert result_to_json(bare, "1.0.0")["dns"] == {}
    assert "dns" not in result_to_json(bare, "1.1.0")
    assert result_to_json(DUAL, "1.1.0")["interfaces"][0]["mtu"] == 1400


@pytest.mark.parametrize("version", ["0.1.0", "0.2.0", "0.3.1", "0.4.0"])
def test_a_result_labelled_with_the_version_asked_for_is_printed_unconverted(
        version: str) -> None:
    """Go's converter returns such a result as it is (the reference loopback's case)."""
    labelled = Result(cni_version=version, interfaces=[Interface(name="lo", sandbox="/ns")],
                      ips=[IPConfig(address="127.0.0.1/8", interface=0)])
    assert result_to_json(labelled, version) == {
        "cniVersion": version, "interfaces": [{"name": "lo", "sandbox": "/ns"}],
        "ips": [{"interface": 0, "address": "127.0.0.1/8"}], "dns": {}}


def test_an_unknown_version_is_refused_even_for_a_result_labelled_with_it() -> None:
    with pytest.raises(ValueError, match="unsupported CNI result version"):
        result_to_json(Result(cni_version="9.9.9"), "9.9.9")


@pytest.mark.parametrize("version", ALL_VERSIONS)
def test_round_trip_through_every_version_keeps_what_that_version_can_hold(version: str) -> None:
    back = result_from_json(result_to_json(DUAL, version), version)
    first_v4, v6 = DUAL.ips[0], DUAL.ips[2]
    if version in ("0.1.0", "0.2.0"):
        assert [ip.address for ip in back.ips] == [first_v4.address, v6.address]
        assert back.interfaces == []
    else:
        assert [ip.address for ip in back.ips] == [ip.address for ip in DUAL.ips]
        assert back.interfaces[0].name == "eth0"
    assert [r.dst for r in back.routes] == ["0.0.0.0/0", "::/0"]
    assert back.dns == DUAL.dns
    assert back.cni_version == "1.1.0"


def test_unknown_result_version_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"9\.9\.9"):
        result_from_json({"cniVersion": "9.9.9"}, "9.9.9")


def test_addresses_are_canonicalised_as_go_prints_them() -> None:
    r = result_from_json({"ips": [{"address": "FD00:0:0::02/64", "gateway": "fd00::0001"}]},
                         "1.0.0")
    assert (r.ips[0].address, r.ips[0].gateway) == ("fd00::2/64", "fd00::1")


def test_malformed_address_is_rejected() -> None:
    with pytest.raises(ValueError):
        result_from_json({"ips": [{"address": "10.0.0.300/24"}]}, "1.0.0")
