"""What a demo scenario can see of the cluster it runs on (:class:`ScenarioCluster`),
and that view of an in-process :class:`~kubelet_sim.cluster.Cluster`.

A scenario acts and reads back through the API (an awaited
:class:`~kubelet_sim.client.kube_client.KubeClient`), waits with :meth:`settle` for what
its actions should lead to, and checks the rest where a user of the cluster would: the
node's directories (the kubelet's paths, the CNI result cache), the network engines over
the cluster's objects, and the call trace. The in-process view answers from the cluster's
own objects (``settle`` runs the cluster until it is idle); the over-processes view
(:mod:`kubelet_sim.demo_processes`) answers from the disk, the API over HTTPS and the
components' trace files.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol

from kubelet_sim.api.model import Resource
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.describe import pod_reasons
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.network.host_gw import ClusterNetwork
from kubelet_sim.pod_probe import CrossNodeProbe, probe_pod_to_pod
from kubelet_sim.runtime.libcni.cache import CachedAttachment
from kubelet_sim.utils.trace import Trace, TraceEvent

# What a scenario waits for, asked of the API (True: reached)
Condition = Callable[[KubeClient], Awaitable[bool]]


class UpDidNotStart(RuntimeError):
    """The cluster of a scenario could not be started as asked (one line, exit 2)."""


class ScenarioCluster(Protocol):
    """The cluster as one scenario sees it."""

    client: KubeClient
    driver_name: str
    work_dir: Path  # shown as <work> in paths and the trace

    async def settle(self, what: str, until: Condition) -> None:
        """Return once the cluster did what the scenario's actions lead to (``what``,
        reached when ``until`` answers True); TimeoutError naming ``what`` if never."""
        ...

    def begin(self, phase: str) -> None:
        """The scenario's own calls start here (the trace's phase)."""
        ...

    def calls(self) -> list[TraceEvent]:
        """Every gRPC call and CNI exec so far, start-up included, in order."""
        ...

    def kubelet_paths(self, node: str) -> KubeletPaths:
        ...

    def attachments(self, node: str) -> list[CachedAttachment]:
        """The node's libcni result cache."""
        ...

    async def network(self) -> ClusterNetwork:
        """Routes and policy verdicts over the cluster's objects as they are now."""
        ...

    async def probe(self, a: Resource, b: Resource) -> CrossNodeProbe | None:
        """A real packet from pod ``a`` to ``b`` (None: the dataplane has no packets)."""
        ...

    async def not_running(self) -> list[str]:
        """Each pod not Running, with the reasons its components recorded."""
        ...


class InProcessView:
    """:class:`ScenarioCluster` of an in-process cluster."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.client: KubeClient = InProcessClient(cluster.api)
        self.driver_name = cluster.driver_name
        self.work_dir = Path(cluster.work_dir)

    async def settle(self, what: str, until: Condition) -> None:
        await self.cluster.settle()  # idle: whatever was to happen has

    def begin(self, phase: str) -> None:
        self.cluster.trace.begin(phase)

    def calls(self) -> list[TraceEvent]:
        return list(self.cluster.trace)

    def kubelet_paths(self, node: str) -> KubeletPaths:
        return self.cluster.kubelets[node].paths

    def attachments(self, node: str) -> list[CachedAttachment]:
        return self.cluster.kubelets[node].runtime.network.libcni.cached_attachments()

    async def network(self) -> ClusterNetwork:
        return ClusterNetwork(self.cluster.api)

    async def probe(self, a: Resource, b: Resource) -> CrossNodeProbe | None:
        if self.cluster.linux_nodes is None:
            return None
        return await asyncio.to_thread(probe_pod_to_pod, self.cluster, a, b)

    async def not_running(self) -> list[str]:
        lines = []
        for pod in self.cluster.api.list("Pod").items:
            phase = pod.status.get("phase", "Pending")
            if phase != "Running":
                lines.append(f"  ! {pod.namespace}/{pod.name} {phase}:")
                lines += [f"      {reason}" for reason in
                          pod_reasons(self.cluster.api, self.cluster.events, pod)
                          or ["(no component recorded a reason)"]]
        return lines


@asynccontextmanager
async def in_process_cluster(nodes: int, dataplane: str, cluster_options: dict[str, Any],
                             trace: Trace) -> AsyncIterator[ScenarioCluster]:
    """A fresh in-process cluster of ``nodes`` nodes, started, then stopped."""
    cluster = Cluster(ClusterConfig(nodes=default_nodes(nodes), dataplane=dataplane,
                                    **cluster_options), trace)
    try:
        await cluster.start()
        yield InProcessView(cluster)
    finally:
        await cluster.stop()
