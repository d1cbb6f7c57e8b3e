"""The control plane of a cluster with one CSI driver: kube-controller-manager's loops
(scheduler, PV binder, PVC/PV protection, garbage collector, pod GC, disruption, resource
quota, namespace (a deleted namespace's contents, then its finalizer), service accounts (a
``default`` one per namespace), root-ca-cert-publisher (given a CA), endpointslice and
endpoints, the workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job),
attach/detach, snapshot-controller, and in a live cluster node lifecycle and taint eviction)
and the CSI sidecars that serve the driver (external-provisioner with its capacity controller,
-attacher, -snapshotter, -resizer).

:func:`cluster_controllers` builds the usual set; its :class:`ControllerManager` settles
them (tests, demo) or runs their watch loops.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.controllers.attach_detach import AttachDetachController
from kubelet_sim.controllers.base import Controller, ControllerManager
from kubelet_sim.controllers.binder import VolumeBinder
from kubelet_sim.controllers.disruption import DisruptionController
from kubelet_sim.controllers.endpoints import EndpointsController
from kubelet_sim.controllers.endpointslice import EndpointSliceController
from kubelet_sim.controllers.garbage_collector import GarbageCollector
from kubelet_sim.controllers.namespace import NamespaceController
from kubelet_sim.controllers.node_lifecycle import NodeLifecycleController
from kubelet_sim.controllers.pod_gc import PodGarbageCollector
from kubelet_sim.controllers.protection import StorageProtection
from kubelet_sim.controllers.resource_quota import ResourceQuotaController
from kubelet_sim.controllers.root_ca_publisher import RootCACertPublisher
from kubelet_sim.controllers.scheduler import Scheduler
from kubelet_sim.controllers.service_account import ServiceAccountController
from kubelet_sim.controllers.snapshot_controller import SnapshotController
from kubelet_sim.controllers.taint_eviction import TaintEvictionController
from kubelet_sim.controllers.workloads import workload_controllers as workload_loops
from kubelet_sim.csi.client import CsiClient
from kubelet_sim.sidecars.attacher import ExternalAttacher
from kubelet_sim.sidecars.provisioner import ExternalProvisioner
from kubelet_sim.sidecars.resizer import ExternalResizer
from kubelet_sim.sidecars.snapshotter import CsiSnapshotter
from kubelet_sim.sidecars.storage_capacity import StorageCapacityController
from kubelet_sim.utils.clock import Clock


def cluster_controllers(
    api: APIServer,
    csi: CsiClient,
    driver: str,
    *,
    clock: Clock | None = None,
    recorder: EventRecorder | None = None,
    resync_seconds: float = 30.0,
    sidecars: bool = True,
    snapshot_controller: bool = True,
    workload_controllers: bool = True,
    node_monitor_grace_period: float | None = None,
    root_ca_cert: bytes | None = None,
) -> ControllerManager:
    """Every controller of a cluster with one CSI driver (``csi``: its controller socket).
    CSI calls are traced under each sidecar's component name. ``sidecars=False`` leaves
    the four CSI sidecars out (kube-controller-manager's loops stay);
    ``snapshot_controller=False`` leaves out the snapshot controller, which in a real
    cluster is a component of its own deployed beside the sidecars;
    ``workload_controllers=False`` leaves out the Deployment, ReplicaSet, StatefulSet,
    DaemonSet and Job controllers. With a
    ``node_monitor_grace_period`` (seconds) the node lifecycle and taint eviction
    controllers run too: for clusters whose kubelets heartbeat in real time (``up``).
    With the API server's ``root_ca_cert`` (PEM) the root-ca-cert-publisher runs too."""
    recorder = recorder or EventRecorder(api)
    common: dict[str, Any] = {"clock": clock, "recorder": recorder,
                              "resync_seconds": resync_seconds}
    def sidecar(loop: Controller) -> list[Controller]:
        return [loop] if sidecars else []

    lifecycle: list[Controller] = [] if node_monitor_grace_period is None else [
        NodeLifecycleController(api, grace_period=node_monitor_grace_period,
                                startup_grace_period=node_monitor_grace_period * 1.2,  # 60 s by 50
                                **{**common, "resync_seconds": 5.0}),
        TaintEvictionController(api, **common),
    ]
    return ControllerManager([
        Scheduler(api, **common),
        VolumeBinder(api, **common),
        StorageProtection(api, **common),
        GarbageCollector(api, **common),
        PodGarbageCollector(api, **common),
        DisruptionController(api, **common),
        ResourceQuotaController(api, **common),
        NamespaceController(api, **common),
        ServiceAccountController(api, **common),
        *([RootCACertPublisher(api, root_ca_cert, **common)] if root_ca_cert else []),
        EndpointSliceController(api, **common),  # Services' endpoints (issue 24)
        EndpointsController(api, **common),
        *(workload_loops(api, common) if workload_controllers else []),
        *sidecar(ExternalProvisioner(api, csi, driver, **common)),
        *sidecar(StorageCapacityController(api, csi, driver, **common)),
        AttachDetachController(api, **common),
        *sidecar(ExternalAttacher(api, csi, driver, **common)),
        *([SnapshotController(api, **common)] if snapshot_controller else []),
        *sidecar(CsiSnapshotter(api, csi, driver, **common)),
        *sidecar(ExternalResizer(api, csi, driver, **common)),
        *lifecycle,
    ])

