"""Cluster nodes as Linux network namespaces, joined by one underlay segment (root only).

For the Linux dataplane every node gets a network namespace of its own,
``ksim-<cluster id>-<node>``, that plays the node's host: its CNI plugins run
inside it (`RealExec` with ``netns``), so the pod bridge ``cni0``, its gateway
address and the pods' host-side veths live there and never in the root
namespace. The nodes share one L2 segment, a bridge in a namespace of its own
(``ksim-<id>-underlay``) with one veth per node whose node end is ``eth0``
holding the node's InternalIP/24.

Routing between nodes is flannel's ``host-gw``: every node forwards, and holds
"<other node's podCIDR> via <other node's InternalIP>" for every other node,
computed from the API server's Node objects (:class:`ClusterNetwork`).

Nothing here touches the root namespace beyond adding and deleting our own
namespaces; every child process (``ip``, ``nsenter``) runs under a timeout.
`teardown` deletes every namespace made here (and the sandboxes' namespaces it
is given), also after a partial start, and sweeps whatever still carries this
cluster's prefix; it also runs at interpreter exit if nobody called it.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.network.host_gw import ClusterNetwork

NETNS_DIR = "/var/run/netns"
UNDERLAY_BRIDGE = "ul0"
NODE_UPLINK = "eth0"
UNDERLAY_PREFIX_LEN = 24
MAX_IFNAME = 15  # IFNAMSIZ - 1


class LinuxNodesError(RuntimeError):
    """A command that builds or reads the node namespaces failed."""


def run_command(argv: Sequence[str], *, timeout_s: float, stdin: str | None = None) -> str:
    """Run a child process to completion within ``timeout_s``; its stdout, or raise."""
    try:
        proc = subprocess.run(list(argv), input=stdin, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LinuxNodesError(f"{' '.join(argv)}: no answer within {timeout_s}s") from exc
    except FileNotFoundError as exc:
        raise LinuxNodesError(f"{argv[0]}: not installed") from exc
    if proc.returncode != 0:
        raise LinuxNodesError(f"{' '.join(argv)}: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout


def netns_names(timeout_s: float = 10.0) -> list[str]:
    """The named network namespaces (``ip netns list``), names only."""
    out = run_command(["ip", "netns", "list"], timeout_s=timeout_s)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


@dataclass
class LinuxNode:
    name: str
    netns: str  # the namespace's name under /var/run/netns
    internal_ip: str
    uplink_peer: str  # the underlay end of the node's eth0 veth

    @property
    def netns_path(self) -> str:
        return os.path.join(NETNS_DIR, self.netns)


@dataclass
class LinuxNodes:
    """The node namespaces and underlay of one cluster; names unique per instance."""

    cluster_id: str = field(default_factory=lambda: secrets.token_hex(3))
    timeout_s: float = 10.0
    nodes: dict[str, LinuxNode] = field(default_factory=dict)
    _created: list[str] = field(default_factory=list)  # namespaces, in creation order

    @property
    def prefix(self) -> str:
        return f"ksim-{self.cluster_id}-"

    @property
    def underlay_netns(self) -> str:
        return f"{self.prefix}underlay"

    def netns_path(self, node: str) -> str:
        return self.nodes[node].netns_path

    # -- commands ---------------------------------------------------------------------

    def _run(self, argv: Sequence[str], stdin: str | None = None) -> str:
        return run_command(argv, timeout_s=self.timeout_s, stdin=stdin)

    def _ip_batch(self, netns: str, lines: Sequence[str]) -> None:
        self._run(["ip", "-n", netns, "-batch", "-"], stdin="\n".join(lines) + "\n")

    def _sysctl(self, netns: str, *settings: str) -> None:
        self._run(["nsenter", f"--net={os.path.join(NETNS_DIR, netns)}",
                   "sysctl", "-q", "-w", *settings])

    def _add_netns(self, name: str) -> None:
        if not self._created:
            # A safety net for a process that exits without stopping its cluster.
            atexit.register(self.teardown)
        self._run(["ip", "netns", "add", name])
        self._created.append(name)

    # -- building -----------------------------------------------------------------------

    def _ensure_underlay(self) -> None:
        if self.underlay_netns in self._created:
            return
        self._add_netns(self.underlay_netns)
        self._ip_batch(self.underlay_netns, [
            "link set lo up",
            f"link add {UNDERLAY_BRIDGE} type bridge",
            f"link set {UNDERLAY_BRIDGE} up",
        ])

    def add_node(self, name: str, internal_ip: str) -> LinuxNode:
        """Create the node's namespace and wire its eth0 onto the underlay segment."""
        if name in self.nodes:
            return self.nodes[name]
        self._ensure_underlay()
        node = LinuxNode(name=name, netns=f"{self.prefix}{name}", internal_ip=internal_ip,
                         uplink_peer=f"ul-{len(self.nodes) + 1}"[:MAX_IFNAME])
        self._add_netns(node.netns)
        self.nodes[name] = node
        self._ip_batch(self.underlay_netns, [
            f"link add {node.uplink_peer} type veth peer name {NODE_UPLINK} netns {node.netns}",
            f"link set {node.uplink_peer} master {UNDERLAY_BRIDGE}",
            f"link set {node.uplink_peer} up",
        ])
        self._ip_batch(node.netns, [
            "link set lo up",
            f"addr add {internal_ip}/{UNDERLAY_PREFIX_LEN} dev {NODE_UPLINK}",
            f"link set {NODE_UPLINK} up",
        ])
        # A host-gw node forwards its pods' traffic to the other nodes.
        self._sysctl(node.netns, "net.ipv4.ip_forward=1")
        return node

    def sync_routes(self, api: APIServer | KubeClient) -> list[str]:
        """Program host-gw routes from the cluster's Nodes into every node namespace.

        ``ip route replace`` makes this idempotent: called after each node is added,
        the earlier nodes learn the new node's podCIDR too. Returns the routes set,
        as ``<node>: <cidr> via <gateway>``.
        """
        network = ClusterNetwork(api)
        programmed: list[str] = []
        for node in self.nodes.values():
            vias = [r for r in network.route_table(node.name) if r.via]
            if not vias:
                continue
            self._ip_batch(node.netns, [f"route replace {r.destination} via {r.via} "
                                        f"dev {NODE_UPLINK}" for r in vias])
            programmed += [f"{node.name}: {r}" for r in vias]
        return programmed

    def add_route(self, node: str, destination: str, via: str) -> None:
        """One host-gw route in ``node``'s namespace, without an API server."""
        self._ip_batch(self.nodes[node].netns,
                       [f"route replace {destination} via {via} dev {NODE_UPLINK}"])

    # -- reading ------------------------------------------------------------------------

    def route_get(self, node: str, ip: str) -> str:
        """``ip route get <ip>`` as the node's kernel answers it (first line)."""
        out = self._run(["ip", "-n", self.nodes[node].netns, "route", "get", ip])
        return out.strip().splitlines()[0].strip() if out.strip() else ""

    def routes(self, node: str) -> list[str]:
        out = self._run(["ip", "-n", self.nodes[node].netns, "-4", "route", "show"])
        return [line.strip() for line in out.splitlines() if line.strip()]

    # -- teardown -----------------------------------------------------------------------

    def teardown(self, sandbox_netns: Iterable[str] = ()) -> list[str]:
        """Delete the sandboxes' namespaces, then the nodes', then the underlay.

        Deleting a namespace destroys every interface in it and the veth peers of
        those interfaces, so pod veths, ``cni0`` and the uplinks go with them.
        Best effort for each step; returns what could not be deleted.
        """
        failed: list[str] = []
        doomed = [os.path.basename(p) for p in sandbox_netns if p]
        doomed += list(reversed(self._created))
        with contextlib.suppress(LinuxNodesError):
            doomed += [n for n in netns_names(self.timeout_s)
                       if n.startswith(self.prefix) and n not in doomed]
        for name in doomed:
            if not os.path.lexists(os.path.join(NETNS_DIR, name)):
                continue
            try:
                self._run(["ip", "netns", "delete", name])
            except LinuxNodesError as exc:
                failed.append(f"{name}: {exc}")
        self._created.clear()
        self.nodes.clear()
        atexit.unregister(self.teardown)
        return failed
