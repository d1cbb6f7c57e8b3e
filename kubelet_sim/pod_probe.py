"""A real TCP exchange between two pods' network namespaces (Linux dataplane, root).

The server is a one-shot listener started inside the destination pod's netns
(``nsenter --net=<netns> <this python> -c ...``), bound to the pod's IP: it
accepts one connection, answers one line naming the peer address it saw, and
exits. The client connects from the source pod's netns the same way and prints
the bytes it received. Every step is bounded by a timeout, and both ends are
addresses inside namespaces the cluster created.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubelet_sim.api.model import Resource, pod_ips
from kubelet_sim.runtime.containerd import SANDBOX_READY, ContainerRuntime

if TYPE_CHECKING:
    from kubelet_sim.cluster import Cluster

PROBE_PORT = 8080
READY_LINE = "listening"

_SERVER = """
import socket, sys
ip, port, timeout, name = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind((ip, port))
srv.listen(1)
srv.settimeout(timeout)
print("listening", flush=True)
conn, peer = srv.accept()
conn.settimeout(timeout)
conn.sendall(f"hello from {name} {ip}:{port} to {peer[0]}\\n".encode())
conn.close()
srv.close()
"""

_CLIENT = """
import socket, sys
ip, port, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
conn = socket.create_connection((ip, port), timeout=timeout)
data = b""
while chunk := conn.recv(4096):
    data += chunk
conn.close()
sys.stdout.buffer.write(data)
"""


class ProbeError(RuntimeError):
    """The exchange did not happen (listener not up, connect failed, timeout)."""


@dataclass(frozen=True)
class TcpExchange:
    """One TCP exchange between two pods: the bytes the client received, and the peer
    address (``ip:port``) the server saw, which shows whether the source was NATed."""

    received: bytes
    server_saw: str

    @property
    def text(self) -> str:
        return self.received.decode(errors="replace").strip()


def _in_netns(netns: str, script: str, *args: str) -> list[str]:
    return ["nsenter", f"--net={netns}", sys.executable, "-c", script, *args]


def _wait_ready(server: subprocess.Popen[str], timeout_s: float) -> None:
    """Until the listener prints its ready line, exits, or the deadline passes."""
    assert server.stdout is not None
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as sel:
        sel.register(server.stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if not sel.select(left):
                break
            line = server.stdout.readline()
            if line.strip() == READY_LINE:
                return
            if not line:  # EOF: the listener died
                err = server.stderr.read() if server.stderr else ""
                raise ProbeError(f"listener exited: {err.strip() or server.poll()}")
    raise ProbeError(f"listener not ready within {timeout_s}s")


def tcp_exchange(server_netns: str, server_ip: str, client_netns: str, *,
                 port: int = PROBE_PORT, server_name: str = "server",
                 timeout_s: float = 5.0) -> TcpExchange:
    """One TCP connection from ``client_netns`` to ``server_ip:port`` in ``server_netns``."""
    server = subprocess.Popen(
        _in_netns(server_netns, _SERVER, server_ip, str(port), str(timeout_s), server_name),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        _wait_ready(server, timeout_s)
        try:
            client = subprocess.run(_in_netns(client_netns, _CLIENT, server_ip, str(port),
                                              str(timeout_s)),
                                    capture_output=True, timeout=timeout_s * 2, check=False)
        except subprocess.TimeoutExpired as exc:
            raise ProbeError(f"client got no answer within {timeout_s * 2}s") from exc
        if client.returncode != 0:
            lines = client.stderr.decode(errors="replace").strip().splitlines()
            raise ProbeError(lines[-1] if lines else f"client exited {client.returncode}")
        server.wait(timeout=timeout_s)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=timeout_s)
        for pipe in (server.stdout, server.stderr):
            if pipe is not None:
                pipe.close()
    text = client.stdout.decode(errors="replace").strip()
    return TcpExchange(received=client.stdout, server_saw=text.rsplit(" to ", 1)[-1])


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
