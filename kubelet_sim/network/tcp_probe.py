"""A real TCP exchange between two network namespaces (Linux dataplane, root).

The server is a one-shot listener started inside the destination's netns
(``nsenter --net=<netns> <this python> -c ...``), bound to the given IP: it
accepts one connection, answers one line naming the peer address it saw, and
exits. The client connects from the source netns the same way and prints
the bytes it received. Every step is bounded by a timeout. The cluster's pod probe
and the CNI conformance suite's reachability case both use it.
"""

from __future__ import annotations

import selectors
import subprocess
import sys
import time
from dataclasses import dataclass

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
