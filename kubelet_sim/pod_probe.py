"""Pod to pod over the Linux dataplane (root): a real TCP exchange between two pods'
network namespaces (:mod:`kubelet_sim.network.tcp_probe`), and what the source node's
kernel says about the route; both ends are namespaces the cluster created.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubelet_sim.api.model import Resource, pod_ips
from kubelet_sim.network.tcp_probe import PROBE_PORT, ProbeError, TcpExchange, tcp_exchange
from kubelet_sim.runtime.containerd import SANDBOX_READY, ContainerRuntime

if TYPE_CHECKING:
    from kubelet_sim.cluster import Cluster

__all__ = ["PROBE_PORT", "CrossNodeProbe", "ProbeError", "TcpExchange", "probe_pod_to_pod",
           "sandbox_netns", "tcp_exchange"]


def sandbox_netns(runtime: ContainerRuntime, pod: Resource) -> str:
    """The network namespace path of ``pod``'s ready sandbox on this runtime."""
    for sandbox in runtime.list_pod_sandboxes():
        if (sandbox.state == SANDBOX_READY and sandbox.name == pod.name
                and sandbox.namespace == pod.namespace):
            return sandbox.netns
    raise ProbeError(f"no ready sandbox for pod {pod.namespace}/{pod.name}")


@dataclass
class CrossNodeProbe:
    """Scenario 2 on the Linux dataplane: checks ``(what, ok, observed)`` and notes."""

    checks: list[tuple[str, bool, str]]
    notes: list[str]


def probe_pod_to_pod(cluster: Cluster, src: Resource, dst: Resource,
                     port: int = PROBE_PORT) -> CrossNodeProbe:
    """Send a real TCP connection from ``src``'s netns to ``dst``; ask the source node's
    kernel how it routes ``dst``'s IP."""
    nodes = cluster.linux_nodes
    assert nodes is not None, "the Linux dataplane only"
    src_node, dst_node = str(src.spec.get("nodeName")), str(dst.spec.get("nodeName"))
    if not pod_ips(src) or not pod_ips(dst):
        missing = ", ".join(p.name for p in (src, dst) if not pod_ips(p))
        return CrossNodeProbe([("a real TCP connection between the pods", False,
                                f"no pod IP yet: {missing}")], [])
    src_ip, dst_ip = pod_ips(src)[0], pod_ips(dst)[0]
    checks: list[tuple[str, bool, str]] = []
    route = nodes.route_get(src_node, dst_ip)
    notes = [f"{src_node}'s kernel routes: " + "; ".join(nodes.routes(src_node)),
             f"{src_node}: ip route get {dst_ip} → {route}"]
    dst_gateway = nodes.nodes[dst_node].internal_ip
    checks.append((f"{src_node}'s kernel routes {dst_ip} via {dst_gateway}",
                   f" via {dst_gateway} " in f" {route} ", route))
    what = f"a real TCP connection {src.name} ({src_ip}) → {dst.name} {dst_ip}:{port}"
    try:
        exchange = tcp_exchange(
            sandbox_netns(cluster.kubelets[dst_node].runtime, dst), dst_ip,
            sandbox_netns(cluster.kubelets[src_node].runtime, src),
            port=port, server_name=dst.name)
    except ProbeError as err:
        checks.append((what, False, str(err)))
        return CrossNodeProbe(checks, notes)
    checks.append((what, bool(exchange.received) and exchange.server_saw == src_ip,
                   f"{len(exchange.received)} bytes: {exchange.text!r}"))
    return CrossNodeProbe(checks, notes)
