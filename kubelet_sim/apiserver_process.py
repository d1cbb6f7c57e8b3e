"""``kubelet-sim apiserver --state-dir D``: the simulator's API server alone, as its own
process: no nodes, no controllers, no plugins — what the components started as their
own processes (issue 25) talk to over HTTPS with the kubeconfig it writes.

The state dir is laid out as ``up``'s (``apiserver/objects.db``, ``apiserver/port``,
``pki/``, ``kubeconfig``) and locked the same way (one process per dir), so started
again on the same dir it is the same API server: every object (each write is on disk
before it is answered), the same port, CA and token, the same kubeconfig; watches from
before the restart get 410 and their informers relist. Like kube-apiserver it keeps the
system namespaces (``default``, ``kube-system``, ``kube-public``, ``kube-node-lease``)
and the ``kubernetes`` Service. SIGINT/SIGTERM stop it.
"""

from __future__ import annotations

import asyncio
import signal
import socket
from dataclasses import dataclass
from pathlib import Path

from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.persistence import ObjectDatabase
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.apiserver.services.kubernetes_service import (
    ensure_kubernetes_service,
    keep_kubernetes_service,
)
from kubelet_sim.apiserver.services.ranges import DEFAULT_NODE_PORTS, DEFAULT_SERVICE_CIDR
from kubelet_sim.state_dir_lock import StateDirInUse, StateDirLock
from kubelet_sim.up import UpRefused, bind_listener, private_dir

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class ApiServerOptions:
    state_dir: Path
    port: int = 0
    kubeconfig: Path | None = None
    metrics_address: str = ""  # HOST:PORT for Prometheus' /metrics ("" = none)
    service_cluster_ip_range: str = DEFAULT_SERVICE_CIDR
    service_node_port_range: str = DEFAULT_NODE_PORTS
    admission_plugins: tuple[str, ...] = ()  # kube-apiserver's --enable-admission-plugins


async def run_apiserver(options: ApiServerOptions) -> int:
    """Serve until SIGINT/SIGTERM; :class:`UpRefused` when it cannot start (the dir in
    use, the port taken)."""
    state_dir = options.state_dir
    private_dir(state_dir)
    try:
        lock = StateDirLock.acquire(state_dir)
    except StateDirInUse as e:
        raise UpRefused(str(e)) from None
    try:
        port_file = state_dir / "apiserver" / "port"
        port = options.port or (int(port_file.read_text()) if port_file.exists() else 0)
        listener = bind_listener(port)
        try:
            return await _serve(options, listener, port_file)
        finally:
            listener.close()
    finally:
        lock.release()


async def _serve(options: ApiServerOptions, listener: socket.socket, port_file: Path) -> int:
    state_dir = options.state_dir
    (state_dir / "apiserver").mkdir(mode=0o700, parents=True, exist_ok=True)
    database = ObjectDatabase(state_dir / "apiserver" / "objects.db")
    api = APIServer(database=database, bootstrap_namespaces=SYSTEM_NAMESPACES,
                    service_cluster_ip_range=options.service_cluster_ip_range,
                    service_node_port_range=options.service_node_port_range,
                    admission_plugins=options.admission_plugins)
    shutdown = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, shutdown.set)
    stop_keeper = asyncio.Event()
    handle = None
    keeper: asyncio.Task[None] | None = None
    metrics_server = None
    try:
        metrics = None
        if options.metrics_address:
            from kubelet_sim.utils.metrics import ClusterMetrics  # only when asked for

            metrics = ClusterMetrics("")
            try:
                metrics_server = metrics.serve(options.metrics_address)
            except OSError as e:
                raise UpRefused(f"cannot serve metrics on {options.metrics_address}: "
                                f"{e.strerror}") from None
        handle = start_api_server(api, state_dir, kubeconfig=options.kubeconfig,
                                  on_request=metrics.request if metrics else None,
                                  listener=listener)
        ensure_kubernetes_service(api, "127.0.0.1", handle.port)
        keeper = asyncio.create_task(keep_kubernetes_service(api, "127.0.0.1", handle.port,
                                                             stop_keeper))
        port_file.write_text(str(handle.port))
        print(f"API server {handle.url} (state in {state_dir})", flush=True)
        print(f"export KUBECONFIG={handle.kubeconfig}", flush=True)
        await shutdown.wait()
    finally:
        stop_keeper.set()
        if keeper is not None:
            await keeper
        if handle is not None:
            handle.stop()
        if metrics_server is not None:
            metrics_server.shutdown()
        database.close()
    print("API server down", flush=True)
    return 0
