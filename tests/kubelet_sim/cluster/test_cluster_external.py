"""The simulator under plugins the user runs: a CSI driver started by hand (its sockets
given to the cluster) and the reference CNI plugins from /usr/lib/cni."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.plugin_processes import DriverProcess

REFERENCE_BIN = Path("/usr/lib/cni")


@pytest.fixture
async def external_driver() -> AsyncIterator[tuple[str, str]]:
    """A controller and a node plugin started the way a user starts them."""
    work = Path(tempfile.mkdtemp(prefix="kext-", dir="/tmp"))
    state = ["--state-dir", str(work / "state"), "--driver-name", "hand.started.example.org"]
    ctl = DriverProcess("ctl", work / "ctl.sock", ["--mode", "controller", "--node-id", "c",
                                                    *state], work / "ctl.log")
    node = DriverProcess("n1", work / "n1.sock", ["--mode", "node", "--node-id", "node-1",
                                                   *state], work / "n1.log")
    ctl.start()
    await ctl.wait_ready()
    node.start()
    await node.wait_ready()
    try:
        yield ctl.endpoint, node.endpoint
    finally:
        node.stop()
        ctl.stop()
        shutil.rmtree(work, ignore_errors=True)


async def test_cluster_attaches_to_driver_endpoints_the_user_gives(
    external_driver: tuple[str, str],
) -> None:
    controller_ep, node_ep = external_driver
    cluster = Cluster(ClusterConfig(csi_controller_endpoint=controller_ep,
                                    csi_node_endpoints={"node-1": node_ep}))
    try:
        await cluster.start()
        assert cluster.controller_plugin is None and not cluster.node_plugins
        assert cluster.driver_name == "hand.started.example.org"
        csinode = cluster.api.get("CSINode", "node-1")
        assert [d["name"] for d in csinode.spec["drivers"]] == ["hand.started.example.org"]
        cluster.api.create(builders.storage_class("sc", cluster.driver_name))
        cluster.api.create(builders.persistent_volume_claim("data", storage="1Gi",
                                                            storage_class="sc"))
        cluster.api.create(builders.pod("web", volumes=[builders.pvc_volume("data", "data")]))
        await cluster.settle()
        assert cluster.api.get("Pod", "web", "default").status["phase"] == "Running"
        calls = cluster.trace.calls()
        assert "csi.Controller/CreateVolume" in calls
        assert "csi.Node/NodePublishVolume" in calls
    finally:
        await cluster.stop()


@pytest.mark.root
@pytest.mark.reference
@pytest.mark.skipif(os.geteuid() != 0 or not (REFERENCE_BIN / "bridge").exists(),
                    reason="needs root and the reference CNI plugins in /usr/lib/cni")
async def test_pods_get_addresses_from_the_reference_plugins_on_linux() -> None:
    cluster = Cluster(ClusterConfig(
        nodes=default_nodes(2), dataplane="linux", cni_bin_dir=REFERENCE_BIN,
        bridge_type="bridge", ipam_type="host-local", loopback_type="loopback"))
    try:
        await cluster.start()
        cluster.api.create(builders.pod("a", node_name="node-1"))
        cluster.api.create(builders.pod("b", node_name="node-2"))
        await cluster.settle()
        a = cluster.api.get("Pod", "a", "default")
        b = cluster.api.get("Pod", "b", "default")
        assert (a.status["podIP"], b.status["podIP"]) == ("10.244.1.2", "10.244.2.2")
        assert "cni ADD bridge" in cluster.trace.calls(node="node-1")
    finally:
        await cluster.stop()
