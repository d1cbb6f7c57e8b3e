"""The control plane of a cluster with one CSI driver: kube-controller-manager's loops
(PV binder, PVC/PV protection, garbage collector, pod GC, disruption, resource quota,
namespace (a deleted namespace's contents, then its finalizer), service accounts (a
``default`` one per namespace), root-ca-cert-publisher (given a CA), endpointslice and
endpoints, the workload controllers (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job),
attach/detach, and in a live cluster node lifecycle and taint eviction), the scheduler,
the snapshot-controller, and the CSI sidecars that serve the driver (external-provisioner
with its capacity controller, -attacher, -snapshotter, -resizer).

:data:`LOOPS` names every loop once, in the order a settle round runs them, with the
component (and so the leader Lease) it belongs to. :func:`cluster_controllers` builds the
usual set for one process (``up``, tests, demo); the ``controller-manager``,
``scheduler`` and ``sidecars`` commands build their share from the same table with
:func:`build_loops`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.in_process import server_or_client
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.controllers.attach_detach import AttachDetachController
from kubelet_sim.controllers.base import Controller, ControllerManager
from kubelet_sim.controllers.binder import VolumeBinder
from kubelet_sim.controllers.daemonset import DaemonSetController
from kubelet_sim.controllers.deployment import DeploymentController
from kubelet_sim.controllers.disruption import DisruptionController
from kubelet_sim.controllers.endpoints import EndpointsController
from kubelet_sim.controllers.endpointslice import EndpointSliceController
from kubelet_sim.controllers.garbage_collector import GarbageCollector
from kubelet_sim.controllers.job import JobController
from kubelet_sim.controllers.namespace import NamespaceController
from kubelet_sim.controllers.node_lifecycle import NodeLifecycleController
from kubelet_sim.controllers.pod_gc import PodGarbageCollector
from kubelet_sim.controllers.protection import StorageProtection
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.controllers.resource_quota import ResourceQuotaController
from kubelet_sim.controllers.root_ca_publisher import RootCACertPublisher
from kubelet_sim.controllers.scheduler import Scheduler
from kubelet_sim.controllers.service_account import ServiceAccountController
from kubelet_sim.controllers.snapshot_controller import SnapshotController
from kubelet_sim.controllers.statefulset import StatefulSetController
from kubelet_sim.controllers.taint_eviction import TaintEvictionController
from kubelet_sim.csi.client import CsiClient
from kubelet_sim.sidecars.attacher import ExternalAttacher
from kubelet_sim.sidecars.provisioner import ExternalProvisioner
from kubelet_sim.sidecars.resizer import ExternalResizer
from kubelet_sim.sidecars.snapshotter import CsiSnapshotter
from kubelet_sim.sidecars.storage_capacity import StorageCapacityController
from kubelet_sim.utils.clock import Clock

# the components a loop belongs to: each process runs the loops of its components
CONTROLLER_MANAGER = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
SNAPSHOT_CONTROLLER = "snapshot-controller"
PROVISIONER, ATTACHER, RESIZER, SNAPSHOTTER = (
    "external-provisioner", "external-attacher", "external-resizer", "external-snapshotter")
SIDECARS = (PROVISIONER, ATTACHER, RESIZER, SNAPSHOTTER)
WORKLOAD_LOOPS = ("deployment-controller", "replicaset-controller", "statefulset-controller",
                  "daemonset-controller", "job-controller")
NODE_LIFECYCLE_LOOPS = ("node-lifecycle-controller", "taint-eviction-controller")


@dataclass
class LoopContext:
    """What the loops are built with. ``api`` is the in-process server or any client
    (``Any`` while some components still declare the server alone: issue 25)."""

    api: Any
    common: dict[str, Any]
    csi: CsiClient | None = None
    driver: str = ""
    node_monitor_grace_period: float = 50.0
    root_ca_cert: bytes | None = None

    def sidecar_csi(self) -> CsiClient:
        if self.csi is None:
            raise ValueError("the CSI sidecar roles need the driver's controller socket")
        return self.csi


@dataclass(frozen=True)
class Loop:
    """One loop of the control plane: the names it is enabled by (kube-controller-
    manager's for its loops; several when one loop of ours does the work of several of
    its controllers), the legacy aliases kube-controller-manager still accepts (the
    k-th is the k-th name's), and the component it runs in."""

    names: tuple[str, ...]
    component: str
    build: Callable[[LoopContext], Controller]
    aliases: tuple[str, ...] = ()
    help: str = ""

    @property
    def name(self) -> str:
        return self.names[0]


def _loop(names: str | tuple[str, ...], component: str, build: Callable[[LoopContext], Controller],
          aliases: tuple[str, ...] = (), help: str = "") -> Loop:
    return Loop(names if isinstance(names, tuple) else (names,), component, build, aliases, help)


def _lifecycle(ctx: LoopContext) -> Controller:
    grace = ctx.node_monitor_grace_period
    return NodeLifecycleController(ctx.api, grace_period=grace,
                                   startup_grace_period=grace * 1.2,  # 60 s by 50
                                   **{**ctx.common, "resync_seconds": 5.0})


# Every loop, in the order a settle round runs them (the order `up` has always used).
LOOPS: tuple[Loop, ...] = (
    _loop("scheduler", SCHEDULER, lambda c: Scheduler(c.api, **c.common),
          help="binds pods to nodes (default-scheduler)"),
    _loop("persistentvolume-binder-controller", CONTROLLER_MANAGER,
          lambda c: VolumeBinder(c.api, **c.common), ("persistentvolume-binder",)),
    _loop(("persistentvolumeclaim-protection-controller",
           "persistentvolume-protection-controller",
           "volumeattributesclass-protection-controller"), CONTROLLER_MANAGER,
          lambda c: StorageProtection(c.api, **c.common), ("pvc-protection", "pv-protection"),
          help="one loop here: runs when any of its three names is enabled"),
    _loop("garbage-collector-controller", CONTROLLER_MANAGER,
          lambda c: GarbageCollector(c.api, **c.common), ("garbagecollector",)),
    _loop("pod-garbage-collector-controller", CONTROLLER_MANAGER,
          lambda c: PodGarbageCollector(c.api, **c.common), ("podgc",)),
    _loop("disruption-controller", CONTROLLER_MANAGER,
          lambda c: DisruptionController(c.api, **c.common), ("disruption",)),
    _loop("resourcequota-controller", CONTROLLER_MANAGER,
          lambda c: ResourceQuotaController(c.api, **c.common), ("resourcequota",)),
    _loop("namespace-controller", CONTROLLER_MANAGER,
          lambda c: NamespaceController(c.api, **c.common), ("namespace",)),
    _loop("serviceaccount-controller", CONTROLLER_MANAGER,
          lambda c: ServiceAccountController(c.api, **c.common), ("serviceaccount",)),
    _loop("root-ca-certificate-publisher-controller", CONTROLLER_MANAGER,
          lambda c: RootCACertPublisher(c.api, c.root_ca_cert or b"", **c.common),
          ("root-ca-cert-publisher",), help="needs the API server's CA"),
    _loop("endpointslice-controller", CONTROLLER_MANAGER,
          lambda c: EndpointSliceController(c.api, **c.common), ("endpointslice",)),
    _loop("endpoints-controller", CONTROLLER_MANAGER,
          lambda c: EndpointsController(c.api, **c.common), ("endpoint",)),
    _loop("deployment-controller", CONTROLLER_MANAGER,
          lambda c: DeploymentController(c.api, **c.common), ("deployment",)),
    _loop("replicaset-controller", CONTROLLER_MANAGER,
          lambda c: ReplicaSetController(c.api, **c.common), ("replicaset",)),
    _loop("statefulset-controller", CONTROLLER_MANAGER,
          lambda c: StatefulSetController(c.api, **c.common), ("statefulset",)),
    _loop("daemonset-controller", CONTROLLER_MANAGER,
          lambda c: DaemonSetController(c.api, **c.common), ("daemonset",)),
    _loop("job-controller", CONTROLLER_MANAGER,
          lambda c: JobController(c.api, **c.common), ("job",)),
    _loop("provisioner", PROVISIONER,
          lambda c: ExternalProvisioner(c.api, c.sidecar_csi(), c.driver, **c.common),
          help="external-provisioner: CreateVolume/DeleteVolume for claims"),
    _loop("capacity", PROVISIONER,
          lambda c: StorageCapacityController(c.api, c.sidecar_csi(), c.driver, **c.common),
          help="external-provisioner's CSIStorageCapacity objects (GetCapacity)"),
    _loop("persistentvolume-attach-detach-controller", CONTROLLER_MANAGER,
          lambda c: AttachDetachController(c.api, **c.common), ("attachdetach",)),
    _loop("attacher", ATTACHER,
          lambda c: ExternalAttacher(c.api, c.sidecar_csi(), c.driver, **c.common),
          help="external-attacher: ControllerPublish/Unpublish for VolumeAttachments"),
    _loop("snapshot-controller", SNAPSHOT_CONTROLLER,
          lambda c: SnapshotController(c.api, **c.common),
          help="VolumeSnapshot to VolumeSnapshotContent (its own Lease)"),
    _loop("snapshotter", SNAPSHOTTER,
          lambda c: CsiSnapshotter(c.api, c.sidecar_csi(), c.driver, **c.common),
          help="csi-snapshotter: CreateSnapshot/DeleteSnapshot for contents"),
    _loop("resizer", RESIZER,
          lambda c: ExternalResizer(c.api, c.sidecar_csi(), c.driver, **c.common),
          help="external-resizer: ControllerExpandVolume for claims"),
    _loop("node-lifecycle-controller", CONTROLLER_MANAGER, _lifecycle, ("nodelifecycle",)),
    _loop("taint-eviction-controller", CONTROLLER_MANAGER,
          lambda c: TaintEvictionController(c.api, **c.common)),
)

SIDECAR_ROLES = tuple(loop.name for loop in LOOPS if loop.component in SIDECARS)
MANAGER_LOOPS = tuple(loop for loop in LOOPS
                      if loop.component in (CONTROLLER_MANAGER, SNAPSHOT_CONTROLLER))


def loop_context(api: APIServer | KubeClient, *, csi: CsiClient | None = None,
                 driver: str = "", clock: Clock | None = None,
                 recorder: EventRecorder | None = None, resync_seconds: float = 30.0,
                 node_monitor_grace_period: float | None = None,
                 root_ca_cert: bytes | None = None) -> LoopContext:
    """The context every loop of one process shares (one event recorder)."""
    common: dict[str, Any] = {"clock": clock,
                              "recorder": recorder or EventRecorder(server_or_client(api)),
                              "resync_seconds": resync_seconds}
    return LoopContext(api, common, csi, driver,
                       50.0 if node_monitor_grace_period is None else node_monitor_grace_period,
                       root_ca_cert)


def build_loops(ctx: LoopContext, loops: Iterable[Loop]) -> list[Controller]:
    """The controllers of ``loops``, in :data:`LOOPS` order."""
    wanted = set(loops)
    return [loop.build(ctx) for loop in LOOPS if loop in wanted]


@dataclass(frozen=True)
class Selection:
    """Which loops of the table run (``up``'s switches)."""

    sidecars: bool = True
    snapshot_controller: bool = True
    workload_controllers: bool = True
    node_lifecycle: bool = False
    root_ca_publisher: bool = False
    left_out: frozenset[str] = field(default_factory=frozenset)

    def wants(self, loop: Loop) -> bool:
        return not ((loop.component in SIDECARS and not self.sidecars)
                    or (loop.component == SNAPSHOT_CONTROLLER and not self.snapshot_controller)
                    or (loop.name in WORKLOAD_LOOPS and not self.workload_controllers)
                    or (loop.name in NODE_LIFECYCLE_LOOPS and not self.node_lifecycle)
                    or (loop.name == "root-ca-certificate-publisher-controller"
                        and not self.root_ca_publisher)
                    or loop.name in self.left_out)


def cluster_controllers(
    api: APIServer | KubeClient,
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
    """Every controller of a cluster with one CSI driver (``csi``: its controller socket),
    in one process. CSI calls are traced under each sidecar's component name.
    ``sidecars=False`` leaves the four CSI sidecars out (kube-controller-manager's loops
    stay); ``snapshot_controller=False`` leaves out the snapshot controller, which in a
    real cluster is a component of its own deployed beside the sidecars;
    ``workload_controllers=False`` leaves out the Deployment, ReplicaSet, StatefulSet,
    DaemonSet and Job controllers. With a ``node_monitor_grace_period`` (seconds) the
    node lifecycle and taint eviction controllers run too: for clusters whose kubelets
    heartbeat in real time (``up``). With the API server's ``root_ca_cert`` (PEM) the
    root-ca-cert-publisher runs too."""
    ctx = loop_context(api, csi=csi, driver=driver, clock=clock, recorder=recorder,
                       resync_seconds=resync_seconds,
                       node_monitor_grace_period=node_monitor_grace_period,
                       root_ca_cert=root_ca_cert)
    selection = Selection(sidecars=sidecars, snapshot_controller=snapshot_controller,
                          workload_controllers=workload_controllers,
                          node_lifecycle=node_monitor_grace_period is not None,
                          root_ca_publisher=bool(root_ca_cert))
    return ControllerManager(build_loops(ctx, filter(selection.wants, LOOPS)))


def sanitized_lease_name(name: str) -> str:
    """A Lease name as the CSI sidecars' leader election library makes it from a lock
    name: every character outside [a-zA-Z0-9-] becomes '-', and a trailing '-' gets an
    'X' after it."""
    name = re.sub(r"[^a-zA-Z0-9-]", "-", name)
    return name + "X" if name.endswith("-") else name


def sidecar_lease_name(component: str, driver: str) -> str:
    """The leader Lease each upstream sidecar takes for ``driver``."""
    plain = driver.replace("/", "-")
    lock = {PROVISIONER: plain,
            ATTACHER: f"external-attacher-leader-{driver}",
            RESIZER: f"external-resizer-{sanitized_lease_name(driver)}",
            SNAPSHOTTER: f"external-snapshotter-leader-{plain}"}[component]
    return sanitized_lease_name(lock)
