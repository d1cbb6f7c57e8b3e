"""The CSI conformance suite: a CSI driver (ours, or the one at the given endpoints) under
the simulated cluster, driven through the whole lifecycle as Kubernetes drives it
(provisioner, attacher, kubelet, snapshotter, resizer), after the Kubernetes e2e
storage testsuites. Each case works in a namespace of its own and removes what it made;
a case the driver's capabilities rule out is skipped with the reason.

Cases (suite ``csi``): ``provisioning/filesystem`` (data a pod wrote is read by the next
pod, on another node when there is one); ``provisioning/block`` (the same on a raw block
volume); ``expansion/online`` (a claim grown under a running pod: the volume and the
claim's capacity follow); ``snapshots/restore`` (a claim restored from a snapshot has
the data; snapshot and claims are then deleted); ``multivolume/two-volumes-one-pod``;
``multivolume/rwo-two-pods-one-node``; ``topology/wait-for-first-consumer`` (the volume
is made where the pod was scheduled); ``ephemeral/inline``; and, against our own driver
(they need its fault injection and its process), ``co-retries/node-stage-unavailable``
(NodeStageVolume failing twice is retried with the same arguments until the pod runs)
and ``restart/teardown-after-node-plugin-restart``.

Every case also keeps a transcript: the CSI RPCs the cluster made while it ran (from
the cluster's trace, `CsiCalls`: ``Node/NodePublishVolume → INTERNAL``, codes without
messages or ids), which ``--compare-to ours`` sets beside a run of our own driver on
the target's nodes (:mod:`kubelet_sim.conformance.compare`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from kubelet_sim.cluster import Cluster, ClusterConfig, NodeSpec, default_nodes
from kubelet_sim.conformance.csi_cases import CASES
from kubelet_sim.conformance.csi_run import SUITE, CsiRun, CsiTarget
from kubelet_sim.conformance.report import Report
from kubelet_sim.utils.trace import Trace

__all__ = ["CsiTarget", "run_csi_suite"]


class CsiCalls:
    """The CSI suite's `~kubelet_sim.conformance.report.Transcriber`: the CSI calls in the
    cluster's trace (controller sidecars, kubelets, the suite itself) as ``Node/
    NodeStageVolume → OK`` or ``… → UNAVAILABLE`` (the status code, no message, no ids),
    in the order they were made."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    def mark(self) -> int:
        return len(self.trace.events)

    def since(self, mark: int) -> list[str]:
        return [f"{e.call.removeprefix('csi.')} → {e.result.split(':')[0]}"
                for e in self.trace.events[mark:] if e.call.startswith("csi.")]


async def run_csi_suite(target: CsiTarget, report: Report) -> None:
    names = sorted(target.node_endpoints) or list(target.node_names)
    nodes = [NodeSpec(name, f"10.244.{i}.0/24", f"192.168.0.{i}")
             for i, name in enumerate(names, start=1)] if names else default_nodes(2)
    config = ClusterConfig(nodes=nodes, csi_controller_endpoint=target.controller_endpoint or None,
                           csi_node_endpoints=dict(target.node_endpoints))
    cluster = Cluster(config)
    try:
        await cluster.start()
        for kubelet in cluster.kubelets.values():
            # 3 tries of a failing volume operation per pass, not 6: enough for the
            # co-retries case, and a broken driver fails its case in seconds
            kubelet.volumes.max_attempts = 3
        run = CsiRun(cluster, target)
        await run.learn_capabilities()
        report.transcriber = CsiCalls(cluster.trace)
        for case, body in CASES:
            await report.arun(SUITE, case, partial(_in_namespace, run, body))
    finally:
        report.transcriber = None
        await cluster.stop()


async def _in_namespace(run: CsiRun, body: Callable[[CsiRun, str], Awaitable[None]]) -> None:
    ns = run.namespace()
    try:
        await body(run, ns)
    finally:
        await run.remove_namespace(ns)
