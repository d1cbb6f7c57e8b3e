"""A kubelet joining a ``kubelet-sim apiserver`` process over HTTPS: built on an
HttpKubeClient (no API server object in this process), with the runtime and CNI plugins
a cluster node has and a real CSI node plugin registering with it. It registers its
Node and CSINode, keeps its Lease, and runs a pod created already bound to it; all of it
is observed through the client."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, parse_time
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.cluster import install_cni_plugins
from kubelet_sim.kubelet.kubelet import Kubelet
from kubelet_sim.kubelet.node_lease import LEASE_NAMESPACE
from kubelet_sim.runtime.containerd import ContainerRuntime
from kubelet_sim.runtime.libcni.api import LibCNI
from kubelet_sim.runtime.libcni.conf import loopback_network
from kubelet_sim.runtime.libcni.invoke import RealExec
from kubelet_sim.runtime.pod_network import PodNetwork
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import serve_registration_for_kubelet
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.fixtures.driver_process import DriverProcess, unmount_under

NODE = "wire-node-1"
POD_CIDR = "10.244.7.0/24"
INTERNAL_IP = "192.168.0.7"
DRIVER = "csi-mini.example.com"
LEASE_SECONDS = 4  # renewed every second (a quarter), so a test sees a renewal soon
GUARD_S = 60.0  # a broken kubelet fails the test here instead of hanging it


@pytest.fixture(scope="module")
def driver() -> Iterator[DriverProcess]:
    proc = DriverProcess(node_id=NODE, args=["--mode", "node", "--driver-name", DRIVER])
    try:
        proc.start()
        yield proc
    finally:
        proc.cleanup()


@dataclass
class Node:
    client: HttpKubeClient
    kubelet: Kubelet


def node_runtime(node_dir: Path, trace: Trace) -> ContainerRuntime:
    """The runtime and pod network of a cluster node (kubelet_sim/cluster.py): our CNI
    plugins exec'd from a bin dir, a bridge with host-local IPAM over the podCIDR, the
    emulated dataplane."""
    bin_dir, conf_dir, dataplane = node_dir / "bin", node_dir / "net.d", node_dir / "dataplane"
    install_cni_plugins(bin_dir)
    conf_dir.mkdir(parents=True)
    (conf_dir / "10-mini.conflist").write_text(json.dumps({
        "cniVersion": "1.1.0", "name": "mini-pod-network", "plugins": [{
            "type": "emu-bridge", "bridge": "cni0", "isGateway": True, "ipMasq": False,
            "dataplane": "emulated", "dataplaneDir": str(dataplane),
            "ipam": {"type": "emu-host-local", "ranges": [[{"subnet": POD_CIDR}]],
                     "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(node_dir / "ipam")},
        }]}))
    libcni = LibCNI([str(bin_dir)], str(node_dir / "cni-cache"), RealExec(), trace=trace,
                    node=NODE)
    network = PodNetwork(libcni, str(conf_dir), loopback=loopback_network(
        "emu-loopback", dataplane="emulated", dataplaneDir=str(dataplane)))
    return ContainerRuntime(str(node_dir / "containerd"), network)


@pytest.fixture
async def node(server: ApiServerProcess, driver: DriverProcess) -> AsyncIterator[Node]:
    """The kubelet's loops running over HTTPS, the driver's registrar in its registry."""
    node_dir = Path(tempfile.mkdtemp(prefix="kwire", dir="/tmp"))
    # the kubelet's own client limits (kubeAPIQPS 50, kubeAPIBurst 100)
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=50, burst=100)
    trace = Trace()
    kubelet = Kubelet(api=client, node_name=NODE, root_dir=node_dir / "kubelet",
                      runtime=node_runtime(node_dir, trace), trace=trace,
                      lease_duration_seconds=LEASE_SECONDS,
                      register_node=builders.node(NODE, POD_CIDR, INTERNAL_IP))
    registrar = await serve_registration_for_kubelet(
        node_dir / "kubelet", driver_name=DRIVER, csi_endpoint=driver.endpoint)
    stop = asyncio.Event()
    task = asyncio.create_task(kubelet.run(stop))
    try:
        yield Node(client, kubelet)
    finally:
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, GUARD_S)
        await registrar.stop(None)
        await kubelet.recorder.flush()
        await client.close()
        unmount_under(node_dir)
        shutil.rmtree(node_dir, ignore_errors=True)


async def eventually(read: Callable[[], Awaitable[Resource | None]],
                     holds: Callable[[Resource], bool]) -> Resource:
    """The object ``read`` answers once ``holds`` is true of it (polled; a missing
    object is waited for too)."""
    async with asyncio.timeout(GUARD_S):
        while True:
            with contextlib.suppress(NotFound):
                obj = await read()
                if obj is not None and holds(obj):
                    return obj
            await asyncio.sleep(0.05)


def condition(obj: Resource, kind: str) -> dict[str, str]:
    return next((c for c in obj.status.get("conditions") or [] if c.get("type") == kind), {})


async def test_the_kubelet_registers_its_node_and_csinode_and_keeps_its_lease(
        node: Node) -> None:
    client = node.client
    ready = await eventually(lambda: client.get("Node", NODE),
                             lambda n: condition(n, "Ready").get("status") == "True")
    assert ready.spec["podCIDR"] == POD_CIDR
    assert {"type": "InternalIP", "address": INTERNAL_IP} in ready.status["addresses"]
    assert ready.metadata.labels["kubernetes.io/hostname"] == NODE
    assert condition(ready, "Ready")["reason"] == "KubeletReady"
    assert ready.status["nodeInfo"]["kubeletVersion"]

    csinode = await eventually(lambda: client.get("CSINode", NODE),
                               lambda c: bool(c.spec.get("drivers")))
    [entry] = csinode.spec["drivers"]
    assert (entry["name"], entry["nodeID"]) == (DRIVER, NODE)
    assert csinode.metadata.owner_references[0]["uid"] == ready.metadata.uid
    annotated = await eventually(lambda: client.get("Node", NODE), lambda n: bool(
        n.metadata.annotations.get("csi.volume.kubernetes.io/nodeid")))
    assert json.loads(annotated.metadata.annotations["csi.volume.kubernetes.io/nodeid"]) == {
        DRIVER: NODE}

    lease = await eventually(lambda: client.get("Lease", NODE, LEASE_NAMESPACE),
                             lambda _lease: True)
    assert lease.spec["holderIdentity"] == NODE
    assert lease.spec["leaseDurationSeconds"] == LEASE_SECONDS
    assert lease.metadata.owner_references[0]["uid"] == ready.metadata.uid
    first = parse_time(lease.spec["renewTime"])
    renewed = await eventually(lambda: client.get("Lease", NODE, LEASE_NAMESPACE),
                               lambda later: parse_time(later.spec["renewTime"]) > first)
    assert renewed.metadata.uid == lease.metadata.uid  # the same Lease, renewed


async def test_a_pod_created_bound_to_the_node_goes_running_with_an_ip_of_its_pod_cidr(
        node: Node) -> None:
    client = node.client
    await client.create(builders.pod("wire-web", node_name=NODE))

    pod = await eventually(lambda: client.get("Pod", "wire-web", "default"),
                           lambda p: p.status.get("phase") == "Running")
    assert pod.status["podIP"].startswith("10.244.7.")
    assert pod.status["hostIP"] == INTERNAL_IP
    assert condition(pod, "Ready")["status"] == "True"
    [container] = pod.status["containerStatuses"]
    assert "running" in container["state"]

    await client.delete("Pod", "wire-web", "default")  # graceful: the kubelet ends it
    await until_gone(client, "Pod", "wire-web", "default")
    assert node.kubelet.runtime.list_pod_sandboxes() == []  # its sandbox stopped (CNI DEL)


async def until_gone(client: HttpKubeClient, kind: str, name: str, namespace: str) -> None:
    """Return once the object is deleted (the kubelet's final delete)."""
    async with asyncio.timeout(GUARD_S):
        while True:
            try:
                await client.get(kind, name, namespace)
            except NotFound:
                return
            await asyncio.sleep(0.05)
