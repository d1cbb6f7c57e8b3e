"""``python -m bench cluster --processes``: how many simulated nodes one process holds, and
what they cost the API server, with every component its own process over HTTPS.

It starts ``kubelet-sim apiserver`` on a fresh state dir, then ``controller-manager``,
``scheduler`` and one ``kubelet --nodes N`` process (our CNI plugins on the emulated
dataplane, our CSI node plugin per node), all with the kubeconfig the API server wrote,
and measures through the API:

- **nodes**: seconds until all N Nodes are Ready; the kubelet process's resident memory
  and CPU per node while idle; the oldest node Lease renewal against its
  ``leaseDurationSeconds`` (the heartbeat figure: a ratio > 1 means every node renewed
  within its lease);
- **API server**: requests per second while the nodes idle (heartbeats, status) and per
  node, from its ``apiserver_request_total`` counter, and its own memory;
- **pods**: P pods created at once (no volume), each placed by the scheduler and set
  Running with an IP by its node's kubelet: pods/s, and the request rate meanwhile.

Ratios compare with issue 25's figures: every lease renewed within its duration, and
issue 13's 25 pods/s for a cluster (there measured in one process).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import aiohttp

from kubelet_sim.api import builders
from kubelet_sim.api.model import parse_time
from kubelet_sim.client.http import HttpKubeClient

PROJECT_ROOT = Path(__file__).resolve().parent.parent
TARGET_PODS_PER_S = 25.0
CREATE_CONCURRENCY = 32
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Child:
    """One component process, its output in a log file."""

    name: str
    proc: subprocess.Popen[bytes]
    log: Path

    def rss_mib(self) -> float:
        """Resident memory of the process and its children (the node plugins of a kubelet)."""
        return sum(_rss_kib(pid) for pid in _tree(self.proc.pid)) / 1024

    def own_rss_mib(self) -> float:
        return _rss_kib(self.proc.pid) / 1024

    def cpu_seconds(self) -> float:
        """User + system CPU of the process and of the children it waited for (the CNI
        plugin execs of a kubelet), not of its long-running plugins."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLK_TCK


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


@dataclass
class Processes:
    """The API server and the components, started in order and stopped in reverse."""

    root: Path
    children: list[Child] = field(default_factory=list)

    def start(self, name: str, *args: str) -> Child:
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "kubelet_sim", *args],
                                    cwd=PROJECT_ROOT, stdout=out, stderr=subprocess.STDOUT)
        child = Child(name, proc, log)
        self.children.append(child)
        return child

    def stop(self) -> None:
        for child in reversed(self.children):
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        for child in reversed(self.children):
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait()


async def wait_for(what: str, check: Callable[[], Awaitable[bool]], timeout: float,
                   every: float = 1.0) -> float:
    """Poll the coroutine function ``check`` until it answers True; the seconds it took."""
    start = time.monotonic()
    while True:
        if await check():
            return time.monotonic() - start
        if time.monotonic() - start > timeout:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        await asyncio.sleep(every)


async def wait_kubeconfig(path: Path, apiserver: Child, timeout: float = 60) -> None:
    start = time.monotonic()
    while not path.exists():
        if apiserver.proc.poll() is not None:
            raise RuntimeError(f"apiserver ended: {apiserver.log.read_text()[-2000:]}")
        if time.monotonic() - start > timeout:
            raise TimeoutError("apiserver wrote no kubeconfig")
        await asyncio.sleep(0.2)


class Metrics:
    """``apiserver_request_total`` summed over its labels, read from the API server's
    ``/metrics`` (its ``--metrics-address``)."""

    def __init__(self, address: str) -> None:
        self.url = f"http://{address}/metrics"

    async def requests(self) -> float:
        async with aiohttp.ClientSession() as session, session.get(self.url) as resp:
            text = await resp.text()
        return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith("apiserver_request_total{"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ready(node: object) -> bool:
    conditions = getattr(node, "status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


@dataclass
class Figures:
    nodes: int
    pods: int
    nodes_ready_s: float = 0.0
    kubelet_rss_mib: float = 0.0  # the kubelet process alone
    plugins_rss_mib: float = 0.0  # its node plugin processes
    kubelet_cpu_idle: float = 0.0  # CPU seconds per wall second, all nodes
    idle_rps: float = 0.0
    oldest_renewal_s: float = 0.0
    lease_seconds: float = 40.0
    pods_s: float = 0.0
    pods_rps: float = 0.0
    pod_cpu_ms: dict[str, float] = field(default_factory=dict)  # CPU ms per pod, by process
    apiserver_rss_mib: float = 0.0
    others_rss_mib: float = 0.0


async def run(nodes: int, pods: int, idle_seconds: float, keep: bool) -> Figures:
    root = Path(tempfile.mkdtemp(prefix="bench-procs-", dir="/tmp"))
    procs = Processes(root)
    figures = Figures(nodes, pods)
    client: HttpKubeClient | None = None
    try:
        state = root / "apiserver"
        metrics_address = f"127.0.0.1:{free_port()}"
        apiserver = procs.start("apiserver", "apiserver", "--state-dir", str(state),
                                "--metrics-address", metrics_address)
        kubeconfig = state / "kubeconfig"
        await wait_kubeconfig(kubeconfig, apiserver)
        metrics = Metrics(metrics_address)
        kc = ("--kubeconfig", str(kubeconfig))
        others = [procs.start("controller-manager", "controller-manager", *kc),
                  procs.start("scheduler", "scheduler", *kc)]
        kubelet = procs.start("kubelet", "kubelet", *kc, "--nodes", str(nodes),
                              "--name-prefix", "sim-", "--state-dir", str(root / "nodes"),
                              "--pod-cidr", "10.244.0.0/16")
        client = HttpKubeClient.from_kubeconfig(kubeconfig, qps=0)

        async def all_ready() -> bool:
            for child in procs.children:
                if child.proc.poll() is not None:
                    raise RuntimeError(f"{child.name} ended: {child.log.read_text()[-3000:]}")
            listed = await client.list("Node")
            return sum(ready(n) for n in listed.items) == nodes

        figures.nodes_ready_s = await wait_for("nodes Ready", all_ready, 120 + nodes * 3.0)

        # idle: heartbeats and status only
        await asyncio.sleep(min(5.0, idle_seconds))
        before, cpu_before, t0 = await metrics.requests(), kubelet.cpu_seconds(), time.monotonic()
        await asyncio.sleep(idle_seconds)
        elapsed = time.monotonic() - t0
        figures.idle_rps = (await metrics.requests() - before) / elapsed
        figures.kubelet_cpu_idle = (kubelet.cpu_seconds() - cpu_before) / elapsed
        figures.kubelet_rss_mib = kubelet.own_rss_mib()
        figures.plugins_rss_mib = kubelet.rss_mib() - figures.kubelet_rss_mib
        leases = await client.list("Lease", "kube-node-lease")
        now = datetime.now(UTC)
        ages, durations = [], []
        for lease in leases.items:
            renewed = lease.spec.get("renewTime")
            if renewed:
                ages.append((now - parse_time(str(renewed))).total_seconds())
                durations.append(float(lease.spec.get("leaseDurationSeconds") or 40))
        figures.oldest_renewal_s = max(ages, default=float("inf"))
        figures.lease_seconds = min(durations, default=40.0)

        # pods
        await client.create(builders.namespace("bench"))
        gate = asyncio.Semaphore(CREATE_CONCURRENCY)

        async def create(i: int) -> None:
            async with gate:
                await client.create(builders.pod(f"p{i}", "bench"))

        before, start = await metrics.requests(), time.monotonic()
        cpu_at = {c.name: c.cpu_seconds() for c in procs.children}
        await asyncio.gather(*(create(i) for i in range(pods)))

        async def all_running() -> bool:
            listed = await client.list("Pod", "bench")
            return sum(p.status.get("phase") == "Running" and bool(p.status.get("podIP"))
                       for p in listed.items) == pods

        await wait_for("pods Running", all_running, 120 + pods * 1.0, every=2.0)
        elapsed = time.monotonic() - start
        figures.pods_s = pods / elapsed
        figures.pods_rps = (await metrics.requests() - before) / elapsed
        figures.pod_cpu_ms = {c.name: 1000 * (c.cpu_seconds() - cpu_at[c.name]) / pods
                              for c in procs.children}
        figures.apiserver_rss_mib = apiserver.own_rss_mib()
        figures.others_rss_mib = sum(c.own_rss_mib() for c in others)
        return figures
    finally:
        if client is not None:
            await client.close()
        procs.stop()
        if keep:
            print(f"(logs kept in {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)


def print_table(f: Figures) -> None:
    per_node = f.kubelet_rss_mib / f.nodes
    rows = [
        ("nodes Ready after", f"{f.nodes_ready_s:.1f} s", "-"),
        ("kubelet process RSS per node", f"{per_node:.2f} MiB", "-"),
        ("node plugin RSS per node", f"{f.plugins_rss_mib / f.nodes:.1f} MiB", "-"),
        ("kubelet CPU per node, idle", f"{100 * f.kubelet_cpu_idle / f.nodes:.2f} % of a core",
         "-"),
        ("oldest lease renewal", f"{f.oldest_renewal_s:.1f} s of {f.lease_seconds:.0f} s",
         f"{f.lease_seconds / f.oldest_renewal_s:.2f}" if f.oldest_renewal_s else "-"),
        ("API requests/s, idle", f"{f.idle_rps:.1f} ({f.idle_rps / f.nodes:.3f} per node)",
         "-"),
        (f"pods placed and Running ({f.pods})", f"{f.pods_s:.1f} pods/s",
         f"{f.pods_s / TARGET_PODS_PER_S:.2f}"),
        ("API requests/s, pods starting", f"{f.pods_rps:.1f}", "-"),
        *((f"CPU per pod started: {name}", f"{ms:.1f} ms", "-")
          for name, ms in f.pod_cpu_ms.items()),
        ("apiserver RSS", f"{f.apiserver_rss_mib:.0f} MiB", "-"),
        ("controller-manager + scheduler RSS", f"{f.others_rss_mib:.0f} MiB", "-"),
    ]
    print(f"{'figure':<40} {'value':<32} ratio")
    for name, value, ratio in rows:
        print(f"{name:<40} {value:<32} {ratio}")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="bench cluster --processes",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--processes", action="store_true", help="(how `bench cluster` gets here)")
    p.add_argument("--nodes", type=int, default=100, help="simulated nodes in one kubelet process")
    p.add_argument("--pods", type=int, default=1000, help="pods to place and run")
    p.add_argument("--idle-seconds", type=float, default=30.0,
                   help="how long the idle nodes are watched")
    p.add_argument("--keep", action="store_true", help="keep the processes' logs")
    a = p.parse_args(argv)
    figures = asyncio.run(run(a.nodes, a.pods, a.idle_seconds, a.keep))
    print_table(figures)
    return 0
