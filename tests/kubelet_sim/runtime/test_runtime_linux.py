"""The container runtime on the Linux dataplane: real `ip netns`, the reference plugins."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kubelet_sim.runtime.containerd import SANDBOX_READY, ContainerRuntime, PodSandboxConfig
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.utils.trace import Trace
from tests.fixtures.netns import (
    REFERENCE_DIR,
    needs_reference,
    needs_root,
    random_subnet_prefix,
    sh,
)

pytestmark = [needs_root, needs_reference, pytest.mark.root, pytest.mark.reference]


@pytest.fixture
def subnet_prefix() -> str:
    return random_subnet_prefix()


@pytest.fixture
def runtime(tmp_path: Path, bridge: str, subnet_prefix: str):
    conf_dir = tmp_path / "net.d"
    conf_dir.mkdir()
    conflist = {
        "cniVersion": "1.0.0",
        "name": "podnet",
        "plugins": [
            {
                "type": "bridge",
                "bridge": bridge,
                "isGateway": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(tmp_path / "ipam"),
                    "ranges": [[{"subnet": f"{subnet_prefix}.0/24"}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }
        ],
    }
    (conf_dir / "10-podnet.conflist").write_text(json.dumps(conflist))
    libcni = LibCNI([REFERENCE_DIR], str(tmp_path / "cache"), RealExec(), trace=Trace(), node="n1")
    rt = ContainerRuntime(
        str(tmp_path / "state"), PodNetwork(libcni, str(conf_dir)), linux_netns=True
    )
    yield rt
    for sandbox in rt.list_pod_sandboxes():
        rt.remove_pod_sandbox(sandbox.id)


def in_netns(netns_path: str, *args: str) -> str:
    return sh("ip", "-n", os.path.basename(netns_path), *args, check=False)


def test_a_pod_gets_a_real_netns_with_lo_up_and_an_address_on_eth0(runtime, subnet_prefix):
    sandbox = runtime.run_pod_sandbox(PodSandboxConfig(name="web", namespace="default", uid="u1"))
    assert sandbox.state == SANDBOX_READY
    assert sandbox.netns.startswith("/var/run/netns/cni-")
    assert os.path.basename(sandbox.netns) in sh("ip", "netns", "list")
    assert sandbox.ips == [f"{subnet_prefix}.2"]
    assert f"inet {subnet_prefix}.2/24" in in_netns(sandbox.netns, "addr", "show", "eth0")
    assert "UP" in in_netns(sandbox.netns, "link", "show", "lo")
    assert f"default via {subnet_prefix}.1" in in_netns(sandbox.netns, "route")
    runtime.check_pod_network(sandbox.id)


def test_stop_removes_eth0_and_remove_deletes_the_netns(runtime):
    sandbox = runtime.run_pod_sandbox(PodSandboxConfig(name="web", namespace="default", uid="u1"))
    runtime.stop_pod_sandbox(sandbox.id)
    assert "eth0" not in in_netns(sandbox.netns, "link")
    runtime.remove_pod_sandbox(sandbox.id)
    assert os.path.basename(sandbox.netns) not in sh("ip", "netns", "list")
    assert not os.path.exists(sandbox.netns)
    runtime.remove_pod_sandbox(sandbox.id)


def test_two_pods_get_distinct_addresses(runtime, subnet_prefix):
    a = runtime.run_pod_sandbox(PodSandboxConfig(name="a", namespace="default", uid="ua"))
    b = runtime.run_pod_sandbox(PodSandboxConfig(name="b", namespace="default", uid="ub"))
    assert (a.ips, b.ips) == ([f"{subnet_prefix}.2"], [f"{subnet_prefix}.3"])
