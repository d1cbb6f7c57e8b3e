"""``python -m kubelet_sim up``: a cluster that keeps running and serves the Kubernetes API.

The controllers and the kubelets run their loops (watch-driven, not settle rounds) and
the API is served over HTTPS on 127.0.0.1 with a kubeconfig written for it, so kubectl,
client-go or the Python client drive the cluster while every CSI call and CNI exec stays
real. SIGINT or SIGTERM tears it down in Kubernetes' order: the workloads (Deployments,
StatefulSets, DaemonSets, Jobs, ReplicaSets) deleted, every pod deleted and
waited for (so its sandbox is stopped with CNI DEL, its volumes unpublished, unstaged
and detached), then the loops, the API server and the plugin processes stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubelet_sim.apiserver.admission_plugins import DEFAULT_PLUGINS
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.http.component_statuses import Components
from kubelet_sim.apiserver.http.credentials import load_or_create
from kubelet_sim.apiserver.http.debug_faults import apply_faults
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.services.kubernetes_service import (
    ensure_kubernetes_service,
    keep_kubernetes_service,
)
from kubelet_sim.apiserver.system_namespaces import ensure_system_namespaces
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes
from kubelet_sim.controllers.workloads import WORKLOAD_KINDS
from kubelet_sim.state_dir_lock import StateDirInUse, StateDirLock

TEARDOWN_SECONDS = 120.0
GIL_SWITCH_INTERVAL_S = 0.0002  # CPython's default is 0.005


@dataclass
class UpOptions:
    nodes: int = 1
    port: int = 0
    kubeconfig: Path | None = None
    state_dir: Path | None = None
    dataplane: str = "emulated"
    node_monitor_grace_period: float = 50.0
    metrics_address: str = ""  # HOST:PORT for Prometheus' /metrics ("" = none)
    api_faults: dict[str, Any] | None = None  # as /debug/kubelet-sim/faults takes them
    cluster: dict[str, Any] | None = None


async def wait_until_gone(api: APIServer, kinds: tuple[str, ...], timeout: float) -> bool:
    """Poll until no object of ``kinds`` is left; False on timeout."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while any(api.list(kind).items for kind in kinds):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(0.1)
    return True


class UpRefused(RuntimeError):
    """`up` cannot start as asked; said in one line, exit 2, nothing left behind."""


def bind_listener(port: int) -> socket.socket:
    """The API server's listening socket, bound before anything starts, so a port in use
    is refused while there is nothing to undo."""
    try:
        return socket.create_server(("127.0.0.1", port))
    except OSError as e:
        raise UpRefused(f"cannot listen on 127.0.0.1:{port}: "
                        f"{os.strerror(e.errno) if e.errno else e}") from None


def private_dir(path: Path) -> bool:
    """Make ``path`` (mode 0700 when it is made here); True when it was made here."""
    made = not path.exists()
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return made


async def run_up(options: UpOptions, ready: asyncio.Event | None = None) -> int:
    """Run the cluster until SIGINT/SIGTERM. Start-up failures raise :class:`UpRefused`
    after undoing what was started (plugin processes, the temp dir)."""
    own_dir = options.state_dir is None
    state_dir = options.state_dir or Path(tempfile.mkdtemp(prefix="kubelet-sim-"))
    lock: StateDirLock | None = None
    try:
        if not own_dir:
            private_dir(state_dir)
            try:
                lock = StateDirLock.acquire(state_dir)
            except StateDirInUse as e:
                raise UpRefused(str(e)) from None
        port_file = state_dir / "apiserver" / "port"
        port = options.port or (int(port_file.read_text()) if port_file.exists() else 0)
        listener = bind_listener(port)
        try:
            return await _serve(options, state_dir, own_dir, listener, ready)
        finally:
            listener.close()
    finally:
        if lock is not None:
            lock.release()
        if own_dir:
            shutil.rmtree(state_dir, ignore_errors=True)


async def _serve(options: UpOptions, state_dir: Path, own_dir: bool, listener: socket.socket,
                 ready: asyncio.Event | None) -> int:
    # With a state dir of the user's, the API objects are kept there too (and the port,
    # CA and token): `up` again on it is the same cluster, with the same kubeconfig.
    database = None if own_dir else state_dir / "apiserver" / "objects.db"
    config = ClusterConfig(nodes=default_nodes(options.nodes), work_dir=state_dir / "cluster",
                           dataplane=options.dataplane, api_database=database,
                           node_monitor_grace_period=options.node_monitor_grace_period,
                           plugins_die_with_simulator=own_dir,
                           root_ca_cert=load_or_create(state_dir).ca_cert.read_bytes(),
                           admission_plugins=tuple(sorted(DEFAULT_PLUGINS)),
                           **(options.cluster or {}))
    cluster = Cluster(config)
    if options.api_faults:
        apply_faults(cluster.api, options.api_faults)
    # The API server's event loop shares the GIL with its LIST workers and the cluster's
    # loops: a thread that waits for it gets it after 0.2 ms instead of CPython's 5, so a
    # /healthz is not held up while a LIST of thousands is being built (issue 22).
    sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown.set)
    handle = None
    metrics_server = None
    loops: asyncio.Task[None] | None = None
    keeper: asyncio.Task[None] | None = None
    stop_loops = asyncio.Event()
    try:
        await cluster.start()
        metrics = None
        if options.metrics_address:
            from kubelet_sim.utils.metrics import ClusterMetrics  # only when asked for

            metrics = ClusterMetrics(cluster.driver_name)
            cluster.trace.listeners.append(metrics.observe_call)
            for kubelet in cluster.kubelets.values():
                kubelet.on_pod_started = metrics.pod_started
            try:
                metrics_server = metrics.serve(options.metrics_address)
            except OSError as e:
                raise UpRefused(f"cannot serve metrics on {options.metrics_address}: "
                                f"{e.strerror}") from None
        handle = start_api_server(cluster.api, state_dir, kubeconfig=options.kubeconfig,
                                  on_request=metrics.request if metrics else None,
                                  listener=listener,
                                  components=Components(scheduler=True,
                                                        controller_manager=True))
        ensure_kubernetes_service(cluster.api, "127.0.0.1", handle.port)
        ensure_system_namespaces(cluster.api)
        keeper = asyncio.create_task(keep_kubernetes_service(
            cluster.api, "127.0.0.1", handle.port, stop_loops))
        if not own_dir:
            port_file = state_dir / "apiserver" / "port"
            port_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            port_file.write_text(str(handle.port))
        loops = asyncio.create_task(cluster.run(stop_loops))
        print(f"cluster up: {options.nodes} node(s), API server {handle.url}", flush=True)
        if metrics_server is not None:
            print(f"metrics: http://{options.metrics_address}/metrics", flush=True)
        print(f"CSI controller plugin: {cluster.controller_endpoint}", flush=True)
        for node, endpoint in sorted(cluster.node_csi_endpoints().items()):
            print(f"CSI node plugin on {node}: {endpoint}", flush=True)
        if not cluster.config.sidecars:
            print("no CSI sidecars: run external-provisioner/-attacher/-snapshotter/-resizer "
                  "with --kubeconfig and --csi-address of the controller plugin", flush=True)
        if not cluster.config.workload_controllers:
            print("no workload controllers: run kube-controller-manager with --kubeconfig "
                  "and --controllers=deployment-controller,replicaset-controller,"
                  "statefulset-controller,daemonset-controller,job-controller", flush=True)
        if not cluster.config.snapshot_controller:
            print("no snapshot-controller: run the real one with --kubeconfig", flush=True)
        print(f"export KUBECONFIG={handle.kubeconfig}", flush=True)
        if ready is not None:
            ready.set()
        await shutdown.wait()
        print("shutting down: deleting pods", flush=True)
        # the workloads first, or their controllers would make the pods again
        for kind in WORKLOAD_KINDS:
            for obj in cluster.api.list(kind).items:
                with contextlib.suppress(Exception):
                    cluster.api.delete(kind, obj.name, obj.namespace)
        for pod in cluster.api.list("Pod").items:
            with contextlib.suppress(Exception):
                cluster.api.delete("Pod", pod.name, pod.namespace)
        drained = await wait_until_gone(cluster.api, ("Pod",), TEARDOWN_SECONDS)
        if not drained:
            print("shutting down: pods still terminating; stopping anyway", file=sys.stderr)
        # with the pods gone, the attach/detach controller detaches their volumes
        elif not await wait_until_gone(cluster.api, ("VolumeAttachment",), TEARDOWN_SECONDS):
            print("shutting down: volumes still attached; stopping anyway", file=sys.stderr)
    finally:
        stop_loops.set()
        if keeper is not None:
            await keeper
        if loops is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await loops
        if handle is not None:
            handle.stop()
        if metrics_server is not None:
            metrics_server.shutdown()
            metrics_server.server_close()
        await cluster.stop()
    print("cluster down", flush=True)
    return 0
