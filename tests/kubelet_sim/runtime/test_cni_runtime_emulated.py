"""libcni role driving our own plugins as real processes (no root): spec 1.1.0 end to end,
including STATUS and GC, which the reference plugins in /usr/lib/cni predate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cni_spec.errors import CNIError
from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import conf_list_from_bytes
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.utils.trace import Trace

BIN_DIR = os.path.dirname(sys.executable)
HOST_LOCAL = os.path.join(BIN_DIR, "emu-host-local")

pytestmark = pytest.mark.skipif(
    not os.path.exists(HOST_LOCAL), reason="emu-host-local not installed"
)


def ipam_list(tmp_path: Path, version: str = "1.1.0"):
    ipam = {
        "type": "emu-host-local",
        "dataDir": str(tmp_path / "ipam"),
        "ranges": [[{"subnet": "10.77.0.0/24"}]],
    }
    doc = {
        "cniVersion": version,
        "name": "ipamnet",
        "plugins": [{"type": "emu-host-local", "ipam": ipam}],
    }
    return conf_list_from_bytes(json.dumps(doc).encode())


def rt(container_id: str) -> RuntimeConf:
    return RuntimeConf(
        container_id, f"/tmp/emu-netns-{container_id}", "eth0", (("IgnoreUnknown", "1"),)
    )


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def libcni(tmp_path: Path, trace: Trace) -> LibCNI:
    return LibCNI([BIN_DIR], str(tmp_path / "cache"), RealExec(), trace=trace, node="n1")


def leases(tmp_path: Path) -> dict[str, bytes]:
    directory = tmp_path / "ipam" / "ipamnet"
    return {p.name: p.read_bytes() for p in directory.glob("10.*")} if directory.exists() else {}


@pytest.mark.parametrize("version", ["0.3.1", "0.4.0", "1.0.0", "1.1.0"])
def test_add_and_del_through_a_real_plugin_in_every_list_version(libcni, tmp_path, version):
    net = ipam_list(tmp_path, version)
    result = libcni.add_network_list(net, rt("c1"))
    assert result["cniVersion"] == version
    assert result["ips"][0]["address"] == "10.77.0.2/24"
    assert leases(tmp_path) == {"10.77.0.2": b"c1\r\neth0"}
    libcni.del_network_list(net, rt("c1"))
    assert leases(tmp_path) == {}
    assert libcni.cached_attachments() == []


def test_check_with_the_cached_result_passes(libcni, tmp_path, trace):
    net = ipam_list(tmp_path)
    libcni.add_network_list(net, rt("c1"))
    libcni.check_network_list(net, rt("c1"))
    assert trace.calls() == ["cni ADD emu-host-local", "cni CHECK emu-host-local"]


def test_status_of_a_1_1_0_list_reaches_the_plugin_and_passes(libcni, tmp_path, trace):
    libcni.status_network_list(ipam_list(tmp_path))
    assert [(e.call, e.result) for e in trace] == [("cni STATUS emu-host-local", "OK")]


def test_gc_dels_stale_cached_attachments_and_the_plugin_releases_unknown_leases(
    libcni, tmp_path, trace
):
    net = ipam_list(tmp_path)
    libcni.add_network_list(net, rt("keep"))
    libcni.add_network_list(net, rt("stale"))
    # A lease made behind libcni's back: only the plugin's own GC can release it.
    stdin = json.dumps(
        {**json.loads(net.plugins[0].bytes), "name": "ipamnet", "cniVersion": "1.1.0"}
    )
    env = {
        **os.environ,
        "CNI_COMMAND": "ADD",
        "CNI_CONTAINERID": "orphan",
        "CNI_NETNS": "/x",
        "CNI_IFNAME": "eth0",
        "CNI_PATH": BIN_DIR,
    }
    subprocess.run([HOST_LOCAL], input=stdin.encode(), env=env, check=True, capture_output=True)
    assert len(leases(tmp_path)) == 3
    trace.events.clear()
    libcni.gc_network_list(net, [("keep", "eth0")])
    assert trace.calls() == ["cni DEL emu-host-local", "cni GC emu-host-local"]
    assert list(leases(tmp_path).values()) == [b"keep\r\neth0"]


def test_a_plugins_error_code_reaches_the_caller(libcni, tmp_path):
    doc = json.loads(ipam_list(tmp_path).bytes)
    doc["plugins"][0]["ipam"]["ranges"] = [[{"subnet": "10.77.0.0/30"}]]
    net = conf_list_from_bytes(json.dumps(doc).encode())
    libcni.add_network_list(net, rt("c1"))
    with pytest.raises(CNIError) as info:
        libcni.add_network_list(net, rt("c2"))  # a /30 has one usable address besides the gateway
    assert info.value.code != 0
    assert 'plugin type="emu-host-local" name="ipamnet" failed (add)' in str(info.value)
