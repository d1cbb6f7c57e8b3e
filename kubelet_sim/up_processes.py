"""``kubelet-sim up --processes``: the cluster of ``up`` with every component as its own
process, each reaching the API server over HTTPS with the kubeconfig it wrote:

* ``kubelet-sim apiserver --state-dir DIR`` (the API objects, port, CA and token);
* our CSI driver's controller plugin, and one node plugin per node (as ``up`` starts
  them; the CSIDriver object is created as a driver's manifests would);
* ``kubelet-sim controller-manager``, ``kubelet-sim scheduler`` and ``kubelet-sim
  sidecars`` (with leader election, so a restarted one waits for its Lease);
* one ``kubelet-sim kubelet --node-name N`` per node (:func:`kubelet_argv`).

It prints ``export KUBECONFIG=`` once the cluster is settled as in-process ``up``'s is
(:mod:`kubelet_sim.up_processes_settle`: the nodes Ready, their CSINodes, the default
ServiceAccount).

Each child writes to ``DIR/logs/<name>.log``; the kubelets and the sidecars append their
CSI calls and CNI execs to ``DIR/traces/<name>.jsonl`` (``--trace-file``). A child that
ends is started again (after 1 s, doubling up to 30 s while it keeps failing within a
minute). Every child gets SIGTERM when ``up`` dies, however it dies (PR_SET_PDEATHSIG), so
none outlives it.
SIGINT/SIGTERM tear down as ``up`` does: the workloads and pods deleted and waited for
(the kubelets stop their sandboxes and volumes, the attach/detach controller detaches),
then the children stopped in reverse order, the API server last.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubelet_sim.api import builders
from kubelet_sim.api.errors import AlreadyExists, ApiError
from kubelet_sim.apiserver.admission_plugins import DEFAULT_PLUGINS
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.cluster import DRIVER_NAME, NodeSpec, default_nodes, fault_control
from kubelet_sim.component_process import RUNNING
from kubelet_sim.controllers.workloads import WORKLOAD_KINDS
from kubelet_sim.plugin_processes import PROJECT_ROOT, DriverProcess, die_with_parent
from kubelet_sim.up import TEARDOWN_SECONDS, UpOptions, UpRefused, private_dir
from kubelet_sim.up_processes_settle import SETTLE_SECONDS, wait_settled

APISERVER_START_SECONDS = 60.0
RESTART_FIRST, RESTART_CAP, RESTART_RESET = 1.0, 30.0, 60.0
STOP_SECONDS = 20.0
SUPERVISE_PERIOD = 0.2
UNTHROTTLED = ["--kube-api-qps", "200", "--kube-api-burst", "400"]


@dataclass
class Child:
    """One component process: how to start it, where it logs, when to restart it."""

    name: str
    argv: list[str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    restarts: int = 0
    delay: float = RESTART_FIRST
    due: float | None = None  # monotonic time of the next start after an exit
    offset: int = 0  # where this start's output begins in the log

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kubelet_sim", *self.argv], stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(PROJECT_ROOT),
                env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
                start_new_session=True,  # a Ctrl-C reaches `up`, which stops them in order
                preexec_fn=die_with_parent)
        self.started_at = time.monotonic()
        self.due = None

    def exited(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def stop(self, timeout: float = STOP_SECONDS) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class Driver:
    """A CSI plugin process, restarted like a child."""

    process: DriverProcess
    due: float | None = None


def kubelet_argv(kubeconfig: Path, spec: NodeSpec, root: Path, csi_endpoint: str,
                 options: UpOptions) -> list[str]:
    """The one place the ``kubelet`` command's flags are spelled."""
    cluster = options.cluster or {}
    argv = ["kubelet", "--kubeconfig", str(kubeconfig), "--node-name", spec.name,
            "--root-dir", str(root), "--pod-cidr", spec.pod_cidr, "--node-ip", spec.internal_ip,
            "--csi-node-endpoint", f"{spec.name}={csi_endpoint}",
            "--dataplane", options.dataplane]
    if cluster.get("cni_bin_dir"):
        argv += ["--cni-bin-dir", str(cluster["cni_bin_dir"])]
    if cluster.get("cni_faults"):
        argv += ["--cni-faults", str(cluster["cni_faults"])]
    return argv


def control_plane_argv(kubeconfig: Path, options: UpOptions, controller_endpoint: str
                       ) -> dict[str, list[str]]:
    """The controller-manager's, scheduler's and sidecars' command lines (by name)."""
    cluster = options.cluster or {}
    off = [*(["-snapshot-controller"] if cluster.get("snapshot_controller") is False else []),
           *([f"-{name}" for name in ("deployment-controller", "replicaset-controller",
                                      "statefulset-controller", "daemonset-controller",
                                      "job-controller")]
             if cluster.get("workload_controllers") is False else [])]
    config = ["--kubeconfig", str(kubeconfig)]
    # in-process `up`'s loops call the server with no client-side limit; these children
    # share our own API server with nothing else, so their QPS/burst are raised from
    # the upstream defaults (20/30, 5/10) that keep them from starving a shared one
    out = {"controller-manager": ["controller-manager", *config, *UNTHROTTLED, "--controllers",
                                  ",".join(["*", *off]), "--node-monitor-grace-period",
                                  f"{options.node_monitor_grace_period:g}s"],
           "scheduler": ["scheduler", *config]}
    if cluster.get("sidecars") is not False:
        out["sidecars"] = ["sidecars", *config, *UNTHROTTLED, "--csi-address", controller_endpoint,
                           "--leader-election"]
    return out


def processes_refusal(options: UpOptions) -> str:
    """What `up --processes` cannot do yet ('' when it can start)."""
    if options.dataplane != "emulated":
        return "--processes runs the emulated dataplane only (the kubelet command's)"
    if options.metrics_address:
        return "--processes does not serve --metrics-address (each process would need its own)"
    faults = options.api_faults or {}
    if faults.get("writeDelaySeconds") or faults.get("conflicts"):
        return ("--processes takes no --api-write-delay/--api-conflicts: post them to the API "
                "server's /debug/kubelet-sim/faults instead")
    if (options.cluster or {}).get("csi_controller_endpoint"):
        return "--processes starts its own CSI controller plugin (no --csi-controller-endpoint)"
    return ""


class Supervisor:
    """The children of one `up --processes`, started, kept running and stopped."""

    def __init__(self, options: UpOptions, state_dir: Path) -> None:
        self.options = options
        self.state_dir = state_dir
        self.work = state_dir / "cluster"
        self.logs = state_dir / "logs"
        self.traces = state_dir / "traces"
        self.kubeconfig = options.kubeconfig or state_dir / "kubeconfig"
        self.apiserver: Child | None = None
        self.children: list[Child] = []  # in start order, the API server not included
        self.drivers: list[Driver] = []
        self.server_url = ""
        self.stopping = False

    # -- start ------------------------------------------------------------------------

    async def start_apiserver(self) -> None:
        cluster = self.options.cluster or {}
        argv = ["apiserver", "--state-dir", str(self.state_dir), "--kubeconfig",
                str(self.kubeconfig),
                # the plugins `up` runs: pods get kube-api-access volumes and priorities
                "--enable-admission-plugins", ",".join(sorted(DEFAULT_PLUGINS))]
        if self.options.port:
            argv += ["--port", str(self.options.port)]
        for flag, key in (("--service-cluster-ip-range", "service_cluster_ip_range"),
                          ("--service-node-port-range", "service_node_port_range")):
            if cluster.get(key):
                argv += [flag, str(cluster[key])]
        self.apiserver = Child("apiserver", argv, self.logs / "apiserver.log")
        offset = self.apiserver.log.stat().st_size if self.apiserver.log.exists() else 0
        self.apiserver.start()
        self.server_url = await self._wait_served(self.apiserver, offset)

    async def _wait_served(self, child: Child, offset: int) -> str:
        """The API server's URL once it printed its kubeconfig line."""
        deadline = time.monotonic() + APISERVER_START_SECONDS
        while time.monotonic() < deadline:
            said = child.log.read_text(errors="replace")[offset:]
            if "export KUBECONFIG=" in said:
                first = next((line for line in said.splitlines()
                              if line.startswith("API server ")), "")
                return first.split()[2] if first else ""
            if child.exited() is not None:
                last = (said.strip().splitlines() or ["no output"])[-1]
                raise UpRefused(f"the API server ended ({child.exited()}): {last}")
            await asyncio.sleep(0.05)
        raise UpRefused(f"the API server did not start within {APISERVER_START_SECONDS:g}s; "
                        f"see {child.log}")

    def _driver(self, name: str, socket: Path, args: list[str], log: str) -> DriverProcess:
        """A CSI plugin logging its calls where in-process `up`'s do
        (``STATE_DIR/cluster/logs/csi-controller.log``, ``csi-<node>.log``)."""
        cluster = self.options.cluster or {}
        common = ["--driver-name", DRIVER_NAME, "--state-dir", str(self.work / "storage-array"),
                  "--attach-required", *cluster.get("driver_args", ())]
        return DriverProcess(name=name, socket=socket, args=[*args, *common],
                             log_path=self.work / "logs" / log, die_with_parent=True)

    async def start_plugins(self) -> tuple[str, dict[str, str]]:
        """The controller plugin, then one node plugin per node: their endpoints."""
        (self.work / "storage-array").mkdir(parents=True, exist_ok=True)
        controller = self._driver(
            "csi-controller-plugin", self.work / "controller" / "csi.sock",
            ["--mode", "controller", "--node-id", "controller",
             *fault_control(self.work / "controller" / "faults.sock")], "csi-controller.log")
        controller.start()
        await controller.wait_ready()  # it creates the storage array the nodes open
        self.drivers.append(Driver(controller))
        nodes: dict[str, str] = {}
        for spec in default_nodes(self.options.nodes):
            plugin_dir = self.node_root(spec) / "plugins" / DRIVER_NAME
            node = self._driver(f"csi-node-plugin-{spec.name}", plugin_dir / "csi.sock",
                                ["--mode", "node", "--node-id", spec.name,
                                 *fault_control(plugin_dir / "faults.sock")],
                                f"csi-{spec.name}.log")
            node.start()
            self.drivers.append(Driver(node))
            nodes[spec.name] = node.endpoint
        for driver in self.drivers[1:]:
            await driver.process.wait_ready()
        return controller.endpoint, nodes

    def node_root(self, spec: NodeSpec) -> Path:
        return self.work / spec.name / "kubelet"

    def start_components(self, controller_endpoint: str, node_endpoints: dict[str, str]
                         ) -> None:
        for name, argv in control_plane_argv(self.kubeconfig, self.options,
                                             controller_endpoint).items():
            self.children.append(Child(name, argv, self.logs / f"{name}.log"))
        for spec in default_nodes(self.options.nodes):
            self.children.append(Child(
                f"kubelet-{spec.name}",
                kubelet_argv(self.kubeconfig, spec, self.node_root(spec),
                             node_endpoints[spec.name], self.options),
                self.logs / f"kubelet-{spec.name}.log"))
        for child in self.children:
            if child.name.startswith("kubelet-") or child.name == "sidecars":
                child.argv += ["--trace-file", str(self.traces / f"{child.name}.jsonl")]
            child.start()

    def loops_not_running(self) -> list[str]:
        """The control-plane children whose loops do not all run yet (each says so once
        its Lease's caches are synced: :data:`RUNNING`)."""
        out = []
        for child in self.children:
            if child.name.startswith("kubelet-"):
                continue
            said = child.log.read_text(errors="replace")[child.offset:] \
                if child.log.exists() else ""
            groups = max(1, said.count("attempting to acquire leader lease"))
            if said.count(RUNNING) < groups:
                out.append(f"{child.name}'s loops running")
        return out

    # -- keep running -----------------------------------------------------------------

    async def supervise(self, stop: asyncio.Event) -> None:
        """Start again every child that ended, until ``stop``."""
        while not stop.is_set():
            now = time.monotonic()
            for child in [c for c in (self.apiserver, *self.children) if c is not None]:
                code = child.exited()
                if code is None or self.stopping:
                    continue
                if child.due is None:
                    if now - child.started_at >= RESTART_RESET:
                        child.delay = RESTART_FIRST  # it ran a while: not a crash loop
                    child.due = now + child.delay
                    print(f"{child.name} exited with {code}; starting it again in "
                          f"{child.delay:g}s (see {child.log})", flush=True)
                elif now >= child.due:
                    child.restarts += 1
                    child.delay = min(child.delay * 2, RESTART_CAP)
                    child.start()
                    pid = child.proc.pid if child.proc is not None else 0
                    print(f"{child.name} started again: pid {pid}", flush=True)
            for driver in self.drivers:
                proc = driver.process.process
                if proc is None or proc.poll() is None or self.stopping:
                    continue
                if driver.due is None:
                    driver.due = now + RESTART_FIRST
                    print(f"{driver.process.name} exited with {proc.returncode}; starting "
                          "it again", flush=True)
                elif now >= driver.due:
                    driver.due = None
                    driver.process.start()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stop.wait(), SUPERVISE_PERIOD)

    # -- stop -------------------------------------------------------------------------

    async def drain(self, client: KubeClient) -> None:
        """`up`'s teardown over the API: workloads, then pods, waited for; then the
        volume attachments."""
        print("shutting down: deleting pods", flush=True)
        for kind in WORKLOAD_KINDS:
            for obj in await _list(client, kind):
                with contextlib.suppress(ApiError):
                    await client.delete(kind, obj.name, obj.namespace)
        for pod in await _list(client, "Pod"):
            with contextlib.suppress(ApiError):
                await client.delete("Pod", pod.name, pod.namespace)
        if not await _wait_until_gone(client, "Pod", TEARDOWN_SECONDS):
            print("shutting down: pods still terminating; stopping anyway", file=sys.stderr)
        elif not await _wait_until_gone(client, "VolumeAttachment", TEARDOWN_SECONDS):
            print("shutting down: volumes still attached; stopping anyway", file=sys.stderr)

    def stop_all(self) -> None:
        """Every child, newest first (the kubelets, the control plane, the plugins), the
        API server last."""
        self.stopping = True
        for child in reversed(self.children):
            child.stop()
        for driver in reversed(self.drivers):
            driver.process.stop()
        if self.apiserver is not None:
            self.apiserver.stop()

    def pids(self) -> dict[str, int]:
        out = {c.name: c.proc.pid for c in (self.apiserver, *self.children)
               if c is not None and c.proc is not None}
        out.update({d.process.name: d.process.process.pid for d in self.drivers
                    if d.process.process is not None})
        return out


async def _list(client: KubeClient, kind: str) -> Sequence[Any]:
    try:
        return (await client.list(kind)).items
    except ApiError:
        return []


async def _wait_until_gone(client: KubeClient, kind: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while await _list(client, kind):
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.5)
    return True


async def run_up_processes(options: UpOptions) -> int:
    """Run the cluster as processes until SIGINT/SIGTERM; :class:`UpRefused` when it
    cannot start (after stopping what it started)."""
    refused = processes_refusal(options)
    if refused:
        raise UpRefused(refused)
    own_dir = options.state_dir is None
    state_dir = options.state_dir or Path(tempfile.mkdtemp(prefix="ksim-up-", dir="/tmp"))
    private_dir(state_dir)
    supervisor = Supervisor(options, state_dir)
    shutdown, drained = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown.set)
    client: HttpKubeClient | None = None
    keeper: asyncio.Task[None] | None = None
    try:
        await supervisor.start_apiserver()
        client = HttpKubeClient.from_kubeconfig(supervisor.kubeconfig, qps=0)
        controller_endpoint, node_endpoints = await supervisor.start_plugins()
        with contextlib.suppress(AlreadyExists):
            await client.create(builders.csi_driver(
                DRIVER_NAME, attach_required=True, pod_info_on_mount=True,
                volume_lifecycle_modes=["Persistent", "Ephemeral"]))
        supervisor.start_components(controller_endpoint, node_endpoints)
        # handed over as in-process `up` hands over its settled cluster
        leaders = ("kube-controller-manager", "kube-scheduler")
        lacking = await wait_settled(client, list(node_endpoints), DRIVER_NAME, leaders,
                                     also=supervisor.loops_not_running)
        if lacking:
            print(f"not settled within {SETTLE_SECONDS:g}s: no {', '.join(lacking)} yet "
                  f"(see {supervisor.logs})", file=sys.stderr, flush=True)
        # what `up` prints, the same way (the URL last on the first line)
        print(f"cluster up: {options.nodes} node(s), API server {supervisor.server_url}",
              flush=True)
        print(f"CSI controller plugin: {controller_endpoint}", flush=True)
        for node, endpoint in sorted(node_endpoints.items()):
            print(f"CSI node plugin on {node}: {endpoint}", flush=True)
        cluster = options.cluster or {}
        if cluster.get("sidecars") is False:
            print("no CSI sidecars: run external-provisioner/-attacher/-snapshotter/-resizer "
                  "with --kubeconfig and --csi-address of the controller plugin", flush=True)
        if cluster.get("workload_controllers") is False:
            print("no workload controllers: run kube-controller-manager with --kubeconfig "
                  "and --controllers=deployment-controller,replicaset-controller,"
                  "statefulset-controller,daemonset-controller,job-controller", flush=True)
        if cluster.get("snapshot_controller") is False:
            print("no snapshot-controller: run the real one with --kubeconfig", flush=True)
        for name, pid in supervisor.pids().items():
            print(f"process {name}: pid {pid}", flush=True)
        print(f"logs: {supervisor.logs}", flush=True)
        print(f"export KUBECONFIG={supervisor.kubeconfig}", flush=True)
        keeper = asyncio.create_task(supervisor.supervise(drained))
        await shutdown.wait()
        await supervisor.drain(client)  # the children still kept running meanwhile
    finally:
        drained.set()
        if keeper is not None:
            await keeper
        if client is not None:
            await client.close()
        supervisor.stop_all()
        if own_dir:
            shutil.rmtree(state_dir, ignore_errors=True)
    print("cluster down", flush=True)
    return 0
