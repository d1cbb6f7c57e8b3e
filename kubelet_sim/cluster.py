"""A simulated cluster on one machine: API server, controllers, N kubelets, real plugins.

Every node has its own kubelet root, its own CSI node-plugin process (own socket, node
id and topology) registering through ``plugins_registry`` as node-driver-registrar
does, and its own CNI conf dir with a bridge + host-local conflist for its podCIDR.
One controller-plugin process serves the controllers. Pods on different nodes reach
each other through host-gw routes (:mod:`kubelet_sim.network.host_gw`).

`Cluster.settle()` runs the controllers and kubelets until nothing changes, so tests and
the demo are deterministic; `run()` runs their loops for a live cluster (``up``).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.errors import AlreadyExists
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.http.token_signer import TokenSigner
from kubelet_sim.apiserver.namespaces import SYSTEM_NAMESPACES
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.services.ranges import DEFAULT_NODE_PORTS, DEFAULT_SERVICE_CIDR
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.control_plane import cluster_controllers
from kubelet_sim.controllers.base import ControllerManager
from kubelet_sim.csi.client import GrpcCsiClient
from kubelet_sim.kubelet.kubelet import Kubelet
from kubelet_sim.kubelet.node_info import default_labels
from kubelet_sim.kubelet.node_lease import ensure_lease_namespace
from kubelet_sim.network.linux_nodes import LinuxNodes
from kubelet_sim.node_host import (
    DRIVER_NAME,
    CniSetup,
    NodeDirs,
    container_runtime,
    fault_control,
    install_cni_plugins,
    network_config,
    node_plugin,
    register_running_plugin,
    write_network_config,
)
from kubelet_sim.plugin_processes import DriverProcess
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import RegistrationServer

__all__ = ["DRIVER_NAME", "Cluster", "ClusterConfig", "NodeSpec", "default_nodes",
           "fault_control", "install_cni_plugins"]

TOPOLOGY_NODE_KEY = f"topology.{DRIVER_NAME}/node"


@dataclass(frozen=True)
class NodeSpec:
    """A node to create: its name, pod CIDR, InternalIP and (optional) zone label."""

    name: str
    pod_cidr: str
    internal_ip: str
    zone: str = ""


def default_nodes(count: int) -> list[NodeSpec]:
    """node-1 … node-N: podCIDR 10.244.<i>.0/24, InternalIP 192.168.0.<i>."""
    return [NodeSpec(f"node-{i}", f"10.244.{i}.0/24", f"192.168.0.{i}")
            for i in range(1, count + 1)]


@dataclass
class ClusterConfig:
    nodes: Sequence[NodeSpec] = field(default_factory=lambda: default_nodes(1))
    work_dir: Path | None = None  # default: a fresh temp dir, removed on stop
    dataplane: str = "emulated"  # or "linux" (root): real netns, bridges and veths
    cni_bin_dir: Path | None = None  # a real CNI bin dir instead of ours
    bridge_type: str = "emu-bridge"
    ipam_type: str = "emu-host-local"
    loopback_type: str = "emu-loopback"
    driver_args: Sequence[str] = ()  # extra flags for every driver process
    attach_required: bool = True
    missing_cni_config: Sequence[str] = ()  # node names started without a network config
    runtime_status_period: float = 5.0  # how often each kubelet asks CNI STATUS (seconds)
    # Attach to CSI drivers the user runs instead of launching ours: the controller
    # plugin's endpoint, and per node the node plugin's endpoint, which an in-process
    # node-driver-registrar announces to that node's kubelet. The driver's name is then
    # whatever its GetPluginInfo answers.
    csi_controller_endpoint: str | None = None
    csi_node_endpoints: Mapping[str, str] = field(default_factory=dict)
    # False: no external-provisioner/-attacher/-snapshotter/-resizer roles; the real
    # sidecars (or the user's controllers) do that work through the API.
    sidecars: bool = True
    # False: no snapshot-controller (VolumeSnapshot -> VolumeSnapshotContent); the real
    # one, a cluster component of its own, runs beside the real sidecars.
    snapshot_controller: bool = True
    # False: no Deployment/ReplicaSet/StatefulSet/DaemonSet/Job controllers; a real
    # kube-controller-manager may run them against the API.
    workload_controllers: bool = True
    # Keep the API objects in this file (the etcd role): a cluster started again with
    # the same file (and work dir) has every object it had. None: in memory only.
    api_database: Path | None = None
    # Seconds a node may go without a heartbeat before the node lifecycle controller marks
    # it Unknown and taints it (kube-controller-manager's --node-monitor-grace-period,
    # 50 s). None: no node lifecycle or taint eviction (settle-mode clusters, whose
    # kubelets do not heartbeat between rounds).
    node_monitor_grace_period: float | None = None
    node_lease_duration_seconds: int = 40  # the kubelets' nodeLeaseDurationSeconds (renew: /4)
    # the kubelets' --sync-frequency: how often a running pod is synced again (its
    # volumes of requiresRepublish drivers get NodePublishVolume again)
    kubelet_sync_frequency: float = 60.0
    cni_faults: Path | None = None  # a fault rules file our CNI plugins obey ("faults" key)
    # The driver processes end with the simulator's process, even on kill -9 (`up`
    # without a state dir: nothing could take them back).
    plugins_die_with_simulator: bool = False
    # kube-apiserver's --service-cluster-ip-range and --service-node-port-range
    service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    service_node_port_range: str = DEFAULT_NODE_PORTS
    # The API server's CA (PEM), as `up` serves it: the root-ca-cert-publisher puts it in
    # every namespace (ConfigMap kube-root-ca.crt), where pods' kube-api-access volumes
    # read it. None: no publisher (no HTTPS front, so no CA to publish).
    root_ca_cert: bytes | None = None
    # The API server's optional admission plugins (ServiceAccount, Priority;
    # kubelet_sim.apiserver.admission_plugins): `up` turns them on. ServiceAccount wants
    # the root CA published, or pods' kube-api-access volumes cannot be made.
    admission_plugins: tuple[str, ...] = ()


class Cluster:
    def __init__(self, config: ClusterConfig | None = None, trace: Trace | None = None) -> None:
        self.config = config or ClusterConfig()
        self._own_work_dir = self.config.work_dir is None
        self.work_dir = self.config.work_dir or Path(tempfile.mkdtemp(prefix="ksim-", dir="/tmp"))
        self.trace = trace or Trace()
        self._database = (ObjectDatabase(self.config.api_database)
                          if self.config.api_database is not None else None)
        self.api = APIServer(database=self._database, bootstrap_namespaces=SYSTEM_NAMESPACES,
                             service_cluster_ip_range=self.config.service_cluster_ip_range,
                             service_node_port_range=self.config.service_node_port_range,
                             admission_plugins=self.config.admission_plugins)
        self.events = EventRecorder(self.api)  # written as Events; `kubectl describe` lists them
        # ServiceAccount tokens are signed with a key kept in memory until the HTTP front
        # (`up`) installs the state directory's
        self.api.token_signer = TokenSigner()
        self.controller_plugin: DriverProcess | None = None
        self.node_plugins: dict[str, DriverProcess] = {}
        self.kubelets: dict[str, Kubelet] = {}
        self.manager: ControllerManager | None = None  # set in start()
        self.driver_name = DRIVER_NAME
        self.controller_endpoint = ""  # the CSI controller plugin's, once started
        self._registrars: list[RegistrationServer] = []
        self._clients: list[GrpcCsiClient] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        # Linux dataplane: every node is a network namespace on a shared underlay.
        self.linux_nodes = LinuxNodes() if self.config.dataplane == "linux" else None

    # -- paths ----------------------------------------------------------------------------------

    @property
    def csi_state_dir(self) -> Path:
        return self.work_dir / "storage-array"

    @property
    def cni_bin_dir(self) -> Path:
        return self.config.cni_bin_dir or self.work_dir / "opt-cni-bin"

    def node_csi_endpoints(self) -> dict[str, str]:
        """Each node's CSI node plugin endpoint (ours, or the one given for that node)."""
        found = {name: proc.endpoint for name, proc in self.node_plugins.items()}
        return {**found, **self.config.csi_node_endpoints}

    def node_dir(self, node: str) -> Path:
        return self.work_dir / node

    def node_dirs(self, node: str) -> NodeDirs:
        return NodeDirs(self.node_dir(node))

    def cni_conf_dir(self, node: str) -> Path:
        return self.node_dirs(node).cni_conf_dir

    # -- start ----------------------------------------------------------------------------------

    async def start(self) -> None:
        cfg = self.config
        if cfg.cni_bin_dir is None:
            install_cni_plugins(self.cni_bin_dir)
        self.csi_state_dir.mkdir(parents=True, exist_ok=True)
        common = ["--driver-name", DRIVER_NAME, "--state-dir", str(self.csi_state_dir),
                  *(["--attach-required"] if cfg.attach_required else ["--no-attach-required"]),
                  *cfg.driver_args]
        if cfg.csi_controller_endpoint:
            endpoint = cfg.csi_controller_endpoint
        else:
            self.controller_plugin = DriverProcess(
                name="csi-controller-plugin",
                socket=self.work_dir / "controller" / "csi.sock",
                args=["--mode", "controller", "--node-id", "controller", *common,
                      *fault_control(self.work_dir / "controller" / "faults.sock")],
                log_path=self.work_dir / "logs" / "csi-controller.log",
                die_with_parent=cfg.plugins_die_with_simulator,
            )
            self.controller_plugin.start()
            # The controller creates the shared state (the "storage array") before any node
            # plugin opens it: drivers starting at once can fail converting it to WAL.
            await self.controller_plugin.wait_ready()
            endpoint = self.controller_plugin.endpoint
        controller_client = GrpcCsiClient(endpoint, trace=self.trace,
                                          node="control-plane", component="controller")
        self._clients.append(controller_client)
        info = await controller_client.call(csi_pb2.GetPluginInfoRequest(),
                                            csi_pb2.GetPluginInfoResponse)
        self.driver_name = info.name
        self._create_unless_kept(builders.csi_driver(
            self.driver_name, attach_required=cfg.attach_required, pod_info_on_mount=True,
            volume_lifecycle_modes=["Persistent", "Ephemeral"]))
        for spec in cfg.nodes:
            self._add_node(spec, common)
        for proc in self.node_plugins.values():
            await proc.wait_ready()
        for node, node_endpoint in cfg.csi_node_endpoints.items():
            self._registrars.append(await register_running_plugin(
                self.node_dirs(node), self.driver_name, node_endpoint))
        self.controller_endpoint = endpoint
        self.manager = cluster_controllers(self.api, controller_client, self.driver_name,
                                           recorder=self.events,
                                           sidecars=cfg.sidecars,
                                           snapshot_controller=cfg.snapshot_controller,
                                           workload_controllers=cfg.workload_controllers,
                                           root_ca_cert=cfg.root_ca_cert,
                                           node_monitor_grace_period=cfg.node_monitor_grace_period)
        for kubelet in self.kubelets.values():
            await kubelet.start()
        await self.settle()

    def _add_node(self, spec: NodeSpec, common: list[str]) -> None:
        labels = default_labels(spec.name)
        if spec.zone:
            labels["topology.kubernetes.io/zone"] = spec.zone
        self._create_unless_kept(
            builders.node(spec.name, spec.pod_cidr, spec.internal_ip, labels=labels))
        root = self.node_dir(spec.name) / "kubelet"
        if spec.name not in self.config.csi_node_endpoints:
            self._start_node_plugin(spec, root, common)
        if spec.name not in self.config.missing_cni_config:
            self.write_cni_config(spec)
        if self.linux_nodes is not None:
            self.linux_nodes.add_node(spec.name, spec.internal_ip)
            self.linux_nodes.sync_routes(self.api)
        self.kubelets[spec.name] = self._kubelet(spec, root)

    def _create_unless_kept(self, obj: Resource) -> None:
        """Create a bootstrap object; one kept from before a restart stays as it is."""
        with contextlib.suppress(AlreadyExists):
            self.api.create(obj)

    def _start_node_plugin(self, spec: NodeSpec, root: Path, common: list[str]) -> None:
        proc = node_plugin(spec.name, self.node_dirs(spec.name), self.driver_name, common,
                           self.work_dir / "logs", zone=spec.zone,
                           die_with_parent=self.config.plugins_die_with_simulator)
        proc.start()
        self.node_plugins[spec.name] = proc

    def cni_setup(self) -> CniSetup:
        cfg = self.config
        return CniSetup(bin_dir=self.cni_bin_dir, dataplane=cfg.dataplane,
                        bridge_type=cfg.bridge_type, ipam_type=cfg.ipam_type,
                        loopback_type=cfg.loopback_type, faults=cfg.cni_faults)

    def network_config(self, spec: NodeSpec) -> dict[str, object]:
        """The node's pod network: a bridge with host-local IPAM over its podCIDR."""
        return network_config(self.cni_setup(), self.node_dirs(spec.name), spec.pod_cidr)

    def write_cni_config(self, spec: NodeSpec) -> Path:
        return write_network_config(self.cni_setup(), self.node_dirs(spec.name), spec.pod_cidr)

    def _kubelet(self, spec: NodeSpec, root: Path) -> Kubelet:
        node_netns = self.linux_nodes.netns_path(spec.name) if self.linux_nodes else None
        runtime = container_runtime(self.cni_setup(), self.node_dirs(spec.name), spec.name,
                                    self.trace, netns=node_netns)
        return Kubelet(api=self.api, node_name=spec.name, root_dir=root, runtime=runtime,
                       trace=self.trace, runtime_status_period=self.config.runtime_status_period,
                       recorder=self.events,
                       lease_duration_seconds=self.config.node_lease_duration_seconds,
                       sync_frequency=self.config.kubelet_sync_frequency)

    # -- running ---------------------------------------------------------------------------------

    async def settle(self, max_rounds: int = 60, retry_wait: float = 3.0) -> int:
        """Run controllers and kubelets until a whole round changes nothing; the rounds run.

        A controller step that failed (a conflict, a CSI error), a refused plugin
        registration or a failed pod sandbox backs off (0.5 s, doubling) and is not
        settled: while one is pending, wait for its retry, up to `retry_wait` seconds in
        all, so a transient failure does not end the settle early."""
        assert self.manager is not None, "start() first"
        waited = 0.0
        for round_no in range(1, max_rounds + 1):
            changed = await self.manager.settle()
            for kubelet in self.kubelets.values():
                changed = await kubelet.sync_once() or changed
            if changed:
                continue
            # Keys whose backoff has expired were retried this round (or are stale).
            pending = [(c, key) for c in self.manager.controllers for key in c.errors
                       if not c.backoff.ready(key)]
            watchers = [w for k in self.kubelets.values() for w in (k.watcher, k)
                        if w.retries_pending]
            if not (pending or watchers) or waited >= retry_wait:
                return round_no
            while waited < retry_wait and not (any(c.backoff.ready(k) for c, k in pending)
                                               or any(w.retry_due() for w in watchers)):
                await asyncio.sleep(_RETRY_POLL_SECONDS)
                waited += _RETRY_POLL_SECONDS
        return max_rounds

    async def run(self, stop: asyncio.Event) -> None:
        """The controllers' and the kubelets' loops, watch-driven, until ``stop`` is set
        (a live cluster; tests and the demo use :meth:`settle` instead)."""
        assert self.manager is not None, "start() first"
        ensure_lease_namespace(self.api)
        self.manager.start()
        kubelets = [asyncio.create_task(k.run(stop), name=f"kubelet-{name}")
                    for name, k in self.kubelets.items()]
        await stop.wait()
        await self.manager.stop()
        for task in kubelets:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def stop(self) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        for client in self._clients:
            await client.close()
        for kubelet in self.kubelets.values():
            for registered in list(kubelet.watcher.drivers.values()):
                await registered.client.close()
        for registrar in self._registrars:
            await registrar.stop()
        for proc in self.node_plugins.values():
            proc.stop()
        if self.controller_plugin is not None:
            self.controller_plugin.stop()
        if self.linux_nodes is not None:
            # The machine goes away with its namespaces (no CNI DEL, as at power-off).
            self.linux_nodes.teardown(s.netns for k in self.kubelets.values()
                                      for s in k.runtime.list_pod_sandboxes())
        # Pods still running hold bind mounts (as root): detach them, or removing the work
        # dir would leave them in the mount table.
        _detach_mounts_under(self.work_dir)
        if self._database is not None:
            self._database.close()
        if self._own_work_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)


_RETRY_POLL_SECONDS = 0.05


def _detach_mounts_under(root: Path) -> None:
    """Lazily unmount every mount point at or below `root`, deepest first."""
    try:
        lines = Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return
    prefix = str(root.resolve())
    points = [line.split()[4].encode().decode("unicode_escape") for line in lines
              if len(line.split()) > 4]
    for point in sorted((p for p in points if p == prefix or p.startswith(prefix + "/")),
                        key=len, reverse=True):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
