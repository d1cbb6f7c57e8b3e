"""``python -m kubelet_sim up``: a cluster that keeps running and serves the Kubernetes API.

The controllers and the kubelets run their loops (watch-driven, not settle rounds) and
the API is served over HTTPS on 127.0.0.1 with a kubeconfig written for it, so kubectl,
client-go or the Python client drive the cluster while every CSI call and CNI exec stays
real. SIGINT or SIGTERM tears it down in Kubernetes' order: every pod deleted and
waited for (so its sandbox is stopped with CNI DEL, its volumes unpublished, unstaged
and detached), then the loops, the API server and the plugin processes stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.http.debug_faults import apply_faults
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.cluster import Cluster, ClusterConfig, default_nodes

TEARDOWN_SECONDS = 120.0


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


async def run_up(options: UpOptions, ready: asyncio.Event | None = None) -> int:
    own_dir = options.state_dir is None
    state_dir = options.state_dir or Path(tempfile.mkdtemp(prefix="kubelet-sim-"))
    state_dir.mkdir(parents=True, exist_ok=True)
    # With a state dir of the user's, the API objects are kept there too (and the port,
    # CA and token): `up` again on it is the same cluster, with the same kubeconfig.
    database = None if own_dir else state_dir / "apiserver" / "objects.db"
    config = ClusterConfig(nodes=default_nodes(options.nodes), work_dir=state_dir / "cluster",
                           dataplane=options.dataplane, api_database=database,
                           node_monitor_grace_period=options.node_monitor_grace_period,
                           **(options.cluster or {}))
    cluster = Cluster(config)
    if options.api_faults:
        apply_faults(cluster.api, options.api_faults)
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown.set)
    await cluster.start()
    metrics = None
    if options.metrics_address:
        from kubelet_sim.utils.metrics import ClusterMetrics  # only when asked for

        metrics = ClusterMetrics(cluster.driver_name)
        cluster.trace.listeners.append(metrics.observe_call)
        for kubelet in cluster.kubelets.values():
            kubelet.on_pod_started = metrics.pod_started
    port_file = state_dir / "apiserver" / "port"
    port = options.port or (int(port_file.read_text()) if port_file.exists() else 0)
    handle = start_api_server(cluster.api, state_dir, port=port, kubeconfig=options.kubeconfig,
                              on_request=metrics.request if metrics else None)
    metrics_server = metrics.serve(options.metrics_address) if metrics else None
    if not own_dir:
        port_file.parent.mkdir(parents=True, exist_ok=True)
        port_file.write_text(str(handle.port))
    stop_loops = asyncio.Event()
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
    if not cluster.config.snapshot_controller:
        print("no snapshot-controller: run the real one with --kubeconfig", flush=True)
    print(f"export KUBECONFIG={handle.kubeconfig}", flush=True)
    if ready is not None:
        ready.set()
    try:
        await shutdown.wait()
        print("shutting down: deleting pods", flush=True)
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
        with contextlib.suppress(asyncio.CancelledError):
            await loops
        handle.stop()
        if metrics_server is not None:
            metrics_server.shutdown()
            metrics_server.server_close()
        await cluster.stop()
        if own_dir:
            import shutil

            shutil.rmtree(state_dir, ignore_errors=True)
    print("cluster down", flush=True)
    return 0
