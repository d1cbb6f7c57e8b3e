"""``python -m bench api-abuse``: the API server of `up` under clients that misbehave.

Prints, for a real ``kubelet-sim up`` process:

* its RSS before and after ``--writes`` updates of one Lease while three watch streams on
  Leases never read (the bound on a watcher's unsent events closes them; without it the
  events queued for ever), and the same writes with nobody watching, as the floor;
* the time a new client's request takes (a fresh TLS connection) while ``--idle``
  connections sit open doing nothing, against the same request with none open.
"""

from __future__ import annotations

import argparse
import base64
import http.client
import json
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class Server:
    def __init__(self, proc: subprocess.Popen[str], kubeconfig: Path) -> None:
        self.proc = proc
        config = yaml.safe_load(kubeconfig.read_text())
        cluster = config["clusters"][0]["cluster"]
        self.port = int(cluster["server"].rsplit(":", 1)[1])
        self.token = config["users"][0]["user"]["token"]
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        self.tls = ssl.create_default_context(cadata=ca)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def connection(self) -> http.client.HTTPSConnection:
        return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.tls, timeout=30)

    def request(self, conn: http.client.HTTPSConnection, method: str, path: str,
                body: object = None, content_type: str = "application/json") -> int:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": content_type}
        conn.request(method, path, body=json.dumps(body) if body is not None else None,
                     headers=headers)
        answer = conn.getresponse()
        answer.read()
        return answer.status

    def stalled_watch(self, path: str) -> ssl.SSLSocket:
        raw = socket.create_connection(("127.0.0.1", self.port))
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn = self.tls.wrap_socket(raw, server_hostname="127.0.0.1")
        conn.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
                     f"{self.token}\r\n\r\n".encode())
        return conn


@contextmanager
def running_up() -> Iterator[Server]:
    state = Path(tempfile.mkdtemp(prefix="ksim-bench-", dir="/tmp"))
    proc = subprocess.Popen([sys.executable, "-m", "kubelet_sim", "up", "--state-dir",
                             str(state)], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = ""
        while not line.startswith("export KUBECONFIG="):
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError("up ended before printing the kubeconfig")
        yield Server(proc, Path(line.strip().split("=", 1)[1]))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
        subprocess.run(["rm", "-rf", str(state)], check=False)


LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"


def write_lease(server: Server, writes: int) -> float:
    """``writes`` merge patches of one Lease over one kept-alive connection; seconds."""
    conn = server.connection()
    server.request(conn, "POST", LEASES, {"apiVersion": "coordination.k8s.io/v1",
                                          "kind": "Lease", "metadata": {"name": "bench"},
                                          "spec": {"holderIdentity": "0"}})
    start = time.perf_counter()
    for i in range(writes):
        status = server.request(conn, "PATCH", f"{LEASES}/bench",
                                {"spec": {"holderIdentity": f"holder-{i}-" + "x" * 2000}},
                                "application/merge-patch+json")
        if status != 200:
            raise RuntimeError(f"write {i}: HTTP {status}")
    return time.perf_counter() - start


def stalled_watchers(writes: int, watchers: int) -> tuple[float, float, float]:
    with running_up() as server:
        time.sleep(2)  # the controllers' start-up writes settle
        before = server.rss_mib()
        held = [server.stalled_watch(f"{LEASES}?watch=1") for _ in range(watchers)]
        seconds = write_lease(server, writes)
        after = server.rss_mib()
        for conn in held:
            conn.close()
        return before, after, seconds


def new_client_ms(server: Server, rounds: int = 5) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        conn = server.connection()
        server.request(conn, "GET", "/api/v1/namespaces")
        conn.close()
        out.append((time.perf_counter() - start) * 1000)
    return out


def idle_connections(idle: int) -> tuple[list[float], list[float]]:
    with running_up() as server:
        quiet = new_client_ms(server)
        held = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(idle)]
        try:
            busy = new_client_ms(server)
        finally:
            for conn in held:
                conn.close()
        return quiet, busy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench api-abuse")
    parser.add_argument("--writes", type=int, default=10_000)
    parser.add_argument("--watchers", type=int, default=3)
    parser.add_argument("--idle", type=int, default=1000)
    args = parser.parse_args(argv)
    floor = stalled_watchers(args.writes, 0)
    stalled = stalled_watchers(args.writes, args.watchers)
    quiet, busy = idle_connections(args.idle)
    print(f"{'case':<48} {'RSS before':>11} {'RSS after':>10} {'growth':>8} {'writes/s':>9}")
    for name, (before, after, seconds) in (("no watcher (floor)", floor),
                                           (f"{args.watchers} watchers that never read",
                                            stalled)):
        print(f"{name:<48} {before:>9.1f}Mi {after:>8.1f}Mi {after - before:>6.1f}Mi "
              f"{args.writes / seconds:>9.0f}")
    print(f"\n{'new client (fresh TLS connection + LIST)':<48} {'median':>8} {'max':>8}")
    print(f"{'no idle connections':<48} {statistics.median(quiet):>6.1f}ms "
          f"{max(quiet):>6.1f}ms")
    print(f"{f'{args.idle} idle connections open':<48} {statistics.median(busy):>6.1f}ms "
          f"{max(busy):>6.1f}ms  ({max(busy) / max(quiet):.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
