"""One node's machine (kubelet_sim.node_host), as the in-process cluster and the `kubelet`
command lay it out: its dirs, its CNI network config over its podCIDR, and our CSI node
plugin serving under the kubelet's plugins dir and registering in plugins_registry."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_sim.cluster import Cluster, ClusterConfig, NodeSpec
from kubelet_sim.node_host import (
    DRIVER_NAME,
    CniSetup,
    NodeDirs,
    network_config,
    node_plugin,
    write_network_config,
)


def test_a_nodes_network_config_is_a_bridge_with_host_local_over_its_pod_cidr(tmp_path):
    dirs = NodeDirs(tmp_path / "n1")
    path = write_network_config(CniSetup(bin_dir=tmp_path / "bin"), dirs, "10.250.3.0/24")
    assert path == tmp_path / "n1" / "net.d" / "10-mini.conflist"
    conf = json.loads(path.read_text())
    bridge = conf["plugins"][0]
    assert (conf["name"], bridge["type"], bridge["ipam"]["type"]) == (
        "mini-pod-network", "emu-bridge", "emu-host-local")
    assert bridge["ipam"]["ranges"] == [[{"subnet": "10.250.3.0/24"}]]
    # every piece of state of the node's network stays in the node's own dir
    assert bridge["ipam"]["dataDir"] == str(tmp_path / "n1" / "ipam")
    assert bridge["dataplaneDir"] == str(tmp_path / "n1" / "dataplane")


def test_the_reference_plugins_get_a_cni_1_0_0_list_without_emulator_keys(tmp_path):
    cni = CniSetup(bin_dir=tmp_path / "bin", dataplane="linux", bridge_type="bridge",
                   ipam_type="host-local", loopback_type="loopback")
    conf = network_config(cni, NodeDirs(tmp_path / "n1"), "10.250.3.0/24")
    assert conf["cniVersion"] == "1.0.0"
    assert "dataplane" not in conf["plugins"][0]  # type: ignore[index]


def test_the_cluster_lays_out_its_nodes_as_node_host_does(tmp_path):
    spec = NodeSpec("node-7", "10.244.7.0/24", "192.168.0.7")
    cluster = Cluster(ClusterConfig(nodes=[spec], work_dir=tmp_path,
                                    cni_bin_dir=tmp_path / "bin"))
    dirs = NodeDirs(tmp_path / "node-7")
    assert cluster.cni_conf_dir("node-7") == dirs.cni_conf_dir
    assert cluster.network_config(spec) == network_config(
        CniSetup(bin_dir=tmp_path / "bin"), dirs, "10.244.7.0/24")


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A dir whose socket paths fit the 107-byte unix limit (pytest's tmp_path may not)."""
    path = Path(tempfile.mkdtemp(prefix="nh-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_node_plugin_serves_under_the_kubelets_plugins_dir_and_registers(short_dir):
    tmp_path = short_dir
    dirs = NodeDirs(tmp_path / "n1")
    plugin = node_plugin("n1", dirs, DRIVER_NAME,
                         ["--driver-name", DRIVER_NAME, "--state-dir", str(tmp_path / "array")],
                         tmp_path / "logs")
    plugin.start()
    try:
        await plugin.wait_ready()
        assert plugin.endpoint == f"unix://{dirs.kubelet_root}/plugins/{DRIVER_NAME}/csi.sock"
        assert (dirs.plugins_registry / f"{DRIVER_NAME}-reg.sock").exists()
        assert plugin.log_path == tmp_path / "logs" / "csi-n1.log"
    finally:
        plugin.stop()
    assert plugin.process is not None and plugin.process.poll() is not None
    assert not plugin.socket.exists()
