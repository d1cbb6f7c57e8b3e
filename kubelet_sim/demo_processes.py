"""``demo --processes``: each scenario against a cluster started as ``kubelet-sim up
--processes`` (the API server and every component its own process), seen as a user of
that cluster sees it: the API over HTTPS from the printed kubeconfig (waiting on
conditions, since there is no in-process ``settle``), the nodes' directories under the
state dir, the network engines over an informer cache of the API, and the call trace
the kubelets and the sidecars append to ``STATE/traces/*.jsonl``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from kubelet_sim.api.model import Resource
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.writes import get_or_none
from kubelet_sim.cluster import DRIVER_NAME
from kubelet_sim.demo_view import Condition, ScenarioCluster, UpDidNotStart
from kubelet_sim.kubelet.paths import KubeletPaths
from kubelet_sim.network.host_gw import ClusterNetwork
from kubelet_sim.plugin_processes import PROJECT_ROOT, die_with_parent
from kubelet_sim.pod_probe import CrossNodeProbe
from kubelet_sim.runtime.libcni.cache import CachedAttachment, list_attachments
from kubelet_sim.utils.trace import Trace, TraceEvent, read_trace_files

UP_SECONDS = 90.0  # `up --processes` printing its kubeconfig
READY_SECONDS = 60.0  # its nodes Ready, the driver on them, the default ServiceAccount
SETTLE_SECONDS = 60.0  # what a scenario's actions lead to
DOWN_SECONDS = 60.0  # `up`'s own teardown after SIGTERM
POLL = 0.1
NETWORK_KINDS = ("Node", "Pod", "Namespace", "NetworkPolicy")


class ProcessesView:
    """:class:`~kubelet_sim.demo_view.ScenarioCluster` of an ``up --processes``
    cluster whose state dir is ``state_dir``."""

    def __init__(self, client: KubeClient, state_dir: Path, trace: Trace) -> None:
        self.client = client
        self.driver_name = DRIVER_NAME
        self.work_dir = state_dir / "cluster"
        self.traces = state_dir / "traces"
        self.trace = trace  # what the demo prints: the trace files' events, by phase
        self.start_up = trace.phase
        self.origin = time.monotonic()  # the demo trace's ts are seconds since this
        self.begun: float | None = None
        self._network: ClusterNetwork | None = None

    async def settle(self, what: str, until: Condition,
                     timeout: float = SETTLE_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not await until(self.client):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"waited {timeout:g}s for: {what}")
            await asyncio.sleep(POLL)

    def begin(self, phase: str) -> None:
        self.begun = time.monotonic()
        self.trace.begin(phase)

    def calls(self) -> list[TraceEvent]:
        """The trace files' events in order, numbered per phase: ``start-up`` before
        :meth:`begin`, the scenario's phase from then on (one machine clock)."""
        numbered: dict[str, int] = {}
        events = []
        for event in read_trace_files(sorted(self.traces.glob("*.jsonl"))):
            phase = (self.trace.phase if self.begun is not None and event.ts >= self.begun
                     else self.start_up)
            numbered[phase] = numbered.get(phase, 0) + 1
            events.append(replace(event, phase=phase, seq=numbered[phase],
                                  ts=round(event.ts - self.origin, 6)))
        self.trace.events = events
        return events

    def keep_trace(self) -> None:
        """The events into the demo's ``--trace-file`` (when it has one)."""
        events = self.calls()
        if self.trace.sink is not None:
            for event in events:
                self.trace.sink.write(event.to_json() + "\n")
            self.trace.sink.flush()

    def kubelet_paths(self, node: str) -> KubeletPaths:
        return KubeletPaths(self.work_dir / node / "kubelet")

    def attachments(self, node: str) -> list[CachedAttachment]:
        return list_attachments(str(self.work_dir / node / "cni-cache"))

    async def network(self) -> ClusterNetwork:
        if self._network is None:
            self._network = ClusterNetwork(self.client)
            for kind in NETWORK_KINDS:  # start their informers, then wait for the lists
                self._network.cache.list(kind)
            await self._feed().wait_synced()
        return self._network

    def _feed(self) -> ClientFeed:
        feed = feed_source(self.client)
        assert isinstance(feed, ClientFeed)  # an HTTP client's: informers over watches
        return feed

    async def probe(self, a: Resource, b: Resource) -> CrossNodeProbe | None:
        return None  # `up --processes` runs the emulated dataplane only

    async def not_running(self) -> list[str]:
        lines = []
        events = (await self.client.list("Event")).items
        for pod in (await self.client.list("Pod")).items:
            phase = pod.status.get("phase", "Pending")
            if phase == "Running":
                continue
            lines.append(f"  ! {pod.namespace}/{pod.name} {phase}:")
            reasons = [
                f"{e.body.get('reason')} ({(e.body.get('source') or {}).get('component', '')}):"
                f" {e.body.get('message', '')}"
                for e in events if e.body.get("type") == "Warning"
                and (e.body.get("involvedObject") or {}).get("uid") == pod.metadata.uid]
            lines += [f"      {r}" for r in reasons or ["(no component recorded a reason)"]]
        return lines

    async def wait_ready(self, nodes: int) -> None:
        """Every node Ready with our driver on its CSINode, and the default namespace's
        ServiceAccount made (pods are refused before it)."""
        async def ready(client: KubeClient) -> bool:
            listed = (await client.list("Node")).items
            if len(listed) < nodes or not all(_ready(n) for n in listed):
                return False
            for node in listed:
                csinode = await get_or_none(client, "CSINode", node.name)
                drivers = (csinode.spec.get("drivers") or []) if csinode else []
                if not any(d.get("name") == self.driver_name for d in drivers):
                    return False
            return await get_or_none(client, "ServiceAccount", "default", "default") is not None
        await self.settle(f"{nodes} node(s) Ready with {self.driver_name}", ready,
                          READY_SECONDS)

    async def close(self) -> None:
        if self._network is not None:
            await self._feed().stop()
        await self.client.close()


def _ready(node: Resource) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in node.status.get("conditions") or [])


def up_argv(nodes: int, state_dir: Path, up_flags: list[str]) -> list[str]:
    return [sys.executable, "-m", "kubelet_sim", "up", "--processes", "--nodes", str(nodes),
            "--state-dir", str(state_dir), *up_flags]


async def _wait_up(proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + UP_SECONDS
    while "export KUBECONFIG=" not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() >= deadline:
            said = (log.read_text(errors="replace").strip().splitlines() or ["no output"])
            raise UpDidNotStart(f"up --processes did not start ({proc.poll()}): {said[-1]}")
        await asyncio.sleep(POLL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, as a user stops `up`: it deletes what is left of the pods and stops its
    children, the API server last."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(DOWN_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@asynccontextmanager
async def processes_cluster(nodes: int, trace: Trace, up_flags: list[str] | None = None
                            ) -> AsyncIterator[ScenarioCluster]:
    """``kubelet-sim up --processes --nodes N`` on a fresh state dir, its nodes Ready;
    then stopped and the state dir removed."""
    state_dir = Path(tempfile.mkdtemp(prefix="ksim-demo-", dir="/tmp"))
    log = state_dir / "up.log"
    view: ProcessesView | None = None
    with log.open("wb") as out:
        proc = subprocess.Popen(
            up_argv(nodes, state_dir, up_flags or []), stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, cwd=str(PROJECT_ROOT),
            env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}, preexec_fn=die_with_parent)
    try:
        await _wait_up(proc, log)
        view = ProcessesView(HttpKubeClient.from_kubeconfig(state_dir / "kubeconfig", qps=0),
                             state_dir, trace)
        await view.wait_ready(nodes)
        yield view
    finally:
        if view is not None:
            view.keep_trace()
            await view.close()
        await asyncio.to_thread(_stop, proc)
        shutil.rmtree(state_dir, ignore_errors=True)
