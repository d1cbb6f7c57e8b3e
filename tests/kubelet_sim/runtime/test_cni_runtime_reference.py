"""libcni role driving the reference plugins (/usr/lib/cni) in real network namespaces."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf, containerd_cni_args
from kubelet_sim.runtime.libcni.conf import LOOPBACK_NETWORK, conf_list_from_bytes
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.libcni.results import pod_ips, to_current
from kubelet_sim.utils.trace import Trace
from tests.fixtures.netns import (
    REFERENCE_DIR,
    fresh_netns,
    needs_reference,
    needs_root,
    random_subnet_prefix,
    sh,
)

pytestmark = [needs_root, needs_reference, pytest.mark.root, pytest.mark.reference]


@pytest.fixture
def netns() -> Iterator[str]:
    with fresh_netns() as path:
        yield os.path.basename(path)  # these tests name it, as `ip -n` does


@pytest.fixture
def subnet() -> str:
    return f"{random_subnet_prefix()}.0/24"


def bridge_list(tmp_path: Path, bridge: str, subnet: str, version: str = "1.0.0", extra=()):
    doc = {
        "cniVersion": version,
        "name": "podnet",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(tmp_path / "ipam"),
                    "ranges": [[{"subnet": subnet}]],
                },
            },
            *extra,
        ],
    }
    return conf_list_from_bytes(json.dumps(doc).encode())


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def libcni(tmp_path: Path, trace: Trace) -> LibCNI:
    return LibCNI([REFERENCE_DIR], str(tmp_path / "cache"), RealExec(), trace=trace, node="n1")


def rt_for(
    netns: str, container_id: str = "sandbox01", ifname: str = "eth0", **caps
) -> RuntimeConf:
    return RuntimeConf(
        container_id=container_id,
        netns=f"/var/run/netns/{netns}",
        ifname=ifname,
        args=containerd_cni_args(
            namespace="default", name="web", sandbox_id=container_id, uid="uid-1"
        ),
        capability_args=caps,
    )


def addresses_in(netns: str, ifname: str) -> list[str]:
    out = sh("ip", "-4", "-n", netns, "-j", "addr", "show", "dev", ifname, check=False)
    return [
        f"{a['local']}/{a['prefixlen']}"
        for link in json.loads(out or "[]")
        for a in link["addr_info"]
    ]


def test_add_gives_the_pod_an_address_from_the_subnet(libcni, tmp_path, netns, bridge, subnet):
    net = bridge_list(tmp_path, bridge, subnet)
    result = libcni.add_network_list(net, rt_for(netns))
    prefix = subnet.rsplit(".", 1)[0]
    assert result["ips"][0]["address"] == f"{prefix}.2/24"
    assert result["ips"][0]["gateway"] == f"{prefix}.1"
    assert addresses_in(netns, "eth0") == [f"{prefix}.2/24"]


def test_the_cache_file_is_libcnis_format_with_the_reference_result(
    libcni, tmp_path, netns, bridge, subnet
):
    net = bridge_list(tmp_path, bridge, subnet)
    rt = rt_for(netns, portMappings=[])
    result = libcni.add_network_list(net, rt)
    doc = json.loads((tmp_path / "cache" / "results" / "podnet-sandbox01-eth0").read_text())
    assert doc["kind"] == "cniCacheV1"
    assert base64.b64decode(doc["config"]) == net.bytes
    assert doc["result"] == result
    assert doc["cniArgs"][0] == ["IgnoreUnknown", "1"]
    assert doc["netns"] == rt.netns


def test_check_passes_then_fails_once_the_interface_lost_its_address(
    libcni, tmp_path, netns, bridge, subnet
):
    net = bridge_list(tmp_path, bridge, subnet)
    rt = rt_for(netns)
    libcni.add_network_list(net, rt)
    libcni.check_network_list(net, rt)
    sh("ip", "-n", netns, "addr", "flush", "dev", "eth0")
    with pytest.raises(CNIError):
        libcni.check_network_list(net, rt)


def test_del_removes_the_interface_the_lease_and_the_cache(libcni, tmp_path, netns, bridge, subnet):
    net = bridge_list(tmp_path, bridge, subnet)
    rt = rt_for(netns)
    libcni.add_network_list(net, rt)
    leases = tmp_path / "ipam" / "podnet"
    assert any(p.name.startswith("10.") for p in leases.iterdir())
    libcni.del_network_list(net, rt)
    assert addresses_in(netns, "eth0") == []
    assert not any(p.name.startswith("10.") for p in leases.iterdir())
    assert libcni.cached_attachments() == []
    libcni.del_network_list(net, rt)  # DEL is idempotent


def test_gc_releases_a_stale_attachment_and_keeps_the_valid_one(
    libcni, tmp_path, netns, bridge, subnet
):
    net = bridge_list(tmp_path, bridge, subnet)
    libcni.add_network_list(net, rt_for(netns, "keep01"))
    with_stale = f"kst-{secrets.token_hex(4)}"
    sh("ip", "netns", "add", with_stale)
    try:
        libcni.add_network_list(net, rt_for(with_stale, "stale01"))
        libcni.gc_network_list(net, [("keep01", "eth0")])
        assert [a.container_id for a in libcni.cached_attachments()] == ["keep01"]
        assert addresses_in(with_stale, "eth0") == []
        leases = sorted(p.read_bytes() for p in (tmp_path / "ipam" / "podnet").glob("10.*"))
        assert leases == [b"keep01\r\neth0"]
    finally:
        sh("ip", "netns", "delete", with_stale, check=False)


def test_status_is_skipped_below_1_1_0_and_sent_at_1_1_0(libcni, trace, tmp_path, bridge, subnet):
    libcni.status_network_list(bridge_list(tmp_path, bridge, subnet, "1.0.0"))
    assert trace.calls() == []
    # The Debian reference plugins (1.1.1) predate STATUS: the call reaches the plugin
    # and its skel rejects it with an error JSON (which makes the network not ready).
    with pytest.raises(CNIError) as info:
        libcni.status_network_list(bridge_list(tmp_path, bridge, subnet, "1.1.0"))
    assert info.value.code != 0
    assert trace.calls() == ["cni STATUS bridge"]


def test_a_missing_plugin_binary_fails_the_add(libcni, tmp_path, netns, bridge, subnet):
    net = bridge_list(tmp_path, bridge, subnet, extra=[{"type": "no-such-plugin"}])
    with pytest.raises(
        CNIError, match=r'failed to find plugin "no-such-plugin" in path \[/usr/lib/cni\]'
    ):
        libcni.add_network_list(net, rt_for(netns))


def test_the_loopback_network_brings_up_lo(libcni, netns):
    result = libcni.add_network_list(LOOPBACK_NETWORK, rt_for(netns, ifname="lo"))
    assert {ip["address"] for ip in result["ips"]} >= {"127.0.0.1/8"}
    assert "UP" in sh("ip", "-n", netns, "link", "show", "lo")


@pytest.mark.skipif(shutil.which("iptables") is None, reason="portmap needs iptables")
def test_portmap_gets_port_mappings_through_its_capability(libcni, tmp_path, netns, bridge, subnet):
    host_port = 20000 + secrets.randbelow(20000)
    mapping = [{"hostPort": host_port, "containerPort": 80, "protocol": "tcp"}]
    portmap = {"type": "portmap", "capabilities": {"portMappings": True}, "snat": True}
    net = bridge_list(tmp_path, bridge, subnet, extra=[portmap])
    rt = rt_for(netns, portMappings=mapping, bandwidth={"ingressRate": 1})
    libcni.add_network_list(net, rt)
    assert f"--dport {host_port}" in sh("iptables", "-t", "nat", "-S")
    libcni.del_network_list(net, rt)
    assert f"--dport {host_port}" not in sh("iptables", "-t", "nat", "-S")


@pytest.mark.parametrize("version", ["0.2.0", "0.3.1", "0.4.0", "1.0.0"])
def test_every_list_version_gives_a_pod_ip_and_dels_cleanly(
    libcni, tmp_path, netns, bridge, subnet, version
):
    net = bridge_list(tmp_path, bridge, subnet, version)
    rt = rt_for(netns)
    result = libcni.add_network_list(net, rt)
    assert result["cniVersion"] == version
    prefix = subnet.rsplit(".", 1)[0]
    assert [ip.ip for ip in pod_ips(to_current(result))] == [f"{prefix}.2"]
    assert libcni.cached_result(net, rt) == result
    libcni.del_network_list(net, rt)
    assert addresses_in(netns, "eth0") == []
    assert not any(p.name.startswith("10.") for p in (tmp_path / "ipam" / "podnet").iterdir())
