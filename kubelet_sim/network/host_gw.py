"""The cluster network: per-node pod CIDRs, host-gw routes between nodes, reachability.

Model (flannel's ``host-gw`` backend, the simplest Kubernetes pod network):

* every node owns ``spec.podCIDR`` (its pods' addresses, on the node's bridge) and has
  an ``InternalIP`` on a shared L2 segment;
* every node's route table holds its own pod CIDR as a directly connected route and,
  for every other node, "that node's pod CIDR via that node's InternalIP";
* a packet to another node's InternalIP goes straight onto the node segment.

:meth:`ClusterNetwork.route` answers with the next hop; :meth:`ClusterNetwork.reach`
combines routing with the NetworkPolicy verdict. Everything is computed from the Node
and Pod objects of the shared informer cache over the API at the time of the call.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, node_internal_ip, node_pod_cidrs, pod_ips
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.network.netpol import (
    POD_IPS,
    NetworkPolicyEngine,
    Verdict,
    network_cache,
    pod_holding_ip,
)

LOCAL, VIA, NODE, UNREACHABLE = "local", "via", "node", "unreachable"

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Route:
    """One entry of a node's table: ``destination`` is a CIDR; ``via`` is the gateway
    (None for a directly connected pod CIDR); ``node`` owns the destination."""

    destination: str
    via: str | None
    node: str

    def __str__(self) -> str:
        return f"{self.destination} via {self.via}" if self.via else f"{self.destination} local"


@dataclass(frozen=True)
class RouteDecision:
    """Where a packet from ``src_node`` to ``dst_ip`` goes.

    ``kind`` is ``local`` (the destination is on src_node's own pod CIDR), ``via`` (sent to
    ``next_hop``, the InternalIP of ``dst_node``), ``node`` (the destination is a node's
    own address on the shared segment) or ``unreachable``."""

    kind: str
    dst_ip: str
    src_node: str
    next_hop: str | None = None
    dst_node: str | None = None
    route: Route | None = None
    reason: str = ""

    @property
    def reachable(self) -> bool:
        return self.kind != UNREACHABLE


@dataclass(frozen=True)
class Reachability:
    """Routing and policy together: ``reachable`` is both."""

    reachable: bool
    route: RouteDecision
    verdict: Verdict | None
    reasons: tuple[str, ...] = field(default=())

    @property
    def allowed(self) -> bool:
        """Same as :attr:`reachable`, so a Reachability reads like a policy Verdict."""
        return self.reachable

    def __bool__(self) -> bool:
        return self.reachable


class ClusterNetwork:
    """Routing over the cluster's Nodes; policy through :class:`NetworkPolicyEngine`."""

    def __init__(self, api: APIServer | KubeClient,
                 policy: NetworkPolicyEngine | None = None) -> None:
        self.cache = network_cache(api)
        self.policy = policy or NetworkPolicyEngine(api)

    def route_table(self, node_name: str) -> list[Route]:
        """``node_name``'s routes: its own pod CIDRs (local), then every other node's pod
        CIDRs via that node's InternalIP, sorted by node name. Nodes without an
        InternalIP get no route (flannel cannot program one)."""
        if self.cache.get("Node", node_name) is None:
            raise NotFound("Node", node_name)
        table: list[Route] = []
        for node in self._nodes():
            if node.name == node_name:
                table[:0] = [Route(c, None, node.name) for c in node_pod_cidrs(node)]
                continue
            gateway = node_internal_ip(node)
            if gateway:
                table.extend(Route(c, gateway, node.name) for c in node_pod_cidrs(node))
        return table

    def route(self, src_node: str, dst_ip: str) -> RouteDecision:
        """Longest-prefix match of ``dst_ip`` in ``src_node``'s table."""
        addr = ipaddress.ip_address(dst_ip)
        dst = str(addr)
        for node in self._nodes():
            if node_internal_ip(node) == dst:
                return RouteDecision(NODE, dst, src_node, dst, node.name,
                                     reason=f"{dst} is node {node.name}'s InternalIP")
        best: tuple[IPNetwork, Route] | None = None
        for entry in self.route_table(src_node):
            net = ipaddress.ip_network(entry.destination, strict=False)
            if net.version == addr.version and addr in net and (
                best is None or net.prefixlen > best[0].prefixlen
            ):
                best = (net, entry)
        if best is None:
            return RouteDecision(UNREACHABLE, dst, src_node,
                                 reason=f"no route to {dst} on {src_node}")
        entry = best[1]
        if entry.via is None:
            return RouteDecision(LOCAL, dst, src_node, None, src_node, entry,
                                 reason=f"{dst} is on {src_node}'s pod CIDR {entry.destination}")
        return RouteDecision(VIA, dst, src_node, entry.via, entry.node, entry,
                             reason=f"{entry.destination} via {entry.via} ({entry.node})")

    def node_of_ip(self, ip: str) -> str | None:
        """The node whose InternalIP is ``ip`` or whose pod CIDR contains it."""
        addr = ipaddress.ip_address(ip)
        for node in self._nodes():
            if node_internal_ip(node) == str(addr):
                return node.name
        for node in self._nodes():
            for cidr in node_pod_cidrs(node):
                net = ipaddress.ip_network(cidr, strict=False)
                if net.version == addr.version and addr in net:
                    return node.name
        return None

    def reach(
        self, src: Resource | str, dst: Resource | str, port: int, protocol: str = "TCP"
    ) -> Reachability:
        """Can ``src`` (a pod, or a pod/node IP) open ``port``/``protocol`` to ``dst``?
        Needs a route from the source's node, a pod or node actually holding the
        destination IP, and the NetworkPolicy verdict."""
        src_ip, src_node = self._locate(src)
        dst_ip, _ = self._locate(dst)
        if not src_ip or not dst_ip:
            missing = "source" if not src_ip else "destination"
            decision = RouteDecision(UNREACHABLE, dst_ip, src_node or "",
                                     reason=f"the {missing} pod has no IP yet")
            return Reachability(False, decision, None, (decision.reason,))
        if src_node is None:
            decision = RouteDecision(UNREACHABLE, dst_ip, "",
                                     reason=f"{src_ip} is not on any node of the cluster")
            return Reachability(False, decision, None, (decision.reason,))
        decision = self.route(src_node, dst_ip)
        reasons = [f"route: {decision.reason}"]
        if decision.kind in (LOCAL, VIA) and not self._pod_holds(dst_ip):
            reasons.append(f"no pod holds {dst_ip}")
            return Reachability(False, decision, None, tuple(reasons))
        if not decision.reachable:
            return Reachability(False, decision, None, tuple(reasons))
        verdict = self.policy.may_connect(
            src if isinstance(src, Resource) else src_ip,
            dst if isinstance(dst, Resource) else dst_ip,
            port, protocol,
        )
        reasons.extend(f"policy: {r}" for r in verdict.reasons)
        return Reachability(verdict.allowed, decision, verdict, tuple(reasons))

    # ------------------------------------------------------------------ internals
    def _nodes(self) -> list[Resource]:
        return self.cache.list("Node")

    def _locate(self, who: Resource | str) -> tuple[str, str | None]:
        """(IP, node name) of a pod or an IP."""
        if isinstance(who, Resource):
            ips = pod_ips(who)
            node = str(who.spec.get("nodeName") or "") or None
            return (ips[0] if ips else ""), node
        ip = str(ipaddress.ip_address(who))
        pod = pod_holding_ip(self.cache, ip)
        if pod is not None and pod.spec.get("nodeName"):
            return ip, str(pod.spec["nodeName"])
        return ip, self.node_of_ip(ip)

    def _pod_holds(self, ip: str) -> bool:
        return bool(self.cache.by_index("Pod", POD_IPS, ip))


def node_route_table(api: APIServer | KubeClient, node_name: str) -> list[str]:
    """``ip route``-style lines for ``node_name`` (for traces and the demo)."""
    try:
        return [str(r) for r in ClusterNetwork(api).route_table(node_name)]
    except NotFound:
        return []
