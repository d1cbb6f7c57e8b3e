"""The CSI conformance suite: a CSI driver (ours, or the one at the given endpoints) under
the simulated cluster, driven through the whole lifecycle as Kubernetes drives it
(provisioner, attacher, kubelet, snapshotter, resizer), after the Kubernetes e2e
storage testsuites. Each case works in a namespace of its own and removes what it made;
a case the driver's capabilities rule out is skipped with the reason.

Cases (suite ``csi``), in the order they run:

- ``provisioning/filesystem``, ``provisioning/block``: data a pod wrote is read by the next
  pod, on another node when the volume can be reached from there;
- ``expansion/online``: a claim grown under a running pod; the volume and the claim's
  capacity follow. ``expansion/offline``: grown while no pod uses it, ControllerExpandVolume
  at once; with node expansion the claim waits in FileSystemResizePending until the next
  pod starts (the data kept);
- ``snapshots/restore``: a claim restored from a snapshot has the data; snapshot and claims
  are then deleted. ``snapshots/delete-order``: the source claim deleted first, the snapshot
  still restores; deleting it (deletionPolicy Delete) removes the content and calls
  DeleteSnapshot with its handle;
- ``multivolume/two-volumes-one-pod``, ``multivolume/rwo-two-pods-one-node``;
  ``multivolume/rwx-across-nodes``: a ReadWriteMany volume (CreateVolume with no topology,
  handed over as a pre-provisioned PV) used by pods on two nodes at once, each reading what
  the other wrote; skipped with one node, or when the driver answers the access mode with
  INVALID_ARGUMENT naming it (ours: "access mode … is not supported");
- ``topology/wait-for-first-consumer``: the volume is made where the pod was scheduled;
- ``ephemeral/inline``;
- ``volumemode/mismatch``: a Filesystem claim in a container's volumeDevices keeps the pod
  Pending with a FailedMount event saying so; mounted as a file system it runs;
- ``volume-limits/one-over-the-limit``: NodeGetInfo's max_volumes_per_node is CSINode's
  allocatable count; limit pods with a claim each on that node run, then one more stays
  Pending for the volume limit (skipped without a limit, or with one of 16 or more);
- ``capacity/get-capacity``: GetCapacity is well formed before and after a volume is
  provisioned and has not grown;
- ``capacity/scheduling``: with ``storageCapacity: true`` on the CSIDriver (set for the
  case), one CSIStorageCapacity per node segment for a WaitForFirstConsumer class, each
  what GetCapacity answers; a claim bigger than every segment's room keeps its pod
  Pending ("node(s) did not have enough free storage"), a 1Gi one runs;
- against our own driver only (they need its fault injection and its process):
  ``co-retries/node-stage-unavailable`` (NodeStageVolume failing twice is retried with the
  same arguments until the pod runs), ``co-retries/controller-publish-timeout``
  (ControllerPublishVolume hanging once past the attacher's timeout, 1 s for the case, is
  called again with the same request) and ``restart/teardown-after-node-plugin-restart``.

- with ``--csidriver FILE`` (the driver's CSIDriver object, YAML; it replaces the suite's
  own), the cases about its fields (:mod:`kubelet_sim.conformance.csi_cases_driver_fields`):
  ``csidriver/fs-group-policy``, ``csidriver/selinux-mount``, ``csidriver/no-attach``,
  ``csidriver/lifecycle-mode-refusal``, each skipped when the object does not set its field;
  ``ephemeral/inline`` skips when the object does not list Ephemeral; and the cases
  about tokens and Secrets (:mod:`kubelet_sim.conformance.csi_cases_secrets`):
  ``csidriver/token-requests``, ``csidriver/requires-republish`` (each skipped when the
  object does not set its field), ``secrets/every-operation`` and
  ``secrets/missing-secret``.

Our driver, when the suite starts it, reports a volume limit of 3 per node.

Every case also keeps a transcript: the CSI RPCs the cluster made while it ran (from
the cluster's trace, `CsiCalls`: ``Node/NodePublishVolume → INTERNAL``, codes without
messages or ids), which ``--compare-to ours`` sets beside a run of our own driver on
the target's nodes (:mod:`kubelet_sim.conformance.compare`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from kubelet_sim.cluster import Cluster, ClusterConfig, NodeSpec, default_nodes
from kubelet_sim.conformance import csi_cases as basic
from kubelet_sim.conformance import csi_cases_capacity as capacity_cases
from kubelet_sim.conformance import csi_cases_driver_fields as driver_fields
from kubelet_sim.conformance import csi_cases_nodes as node_cases
from kubelet_sim.conformance import csi_cases_secrets as secret_cases
from kubelet_sim.conformance import csi_cases_volumes as volume_cases
from kubelet_sim.conformance.csi_run import SUITE, CsiRun, CsiTarget, WrongDriver
from kubelet_sim.conformance.report import Report
from kubelet_sim.utils.trace import Trace

__all__ = ["CASES", "CsiTarget", "run_csi_suite"]

CASES: list[tuple[str, Callable[[CsiRun, str], Awaitable[None]]]] = [
    ("provisioning/filesystem", basic.provisioning_filesystem),
    ("provisioning/block", basic.provisioning_block),
    ("expansion/online", basic.expansion_online),
    ("expansion/offline", volume_cases.expansion_offline),
    ("snapshots/restore", basic.snapshots_restore),
    ("snapshots/delete-order", volume_cases.snapshot_outlives_source),
    ("multivolume/two-volumes-one-pod", basic.two_volumes_one_pod),
    ("multivolume/rwo-two-pods-one-node", basic.rwo_two_pods_one_node),
    ("multivolume/rwx-across-nodes", node_cases.rwx_across_nodes),
    ("topology/wait-for-first-consumer", basic.wait_for_first_consumer),
    ("ephemeral/inline", basic.ephemeral_inline),
    ("volumemode/mismatch", volume_cases.volume_mode_mismatch),
    ("volume-limits/one-over-the-limit", node_cases.volume_limits),
    ("capacity/get-capacity", volume_cases.capacity),
    ("capacity/scheduling", capacity_cases.capacity_scheduling),
    ("co-retries/node-stage-unavailable", basic.node_stage_unavailable),
    ("co-retries/controller-publish-timeout", node_cases.controller_publish_timeout),
    ("restart/teardown-after-node-plugin-restart", basic.teardown_after_node_plugin_restart),
    *driver_fields.CASES,
    *secret_cases.CASES,
]

# Our driver, when the suite starts it, reports a small volume limit per node, so that
# volume-limits runs (limit + 1 pods) instead of skipping, and quickly.
OUR_DRIVER_ARGS = ("--max-volumes-per-node", "3")


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
                           csi_node_endpoints=dict(target.node_endpoints),
                           driver_args=[*OUR_DRIVER_ARGS, *target.driver_args],
                           attach_required=driver_fields.attach_required(target))
    cluster = Cluster(config)
    try:
        await cluster.start()
        if target.driver_name and cluster.driver_name != target.driver_name:
            raise WrongDriver(f"the driver at {target.controller_endpoint} is "
                              f"{cluster.driver_name!r}, not {target.driver_name!r}")
        for kubelet in cluster.kubelets.values():
            # 3 tries of a failing volume operation per pass, not 6: enough for the
            # co-retries case, and a broken driver fails its case in seconds
            kubelet.volumes.max_attempts = 3
        run = CsiRun(cluster, target)
        driver_fields.install_csidriver(run)
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
