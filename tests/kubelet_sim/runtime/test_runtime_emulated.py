"""The container runtime on the emulated dataplane with our own plugins as real processes:
no root, the netns is a file under the runtime's state dir."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cni_plugin.dataplane.shards import ShardedState
from cni_plugin.install import install
from cni_spec.errors import CNIError
from kubelet_sim.runtime.containerd import SANDBOX_READY, ContainerRuntime, PodSandboxConfig
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.libcni.conf import loopback_network
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.utils.trace import Trace


@pytest.fixture(scope="module")
def bin_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Our emu-* plugins laid out from this tree (not the ones a venv has installed)."""
    directory = str(tmp_path_factory.mktemp("cnibin"))
    install(directory)
    return directory


@pytest.fixture
def trace() -> Trace:
    return Trace()


@pytest.fixture
def dirs(tmp_path: Path, bin_dir: str) -> dict[str, Path]:
    names = ("net.d", "dataplane", "ipam", "cache", "state")
    out = {n: tmp_path / n for n in names}
    out["bin"] = Path(bin_dir)
    out["net.d"].mkdir()
    return out


def write_pod_network(dirs: dict[str, Path], version: str = "1.1.0") -> None:
    conflist = {
        "cniVersion": version,
        "name": "podnet",
        "plugins": [
            {
                "type": "emu-bridge",
                "bridge": "cni0",
                "isGateway": True,
                "dataplaneDir": str(dirs["dataplane"]),
                "ipam": {
                    "type": "emu-host-local",
                    "dataDir": str(dirs["ipam"]),
                    "ranges": [[{"subnet": "10.244.1.0/24"}]],
                },
            }
        ],
    }
    (dirs["net.d"] / "10-podnet.conflist").write_text(json.dumps(conflist))


def make_runtime(dirs: dict[str, Path], trace: Trace) -> ContainerRuntime:
    libcni = LibCNI([str(dirs["bin"])], str(dirs["cache"]), RealExec(), trace=trace, node="node-1")
    loopback = loopback_network("emu-loopback", dataplaneDir=str(dirs["dataplane"]))
    network = PodNetwork(libcni, str(dirs["net.d"]), loopback=loopback)
    return ContainerRuntime(str(dirs["state"]), network)


WEB = PodSandboxConfig(name="web", namespace="default", uid="uid-web")


def test_a_pod_gets_the_first_address_of_the_node_subnet(dirs, trace):
    write_pod_network(dirs)
    runtime = make_runtime(dirs, trace)
    sandbox = runtime.run_pod_sandbox(WEB)
    assert sandbox.state == SANDBOX_READY
    assert sandbox.ips == ["10.244.1.2"]
    assert sandbox.netns.startswith(str(dirs["state"]))
    assert trace.calls() == ["cni ADD emu-loopback", "cni ADD emu-bridge"]
    runtime.check_pod_network(sandbox.id)


def test_stop_and_remove_release_the_address_for_the_next_pod(dirs, trace):
    write_pod_network(dirs)
    runtime = make_runtime(dirs, trace)
    first = runtime.run_pod_sandbox(WEB)
    runtime.remove_pod_sandbox(first.id)
    assert not os.path.exists(first.netns)
    assert os.listdir(dirs["cache"] / "results") == []
    second = runtime.run_pod_sandbox(WEB)
    assert second.ips == ["10.244.1.3"]  # host-local goes round-robin from the last reserved


def test_check_fails_once_the_pod_interface_lost_its_address(dirs, trace):
    write_pod_network(dirs)
    runtime = make_runtime(dirs, trace)
    sandbox = runtime.run_pod_sandbox(WEB)
    runtime.check_pod_network(sandbox.id)
    # Break the emulated interface as `ip addr flush dev eth0` would (no plugin is running).
    with ShardedState(str(dirs["dataplane"])).transaction() as state:
        state["namespaces"][os.path.abspath(sandbox.netns)]["links"]["eth0"]["addrs"] = []
    with pytest.raises(CNIError):
        runtime.check_pod_network(sandbox.id)
    assert trace.calls()[-1] == "cni CHECK emu-bridge"


def test_status_of_the_1_1_0_network_makes_the_node_ready(dirs, trace):
    runtime = make_runtime(dirs, trace)
    assert not runtime.network_status().ready
    write_pod_network(dirs)
    assert runtime.network_status().ready
    assert trace.calls() == ["cni STATUS emu-bridge"]


def test_a_restarted_runtime_gcs_a_forgotten_pod(dirs, trace):
    write_pod_network(dirs)
    runtime = make_runtime(dirs, trace)
    keep = runtime.run_pod_sandbox(WEB)
    lost = runtime.run_pod_sandbox(PodSandboxConfig(name="db", namespace="default", uid="uid-db"))
    os.unlink(dirs["state"] / "sandboxes" / f"{lost.id}.json")
    make_runtime(dirs, trace).garbage_collect()
    owners = {att.container_id for att in runtime.network.libcni.cached_attachments()}
    assert owners == {keep.id}
    leases = [p.read_bytes() for p in (dirs["ipam"] / "podnet").glob("10.*")]
    assert leases == [f"{keep.id}\r\neth0".encode()]
