"""``kubelet-sim kubelet --kubeconfig K``: simulated nodes as their own process, joined to
any Kubernetes API server over HTTPS (our ``kubelet-sim apiserver``, or a real
kube-apiserver such as kind's or kwok's).

One process runs one node (``--node-name N``) or many (``--nodes K --name-prefix P``:
``P1`` … ``PK``). For each node it does what a kubelet's machine does at boot:

* registers the Node (the kubelet's default labels, ``--node-labels``, our
  :data:`SIM_NODE_LABEL`, ``--register-with-taints``, an InternalIP, capacity and
  allocatable) and its CSINode; an existing Node is taken over as it is;
* finds the node's podCIDR: ``Node.spec.podCIDR`` when the control plane allocates one
  (kube-controller-manager's ``--allocate-node-cidrs``), else the node's subnet of
  ``--pod-cidr`` written to the Node;
* writes the node's CNI network config (our emu-bridge + emu-host-local over that
  podCIDR) and starts our CSI node plugin for it (or announces ``--csi-node-endpoint``);
* runs the node's :class:`~kubelet_sim.kubelet.kubelet.Kubelet` over the
  :class:`~kubelet_sim.client.http.HttpKubeClient`: Lease heartbeats and node status,
  its pods with real CNI execs and CSI calls.

The disk layout per node is :mod:`kubelet_sim.node_host`'s, under ``STATE_DIR/nodes``.
SIGINT/SIGTERM stop it as a kubelet stops: the loops end, the plugin connections close
and the node plugins stop, while the pods stay as they are in the runtime state; started
again on the same ``--state-dir`` the kubelets recover their pods (sandboxes, IPs,
mounted volumes) from it. Without ``--state-dir`` a temp dir is used and removed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import re
import shutil
import signal
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from csi_protos import csi_pb2
from kubelet_sim.api import builders
from kubelet_sim.api.errors import AlreadyExists, ApiError
from kubelet_sim.api.model import JSON, Resource, node_pod_cidrs
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.kube_client import ApiUnreachable, KubeClient
from kubelet_sim.client.kubeconfig import ClientConfig, KubeconfigError, load_kubeconfig
from kubelet_sim.csi.client import CsiError, GrpcCsiClient
from kubelet_sim.kubelet.kubelet import Kubelet
from kubelet_sim.kubelet.node_info import default_labels
from kubelet_sim.node_host import (
    DRIVER_NAME,
    CniSetup,
    NodeDirs,
    container_runtime,
    install_cni_plugins,
    node_plugin,
    register_running_plugin,
    write_network_config,
)
from kubelet_sim.plugin_processes import DriverProcess, DriverStartError
from kubelet_sim.state_dir_lock import StateDirInUse, StateDirLock
from kubelet_sim.up import private_dir
from kubelet_sim.utils.trace import Trace
from node_driver_registrar.server import RegistrationServer

log = logging.getLogger(__name__)

# The label every simulated node carries: workloads select these nodes with it
# (nodeSelector), or keep off them (a nodeAffinity NotIn), as kwok's type=kwok.
SIM_NODE_LABEL = "sim.cni-csi-mini.io/node"
SIM_NODE_LABEL_VALUE = "true"
DEFAULT_POD_CIDR = "10.244.0.0/16"  # split into one /24 per node, node i the i-th
DEFAULT_NODE_CIDR_MASK = 24  # kube-controller-manager's --node-cidr-mask-size
DEFAULT_NODE_IP_RANGE = "192.168.0.0/16"  # node i's InternalIP: the range's i-th address
# what each simulated node offers the scheduler (kwok's fake nodes offer as much)
NODE_CAPACITY = {"cpu": "32", "memory": "256Gi", "ephemeral-storage": "100Gi",
                 "pods": "110"}
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
CACHE_SYNC_SECONDS = 60.0
KUBELET_QPS, KUBELET_BURST = 50.0, 100  # the kubelet's --kube-api-qps/--kube-api-burst
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")


class KubeletRefused(RuntimeError):
    """The command cannot start as asked: said in one line, nothing left behind. ``code``
    is its exit status (2: the flags or the files; 1: the API server)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class KubeletOptions:
    kubeconfig: Path
    node_names: list[str]
    context: str = ""
    state_dir: Path | None = None  # None: root_dir's parent, else a temp dir removed at exit
    root_dir: Path | None = None  # one node's kubelet root; its other dirs beside it
    node_ip: str = ""  # one node's InternalIP ("": from node_ip_range)
    pod_cidr: str = ""  # "": the control plane's, else DEFAULT_POD_CIDR's subnets
    node_cidr_mask_size: int = DEFAULT_NODE_CIDR_MASK
    pod_cidr_wait: float = 5.0  # seconds to wait for the control plane's podCIDR
    node_ip_range: str = DEFAULT_NODE_IP_RANGE
    node_labels: dict[str, str] = field(default_factory=dict)
    taints: list[JSON] = field(default_factory=list)
    max_pods: int = 110
    csi_node_endpoints: dict[str, str] = field(default_factory=dict)  # node -> endpoint
    csi_state_dir: Path | None = None  # the storage array our node plugins share
    driver_name: str = DRIVER_NAME
    driver_args: list[str] = field(default_factory=list)
    cni_bin_dir: Path | None = None
    cni_faults: Path | None = None
    trace_file: Path | None = None  # the nodes' CSI calls and CNI execs, appended
    api_wait: float = 10.0  # seconds to keep trying an unreachable API server at start
    qps: float = KUBELET_QPS
    burst: int = KUBELET_BURST
    lease_duration_seconds: int = 40
    sync_frequency: float = 60.0


# -- flags --------------------------------------------------------------------------------


def node_names(node_name: str | None, count: int | None, prefix: str) -> list[str]:
    """``[node_name]``, or ``prefix1`` … ``prefixK``; KubeletRefused for a bad name."""
    if node_name and count is not None:
        raise KubeletRefused("--node-name and --nodes do not go together: one node is "
                             "--node-name N, many are --nodes K [--name-prefix P]")
    if node_name:
        names = [node_name]
    elif count is not None:
        if count < 1:
            raise KubeletRefused(f"--nodes {count}: at least 1")
        names = [f"{prefix}{i}" for i in range(1, count + 1)]
    else:
        raise KubeletRefused("name the node: --node-name N, or --nodes K [--name-prefix P]")
    for name in names:
        if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
            raise KubeletRefused(
                f"node name {name!r} is not a lowercase RFC 1123 subdomain (lowercase "
                "letters, digits, '-' and '.', starting and ending with a letter or digit)")
    return names


def subnet(pool: str, index: int, prefix_len: int, flag: str) -> str:
    """The ``index``-th (0-based) subnet of ``pool`` of size ``/prefix_len``."""
    try:
        network = ipaddress.ip_network(pool, strict=True)
    except ValueError as err:
        raise KubeletRefused(f"{flag} {pool}: {err}") from None
    if not network.prefixlen <= prefix_len <= network.max_prefixlen:
        raise KubeletRefused(f"{flag} {pool}: cannot hold /{prefix_len} subnets")
    count = 1 << (prefix_len - network.prefixlen)
    if index >= count:
        raise KubeletRefused(f"{flag} {pool} holds {count} /{prefix_len} subnet(s), "
                             f"not one per node for {index + 1} nodes")
    size = 1 << (network.max_prefixlen - prefix_len)
    first = network.network_address + index * size
    return str(ipaddress.ip_network(f"{first}/{prefix_len}"))


def node_ip(pool: str, index: int) -> str:
    """Node ``index`` (0-based)'s InternalIP: the range's ``index+1``-th address."""
    try:
        network = ipaddress.ip_network(pool, strict=True)
    except ValueError as err:
        raise KubeletRefused(f"--node-ip-range {pool}: {err}") from None
    if index + 2 >= network.num_addresses:
        raise KubeletRefused(f"--node-ip-range {pool}: too small for {index + 1} nodes")
    return str(network.network_address + index + 1)


def parse_taints(specs: list[str]) -> list[JSON]:
    """``--register-with-taints``: ``key[=value]:Effect``, comma separated, repeatable."""
    taints: list[JSON] = []
    for item in (part.strip() for spec in specs for part in spec.split(",")):
        if not item:
            continue
        head, sep, effect = item.rpartition(":")
        key, _, value = head.partition("=")
        if not sep or not key or effect not in TAINT_EFFECTS:
            raise KubeletRefused(f"--register-with-taints wants key[=value]:Effect with Effect "
                                 f"one of {', '.join(TAINT_EFFECTS)}, not {item!r}")
        taint: JSON = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        taints.append(taint)
    return taints


def parse_labels(specs: list[str]) -> dict[str, str]:
    """``--node-labels``: ``key=value``, comma separated, repeatable."""
    labels: dict[str, str] = {}
    for item in (part.strip() for spec in specs for part in spec.split(",")):
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key or not _LABEL_VALUE.fullmatch(value) or len(value) > 63:
            raise KubeletRefused(f"--node-labels wants key=value, not {item!r}")
        labels[key] = value
    return labels


def csi_node_endpoints(specs: list[str], names: list[str]) -> dict[str, str]:
    """``--csi-node-endpoint``: ``NODE=EP`` per node, or one bare ``EP`` for a single node."""
    out: dict[str, str] = {}
    for item in specs:
        node, sep, endpoint = item.partition("=")
        if not sep and len(names) == 1:
            node, endpoint = names[0], item
        elif not sep or not node or not endpoint:
            raise KubeletRefused(f"--csi-node-endpoint wants NODE=EP (or EP with one node), "
                                 f"not {item!r}")
        if node not in names:
            raise KubeletRefused(f"--csi-node-endpoint {item}: no node {node!r} in this "
                                 "process")
        if not endpoint.startswith("unix://"):
            raise KubeletRefused(f"--csi-node-endpoint {item}: a unix:///path endpoint")
        out[node] = endpoint
    return out


def options_from(args: argparse.Namespace) -> KubeletOptions:
    """The ``kubelet`` subcommand's flags as options; KubeletRefused for bad ones."""
    names = node_names(args.node_name, args.nodes, args.name_prefix)
    if args.pod_cidr:
        subnet(args.pod_cidr, len(names) - 1, args.node_cidr_mask_size, "--pod-cidr")
    node_ip(args.node_ip_range, len(names) - 1)
    if args.dataplane != "emulated":
        raise KubeletRefused(f"--dataplane {args.dataplane}: the kubelet command runs the "
                             "emulated dataplane only (the linux one needs the cluster's "
                             "host-gw routes: `up --dataplane linux`)")
    for flag, value in (("--root-dir", args.root_dir), ("--node-ip", args.node_ip)):
        if value and len(names) != 1:
            raise KubeletRefused(f"{flag} is one node's: it goes with --node-name")
    if args.node_ip:
        try:
            ipaddress.ip_address(args.node_ip)
        except ValueError as err:
            raise KubeletRefused(f"--node-ip {args.node_ip}: {err}") from None
    if args.max_pods < 0 or args.node_lease_duration_seconds < 1:
        raise KubeletRefused("--max-pods wants 0 or more, --node-lease-duration-seconds 1 "
                             "or more")
    return KubeletOptions(
        kubeconfig=args.kubeconfig, context=args.context, node_names=names,
        state_dir=args.state_dir, root_dir=args.root_dir, node_ip=args.node_ip,
        pod_cidr=args.pod_cidr,
        node_cidr_mask_size=args.node_cidr_mask_size, pod_cidr_wait=args.pod_cidr_wait,
        node_ip_range=args.node_ip_range, node_labels=parse_labels(args.node_labels),
        taints=parse_taints(args.register_with_taints), max_pods=args.max_pods,
        csi_node_endpoints=csi_node_endpoints(args.csi_node_endpoint, names),
        csi_state_dir=args.csi_state_dir, driver_name=args.driver_name or DRIVER_NAME,
        driver_args=["--faults", str(args.csi_faults.resolve())] if args.csi_faults else [],
        cni_bin_dir=args.cni_bin_dir,
        cni_faults=args.cni_faults.resolve() if args.cni_faults else None,
        trace_file=args.trace_file,
        api_wait=args.api_wait, qps=args.kube_api_qps, burst=args.kube_api_burst,
        lease_duration_seconds=args.node_lease_duration_seconds)


# -- the node objects ---------------------------------------------------------------------


def node_object(name: str, internal_ip: str, options: KubeletOptions,
                pod_cidr: str | None) -> Resource:
    """The Node as this kubelet registers it."""
    labels = {**default_labels(name), **options.node_labels,
              SIM_NODE_LABEL: SIM_NODE_LABEL_VALUE}
    node = builders.node(name, pod_cidr, internal_ip, labels=labels)
    if options.taints:
        node.spec["taints"] = [dict(t) for t in options.taints]
    capacity = {**NODE_CAPACITY, "pods": str(options.max_pods)}
    node.status["capacity"] = dict(capacity)
    node.status["allocatable"] = dict(capacity)
    return node


async def register_node(client: KubeClient, wanted: Resource) -> Resource:
    """Create the Node; one that exists already is kept, given the labels it lacks."""
    try:
        return await client.create(wanted)
    except AlreadyExists:
        pass
    node = await client.get("Node", wanted.name)
    missing = {k: v for k, v in wanted.metadata.labels.items()
               if node.metadata.labels.get(k) != v}
    if missing:
        node = await client.patch("Node", wanted.name, {"metadata": {"labels": missing}})
    return node


async def ensure_csinode(client: KubeClient, node: Resource) -> None:
    """The node's CSINode (no drivers yet), owned by the Node, as the kubelet makes it at
    start; the drivers' entries follow their registration."""
    with contextlib.suppress(AlreadyExists):
        await client.create(Resource.from_dict({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
            "metadata": {"name": node.name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "Node", "name": node.name,
                "uid": node.metadata.uid}]},
            "spec": {"drivers": []}}))


async def settle_pod_cidrs(client: KubeClient, nodes: list[Resource],
                           fallbacks: dict[str, str], wait: float) -> dict[str, str]:
    """Each node's podCIDR: the one its Node has, or gets from the control plane within
    ``wait`` seconds (one list of our Nodes every half second, however many wait), else
    its ``fallbacks`` entry, written to the Node."""
    found = {n.name: node_pod_cidrs(n)[0] for n in nodes if node_pod_cidrs(n)}
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while len(found) < len(nodes) and loop.time() < deadline:
        await asyncio.sleep(min(0.5, max(0.0, deadline - loop.time())))
        listed = await client.list("Node", label_selector=f"{SIM_NODE_LABEL}="
                                   f"{SIM_NODE_LABEL_VALUE}")
        found.update({n.name: node_pod_cidrs(n)[0] for n in listed.items
                      if n.name in fallbacks and n.name not in found and node_pod_cidrs(n)})

    async def write(name: str) -> None:
        cidr = fallbacks[name]
        await client.patch("Node", name, {"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}})
        found[name] = cidr

    await asyncio.gather(*(write(n.name) for n in nodes if n.name not in found))
    return found


# -- running ------------------------------------------------------------------------------


@dataclass
class SimulatedNode:
    """One node of this process: its dirs, podCIDR, plugin and kubelet."""

    name: str
    dirs: NodeDirs
    pod_cidr: str = ""
    plugin: DriverProcess | None = None
    registrar: RegistrationServer | None = None
    kubelet: Kubelet | None = None


class NodeHosts:
    """The nodes of one ``kubelet`` process over one client."""

    def __init__(self, options: KubeletOptions, client: KubeClient, state_dir: Path,
                 die_with_parent: bool) -> None:
        self.options = options
        self.client = client
        self.state_dir = state_dir
        self.die_with_parent = die_with_parent
        self.trace = Trace.of_process(options.trace_file) if options.trace_file else Trace()
        self.recorder = EventRecorder(client)
        self.cni = CniSetup(bin_dir=options.cni_bin_dir or state_dir / "opt-cni-bin",
                            faults=options.cni_faults)
        self.nodes = [SimulatedNode(name, node_dirs(options, state_dir, name))
                      for name in options.node_names]

    @property
    def csi_state_dir(self) -> Path:
        return self.options.csi_state_dir or self.state_dir / "storage-array"

    def plugin_flags(self) -> list[str]:
        return ["--driver-name", self.options.driver_name,
                "--state-dir", str(self.csi_state_dir), *self.options.driver_args]

    async def prepare(self) -> None:
        """Register every node, lay out its machine and start its plugin."""
        if self.options.cni_bin_dir is None:
            await asyncio.to_thread(install_cni_plugins, self.cni.bin_dir)
        self.csi_state_dir.mkdir(parents=True, exist_ok=True)
        await self._register()
        for node in self.nodes:
            await self._lay_out(node)
        for node in self.nodes:
            if node.plugin is not None:
                await node.plugin.wait_ready()
        for node in self.nodes:
            node.kubelet = Kubelet(
                api=self.client, node_name=node.name, root_dir=node.dirs.kubelet_root,
                runtime=container_runtime(self.cni, node.dirs, node.name, self.trace),
                trace=self.trace, recorder=self.recorder,
                lease_duration_seconds=self.options.lease_duration_seconds,
                sync_frequency=self.options.sync_frequency)
        await self._wait_for_pods_listed()

    async def _register(self) -> None:
        """The Nodes (all at once, the client's rate limit pacing them), their podCIDRs
        and their CSINodes."""
        options = self.options
        mask = options.node_cidr_mask_size
        given = [subnet(options.pod_cidr, i, mask, "--pod-cidr") if options.pod_cidr else None
                 for i in range(len(self.nodes))]
        registered = await asyncio.gather(*(
            register_node(self.client, node_object(
                node.name, options.node_ip or node_ip(options.node_ip_range, i), options,
                given[i]))
            for i, node in enumerate(self.nodes)))
        fallbacks = {node.name: given[i] or subnet(DEFAULT_POD_CIDR, i, mask, "--pod-cidr")
                     for i, node in enumerate(self.nodes)}
        cidrs = await settle_pod_cidrs(self.client, list(registered), fallbacks,
                                       0.0 if options.pod_cidr else options.pod_cidr_wait)
        for i, node in enumerate(self.nodes):
            node.pod_cidr = cidrs[node.name]
            if given[i] and node.pod_cidr != given[i]:
                log.warning("node %s keeps its podCIDR %s (spec.podCIDR is set once), not %s",
                            node.name, node.pod_cidr, given[i])
        await asyncio.gather(*(ensure_csinode(self.client, r) for r in registered))

    async def _wait_for_pods_listed(self) -> None:
        """A kubelet's start tells its pods from the orphans (whose dirs it removes) by
        the shared cache: the Pod informer (one for all the nodes of this client) has its
        first list in before any kubelet starts."""
        first = self.nodes[0].kubelet if self.nodes else None
        feed = feed_source(self.client)
        if first is None or not isinstance(feed, ClientFeed):
            return
        first.cache.list("Pod")
        try:
            await asyncio.wait_for(feed.wait_synced(), CACHE_SYNC_SECONDS)
        except TimeoutError:
            raise KubeletRefused(f"the Pods were not listed within {CACHE_SYNC_SECONDS:g}s: "
                                 "may this identity list and watch pods?", code=1) from None

    async def _lay_out(self, node: SimulatedNode) -> None:
        """The node's CNI config, and its CSI node plugin started (or announced)."""
        write_network_config(self.cni, node.dirs, node.pod_cidr)
        node.dirs.plugins_registry.mkdir(parents=True, exist_ok=True)
        endpoint = self.options.csi_node_endpoints.get(node.name)
        if endpoint:
            node.registrar = await register_running_plugin(
                node.dirs, await plugin_name(endpoint, self.trace, node.name), endpoint)
        else:
            node.plugin = node_plugin(node.name, node.dirs, self.options.driver_name,
                                      self.plugin_flags(), self.state_dir / "logs",
                                      die_with_parent=self.die_with_parent)
            node.plugin.start()

    async def run(self, stop: asyncio.Event) -> bool:
        """Every node's kubelet loops until ``stop``; False when one of them failed (the
        others are stopped then too)."""
        tasks = [asyncio.create_task(n.kubelet.run(stop), name=f"kubelet-{n.name}")
                 for n in self.nodes if n.kubelet is not None]
        stopping = asyncio.create_task(stop.wait())
        failed = False
        try:
            done, _ = await asyncio.wait([*tasks, stopping],
                                         return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopping and task.exception() is not None:
                    failed = True
                    log.error("%s failed", task.get_name(), exc_info=task.exception())
        finally:
            stop.set()
            stopping.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        return not failed

    async def close(self) -> None:
        """Connections closed, registrars and our node plugins stopped; pods left as they
        are in the runtime state."""
        for node in self.nodes:
            if node.kubelet is not None:
                for registered in list(node.kubelet.watcher.drivers.values()):
                    with contextlib.suppress(Exception):
                        await registered.client.close()
            if node.registrar is not None:
                await node.registrar.stop()
            if node.plugin is not None:
                await asyncio.to_thread(node.plugin.stop)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.recorder.flush(), 5.0)
        feed = feed_source(self.client)
        if isinstance(feed, ClientFeed):
            await feed.stop()


UNIX_PATH_MAX = 107  # bytes of a unix socket path (sun_path less its NUL)


def node_dirs(options: KubeletOptions, state_dir: Path, name: str) -> NodeDirs:
    """Node ``name``'s dirs: ``state_dir/nodes/<name>``, or beside ``--root-dir``."""
    if options.root_dir is not None:
        root = options.root_dir.resolve()
        return NodeDirs(root.parent, kubelet_dir=root)
    return NodeDirs(state_dir.resolve() / "nodes" / name)


def socket_path_problem(state_dir: Path, options: KubeletOptions) -> str:
    """Why the nodes' sockets cannot live where they go ('' when they can)."""
    for name in options.node_names:
        dirs = node_dirs(options, state_dir, name)
        for path in (dirs.plugin_dir(options.driver_name) / "csi.sock",
                     dirs.plugins_registry / f"{options.driver_name}-reg.sock"):
            if len(str(path).encode()) > UNIX_PATH_MAX:
                return (f"socket path {path} is longer than the {UNIX_PATH_MAX}-byte unix "
                        "limit: choose a shorter --state-dir (or shorter node names)")
    return ""


async def plugin_name(endpoint: str, trace: Trace, node: str) -> str:
    """The driver name a running CSI plugin answers GetPluginInfo with."""
    client = GrpcCsiClient(endpoint, trace=trace, node=node, component="kubelet")
    try:
        info = await client.call(csi_pb2.GetPluginInfoRequest(), csi_pb2.GetPluginInfoResponse)
    except CsiError as err:
        raise KubeletRefused(f"the CSI node plugin at {endpoint} did not answer "
                             f"GetPluginInfo: {err}", code=1) from None
    finally:
        await client.close()
    return str(info.name)


def client_config(options: KubeletOptions) -> ClientConfig:
    try:
        return load_kubeconfig(options.kubeconfig, options.context)
    except (KubeconfigError, OSError) as err:
        raise KubeletRefused(str(err)) from None


async def reach_api_server(config: ClientConfig, wait: float) -> None:
    """A list of Nodes answered (the server is up and this identity may read Nodes),
    tried for up to ``wait`` seconds while the server cannot be reached."""
    probe = HttpKubeClient(config, qps=0, max_retries=0)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    try:
        while True:
            try:
                await probe.list("Node", limit=1)
                return
            except ApiUnreachable as err:
                if loop.time() >= deadline:
                    raise KubeletRefused(f"cannot reach the API server at {config.server}: "
                                         f"{err}", code=1) from None
            except ApiError as err:
                raise KubeletRefused(f"the API server at {config.server} refused to list "
                                     f"Nodes: {err}", code=1) from None
            await asyncio.sleep(0.5)
    finally:
        await probe.close()


async def run_kubelets(options: KubeletOptions, ready: asyncio.Event | None = None) -> int:
    """Run the nodes until SIGINT/SIGTERM; :class:`KubeletRefused` when they cannot
    start (what was started is stopped again)."""
    config = client_config(options)
    own_dir = options.state_dir is None and options.root_dir is None
    state_dir = (options.state_dir
                 or (options.root_dir.resolve().parent if options.root_dir else None)
                 or Path(tempfile.mkdtemp(prefix="kubelet-sim-kubelet-")))
    lock: StateDirLock | None = None
    try:
        private_dir(state_dir)
        try:
            lock = StateDirLock.acquire(state_dir)
        except StateDirInUse as e:
            raise KubeletRefused(str(e)) from None
        too_long = socket_path_problem(state_dir, options)
        if too_long:
            raise KubeletRefused(too_long)
        await reach_api_server(config, options.api_wait)
        # one client (one connection pool, one watch per kind) for every node here; each
        # node keeps the kubelet's own limit, as K kubelets with a client each would
        nodes = len(options.node_names)
        client = HttpKubeClient(config, qps=options.qps * nodes, burst=options.burst * nodes)
        try:
            return await _serve(options, client, state_dir, own_dir, ready)
        finally:
            await client.close()
    finally:
        if lock is not None:
            lock.release()
        if own_dir:
            shutil.rmtree(state_dir, ignore_errors=True)


async def _serve(options: KubeletOptions, client: KubeClient, state_dir: Path, own_dir: bool,
                 ready: asyncio.Event | None) -> int:
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown.set)
    hosts = NodeHosts(options, client, state_dir, die_with_parent=own_dir)
    try:
        try:
            await hosts.prepare()
        except ApiError as err:
            raise KubeletRefused(f"registering the nodes failed: {err}", code=1) from None
        except DriverStartError as err:
            raise KubeletRefused(str(err), code=1) from None
        for node in hosts.nodes:
            where = (node.plugin.endpoint if node.plugin is not None
                     else options.csi_node_endpoints.get(node.name, ""))
            print(f"node {node.name}: podCIDR {node.pod_cidr}, CSI node plugin {where}, "
                  f"dir {node.dirs.root}", flush=True)
        print(f"kubelet: {len(hosts.nodes)} node(s) joined {client_server(client)} "
              f"(state in {state_dir})", flush=True)
        if ready is not None:
            ready.set()
        ran = await hosts.run(shutdown)
    finally:
        await hosts.close()
    print("kubelet down", flush=True)
    return 0 if ran else 1


def client_server(client: KubeClient) -> str:
    return client.config.server if isinstance(client, HttpKubeClient) else "the API server"
