"""``python -m kubelet_sim``: ``demo [N]`` runs the scenarios; ``apply FILE`` applies manifests;
``up`` runs a cluster that serves the Kubernetes API until interrupted; ``apiserver`` serves
the API alone (no nodes, no controllers); ``kubelet`` runs simulated nodes that join an API
server over HTTPS; ``trace FILE`` draws a ``--trace-file`` as a
sequence diagram (SVG, Mermaid)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kubelet_sim import control_plane_commands, kubelet_cli
from kubelet_sim.apiserver.admission_plugins import DEFAULT_PLUGINS
from kubelet_sim.apiserver.services.ranges import (
    DEFAULT_NODE_PORTS,
    DEFAULT_SERVICE_CIDR,
    service_range_problem,
)
from kubelet_sim.conformance import cli as conformance
from kubelet_sim.demo import SCENARIOS, DemoOptions, main_demo


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m kubelet_sim",
                                     description="A simulated Kubernetes cluster that drives "
                                     "the CSI driver over gRPC and CNI plugins by exec.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the six scenarios (or only scenario N)")
    demo.add_argument("scenario", nargs="*", type=int,
                      help=f"scenario numbers 1-{len(SCENARIOS)} (default: all)")
    _common(demo)
    demo.add_argument("--no-trace", action="store_true", help="do not print the call traces")
    demo.add_argument("--processes", action="store_true",
                      help="run each scenario against `up --processes` (every component its "
                      "own process), checked over HTTPS, the nodes' dirs and trace files")
    _trace_file(demo)
    apply = sub.add_parser("apply", help="apply manifests to a fresh cluster and report")
    apply.add_argument("files", nargs="+", type=Path)
    _common(apply)
    apply.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    _trace_file(apply)
    up = sub.add_parser("up", help="run a cluster that serves the Kubernetes API (kubectl, "
                        "client-go) until SIGINT/SIGTERM")
    up.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    up.add_argument("--address", default="127.0.0.1",
                    help="the API server listens here (127.0.0.1 only)")
    up.add_argument("--port", type=int, default=0, help="API server port (default: any free)")
    up.add_argument("--kubeconfig", type=Path, metavar="FILE",
                    help="where to write the kubeconfig (default: STATE_DIR/kubeconfig)")
    up.add_argument("--state-dir", type=Path, metavar="DIR",
                    help="keep the cluster here: its API objects (written before each write "
                    "is answered), port, CA, token, plugin state and node dirs; `up` again "
                    "on DIR is the same cluster (default: a temp dir removed at exit)")
    up.add_argument("--no-sidecars", action="store_true",
                    help="leave out the CSI sidecar roles (external-provisioner, -attacher, "
                    "-snapshotter, -resizer) so the real ones can run against the API with "
                    "--kubeconfig and the printed driver sockets")
    up.add_argument("--no-snapshot-controller", action="store_true",
                    help="leave out the snapshot-controller (VolumeSnapshot to "
                    "VolumeSnapshotContent) so the real one can run against the API")
    up.add_argument("--no-workload-controllers", action="store_true",
                    help="leave out the Deployment, ReplicaSet, StatefulSet, DaemonSet and "
                    "Job controllers so a real kube-controller-manager can run them "
                    "(--controllers=deployment-controller,replicaset-controller,"
                    "statefulset-controller,daemonset-controller,job-controller)")
    up.add_argument("--processes", action="store_true",
                    help="run the API server and every component (controller-manager, "
                    "scheduler, sidecars, one kubelet per node) as its own process over "
                    "HTTPS, started again when it ends")
    up.add_argument("--node-monitor-grace-period", type=float, default=50.0, metavar="SECONDS",
                    help="seconds without a heartbeat before a node is Unknown and unreachable")
    up.add_argument("--metrics-address", default="", metavar="HOST:PORT",
                    help="serve Prometheus metrics at http://HOST:PORT/metrics (a loopback "
                    "HOST unless --metrics-bind-any)")
    up.add_argument("--metrics-bind-any", action="store_true",
                    help="allow --metrics-address on a non-loopback address (the metrics "
                    "are served without authentication)")
    up.add_argument("--api-write-delay", type=float, default=0.0, metavar="SECONDS",
                    help="every API write waits this long (a slow etcd)")
    up.add_argument("--api-conflicts", action="append", default=[], metavar="KIND=COUNT",
                    help="the next COUNT updates of KIND fail 409 Conflict (repeatable); "
                    "more at run time: kubectl create --raw /debug/kubelet-sim/faults -f F")
    up.add_argument("--service-cluster-ip-range", default=DEFAULT_SERVICE_CIDR, metavar="CIDR",
                    help="the Services' cluster IPs come from here; the first one is the "
                    f"kubernetes Service's (default {DEFAULT_SERVICE_CIDR})")
    up.add_argument("--service-node-port-range", default=DEFAULT_NODE_PORTS,
                    metavar="FIRST-LAST", help="the NodePort and LoadBalancer Services' node "
                    f"ports come from here (default {DEFAULT_NODE_PORTS})")
    _common(up)
    apiserver = sub.add_parser("apiserver", help="serve the Kubernetes API alone (no nodes, "
                               "no controllers) until SIGINT/SIGTERM, for components run as "
                               "their own processes with --kubeconfig")
    apiserver.add_argument("--metrics-address", default="", metavar="HOST:PORT",
                           help="serve Prometheus metrics (apiserver_request_total) at "
                           "http://HOST:PORT/metrics (a loopback HOST unless "
                           "--metrics-bind-any)")
    apiserver.add_argument("--metrics-bind-any", action="store_true",
                           help="allow --metrics-address on a non-loopback address")
    apiserver.add_argument("--state-dir", type=Path, metavar="DIR", required=True,
                           help="its API objects (written before each write is answered), "
                           "port, CA, token and kubeconfig; started again on DIR it is the "
                           "same API server (`up --state-dir DIR` lays out the same files)")
    apiserver.add_argument("--address", default="127.0.0.1",
                           help="listen here (127.0.0.1 only)")
    apiserver.add_argument("--port", type=int, default=0,
                           help="port (default: DIR's previous port, else any free)")
    apiserver.add_argument("--kubeconfig", type=Path, metavar="FILE",
                           help="where to write the kubeconfig (default: DIR/kubeconfig)")
    apiserver.add_argument("--service-cluster-ip-range", default=DEFAULT_SERVICE_CIDR,
                           metavar="CIDR", help="the Services' cluster IPs come from here")
    apiserver.add_argument("--service-node-port-range", default=DEFAULT_NODE_PORTS,
                           metavar="FIRST-LAST", help="the Services' node ports come from here")
    kubelet_cli.add_parser(sub)
    apiserver.add_argument("--enable-admission-plugins", type=_admission_plugins, default=(),
                           metavar="LIST", help="optional admission plugins to run: "
                           f"{','.join(sorted(DEFAULT_PLUGINS))} (`up` runs both; default none)")
    control_plane_commands.add_parsers(sub)
    conformance.add_parser(sub)
    trace = sub.add_parser("trace", help="draw a --trace-file as a sequence diagram (SVG "
                           "and/or Mermaid)")
    trace.add_argument("file", type=Path, metavar="FILE.jsonl")
    trace.add_argument("--svg", type=Path, metavar="OUT.svg", help="write the SVG here")
    trace.add_argument("--pod", metavar="NS/NAME",
                       help="only the calls about this pod (its volumes and sandbox)")
    trace.add_argument("--mermaid", nargs="?", const="-", metavar="OUT.mmd",
                       help="write a Mermaid sequenceDiagram here (stdout without OUT.mmd)")
    return parser


def _admission_plugins(value: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in value.split(",") if n.strip())
    unknown = sorted(set(names) - DEFAULT_PLUGINS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown admission plugin {unknown[0]!r} "
                                         f"(known: {', '.join(sorted(DEFAULT_PLUGINS))})")
    return names


def _trace_file(p: argparse.ArgumentParser) -> None:
    p.add_argument("--trace-file", type=Path, metavar="T.jsonl",
                   help="also write every gRPC call and CNI exec as JSON lines, the "
                   "cluster's start-up included (phase and seq name each)")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataplane", choices=("emulated", "linux"), default="emulated",
                   help="linux (root only): real network namespaces, bridges and veth pairs")
    p.add_argument("--csi-controller-endpoint", metavar="EP",
                   help="use this running CSI controller plugin instead of launching ours")
    p.add_argument("--csi-node-endpoint", metavar="NODE=EP", action="append", default=[],
                   help="use this running CSI node plugin for NODE (repeatable); the "
                   "simulator registers it with that node's kubelet")
    p.add_argument("--cni-bin-dir", type=Path, metavar="DIR",
                   help="exec CNI plugins from DIR instead of laying ours out")
    p.add_argument("--reference-cni", action="store_true",
                   help="use plugin types bridge/host-local/loopback (e.g. the reference "
                   "plugins; --cni-bin-dir defaults to /usr/lib/cni); needs --dataplane "
                   "linux")
    p.add_argument("--csi-faults", type=Path, metavar="FILE",
                   help="our CSI driver processes inject faults by these rules (their "
                   "--faults; each also serves --fault-control next to its socket)")
    p.add_argument("--cni-faults", type=Path, metavar="FILE",
                   help="our CNI plugins inject faults by these JSON rules")


def cluster_options(args: argparse.Namespace) -> dict[str, Any]:
    """ClusterConfig fields from the common flags."""
    options: dict[str, Any] = {}
    if args.csi_controller_endpoint:
        options["csi_controller_endpoint"] = args.csi_controller_endpoint
    nodes: dict[str, str] = {}
    for item in args.csi_node_endpoint:
        node, sep, endpoint = item.partition("=")
        if not sep or not node or not endpoint:
            raise SystemExit(f"kubelet_sim: --csi-node-endpoint wants NODE=EP, not {item!r}")
        nodes[node] = endpoint
    if nodes:
        options["csi_node_endpoints"] = nodes
    if args.reference_cni:
        options.update(bridge_type="bridge", ipam_type="host-local", loopback_type="loopback",
                       cni_bin_dir=args.cni_bin_dir or Path("/usr/lib/cni"))
    elif args.cni_bin_dir:
        options["cni_bin_dir"] = args.cni_bin_dir
    if args.csi_faults:
        options["driver_args"] = ["--faults", str(args.csi_faults.resolve())]
    if args.cni_faults:
        options["cni_faults"] = args.cni_faults.resolve()
    return options


def api_faults(args: argparse.Namespace) -> dict[str, Any]:
    """`up`'s API server fault flags as /debug/kubelet-sim/faults takes them."""
    conflicts = []
    for item in args.api_conflicts:
        kind, sep, count = item.partition("=")
        if not sep or not count.isdigit():
            raise SystemExit(f"kubelet_sim: --api-conflicts wants KIND=COUNT, not {item!r}")
        conflicts.append({"kind": kind, "count": int(count)})
    return {"writeDelaySeconds": args.api_write_delay, "conflicts": conflicts}


def demo_up_flags(args: argparse.Namespace) -> list[str]:
    """The common flags `demo --processes` hands to each `up --processes` (which refuses
    those it cannot do)."""
    flags = ["--dataplane", args.dataplane]
    for flag, path in (("--csi-faults", args.csi_faults), ("--cni-faults", args.cni_faults),
                       ("--cni-bin-dir", args.cni_bin_dir)):
        flags += [flag, str(path.resolve())] if path else []
    flags += ["--csi-controller-endpoint", args.csi_controller_endpoint] \
        if args.csi_controller_endpoint else []
    for endpoint in args.csi_node_endpoint:
        flags += ["--csi-node-endpoint", endpoint]
    return flags + (["--reference-cni"] if args.reference_cni else [])


def start_up_refusal(args: argparse.Namespace) -> str:
    """Why these flags cannot work together, in one sentence ('' when they can)."""
    if args.reference_cni and args.dataplane != "linux":
        return ("--reference-cni needs --dataplane linux: the reference loopback plugin "
                "configures lo inside a real network namespace, which the emulated "
                "dataplane does not create")
    if args.dataplane == "linux" and os.geteuid() != 0:
        return "--dataplane linux needs root (network namespaces)"
    return ""


def up_refusal(args: argparse.Namespace) -> str:
    """Why `up` cannot start with these flags ('' when it can)."""
    if args.address not in ("127.0.0.1", "localhost"):
        return "the API server listens on 127.0.0.1 only"
    if not 0 <= args.port <= 65535:
        return f"--port {args.port}: not a port number (0-65535)"
    return (metrics_address_problem(args)
            or service_range_problem(args.service_cluster_ip_range,
                                     args.service_node_port_range))


def metrics_address_problem(args: argparse.Namespace) -> str:
    """Why ``--metrics-address`` cannot be served ('' when it can, or is not given)."""
    if args.metrics_address:
        host, sep, port = args.metrics_address.rpartition(":")
        if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
            return f"--metrics-address wants HOST:PORT, not {args.metrics_address!r}"
        loopback = host in ("", "localhost", "::1", "[::1]") or host.startswith("127.")
        if not loopback and not args.metrics_bind_any:
            return (f"--metrics-address {args.metrics_address} is not a loopback address: "
                    "metrics are served without authentication; add --metrics-bind-any "
                    "to serve them there anyway")
    return ""


def main_apiserver(args: argparse.Namespace) -> int:
    """`apiserver`: the API server alone."""
    from kubelet_sim.apiserver_process import ApiServerOptions, run_apiserver
    from kubelet_sim.up import UpRefused

    refused = (("the API server listens on 127.0.0.1 only"
                if args.address not in ("127.0.0.1", "localhost") else "")
               or (f"--port {args.port}: not a port number (0-65535)"
                   if not 0 <= args.port <= 65535 else "")
               or metrics_address_problem(args)
               or service_range_problem(args.service_cluster_ip_range,
                                        args.service_node_port_range))
    if refused:
        print(f"kubelet_sim: {refused}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(run_apiserver(ApiServerOptions(
            state_dir=args.state_dir, port=args.port, kubeconfig=args.kubeconfig,
            metrics_address=args.metrics_address,
            service_cluster_ip_range=args.service_cluster_ip_range,
            service_node_port_range=args.service_node_port_range,
            admission_plugins=args.enable_admission_plugins)))
    except UpRefused as e:
        print(f"kubelet_sim: {e}", file=sys.stderr)
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "conformance":
        return conformance.run(args)
    if args.command == "trace":  # reads a file: no cluster, none of the common flags
        from kubelet_sim.trace_render import main_trace

        return main_trace(args.file, svg=args.svg, mermaid=args.mermaid, pod=args.pod)
    if args.command == "apiserver":
        return main_apiserver(args)
    if args.command == "kubelet":
        return kubelet_cli.main_kubelet(args)
    if args.command in control_plane_commands.COMMANDS:
        return control_plane_commands.run(args)
    refused = start_up_refusal(args)
    if refused:
        print(f"kubelet_sim: {refused}", file=sys.stderr)
        return 2
    if args.command == "demo":
        bad = [n for n in args.scenario if not 1 <= n <= len(SCENARIOS)]
        if bad:
            print(f"kubelet_sim: no scenario {bad[0]} (1-{len(SCENARIOS)})", file=sys.stderr)
            return 2
        return main_demo(DemoOptions(dataplane=args.dataplane, show_trace=not args.no_trace,
                                     cluster=cluster_options(args), processes=args.processes,
                                     up_flags=demo_up_flags(args)),
                         args.scenario or None, trace_file=args.trace_file)
    if args.command == "up":
        from kubelet_sim.up import UpOptions, UpRefused, run_up
        from kubelet_sim.up_processes import run_up_processes

        refused = up_refusal(args)
        if refused:
            print(f"kubelet_sim: {refused}", file=sys.stderr)
            return 2
        try:
            return asyncio.run((run_up_processes if args.processes else run_up)(UpOptions(
                nodes=args.nodes, port=args.port, kubeconfig=args.kubeconfig,
                state_dir=args.state_dir, dataplane=args.dataplane,
                node_monitor_grace_period=args.node_monitor_grace_period,
                metrics_address=args.metrics_address, api_faults=api_faults(args),
                cluster={**cluster_options(args),
                         "service_cluster_ip_range": args.service_cluster_ip_range,
                         "service_node_port_range": args.service_node_port_range,
                         **({"sidecars": False} if args.no_sidecars else {}),
                         **({"snapshot_controller": False}
                            if args.no_snapshot_controller else {}),
                         **({"workload_controllers": False}
                            if args.no_workload_controllers else {})})))
        except UpRefused as e:
            print(f"kubelet_sim: {e}", file=sys.stderr)
            return 2
    from kubelet_sim.apply import apply_files

    return asyncio.run(apply_files(args.files, nodes=args.nodes, dataplane=args.dataplane,
                                   trace_file=args.trace_file,
                                   cluster_options=cluster_options(args)))


if __name__ == "__main__":
    sys.exit(main())
