"""The ``kubelet`` subcommand's flags (named as the real kubelet's where it has one) and its
entry point; the work is :mod:`kubelet_sim.kubelet_process`'s, imported only when run."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

DEFAULT_NAME_PREFIX = "sim-node-"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("kubelet", help="run simulated nodes (real CNI execs and CSI calls) "
                       "that join an API server over HTTPS, until SIGINT/SIGTERM")
    p.add_argument("--kubeconfig", type=Path, metavar="FILE", required=True,
                   help="how to reach the API server (ours or any kube-apiserver)")
    p.add_argument("--context", default="", help="the kubeconfig context (default: current)")
    p.add_argument("--node-name", metavar="N", help="run one node, named N")
    p.add_argument("--nodes", type=int, metavar="K", help="run K nodes, named PREFIX1 … PREFIXK")
    p.add_argument("--name-prefix", default=DEFAULT_NAME_PREFIX, metavar="PREFIX",
                   help=f"the nodes' name prefix with --nodes (default {DEFAULT_NAME_PREFIX})")
    p.add_argument("--state-dir", type=Path, metavar="DIR",
                   help="the nodes' dirs, plugin sockets and runtime state; started again on "
                   "DIR the kubelets recover their pods (default: a temp dir removed at exit)")
    p.add_argument("--root-dir", type=Path, metavar="DIR",
                   help="with --node-name: the kubelet's root dir; the node's other dirs (CNI "
                   "config, IPAM, runtime state) go beside it, in DIR's parent, which is also "
                   "the state dir unless --state-dir")
    p.add_argument("--node-ip", default="", metavar="IP",
                   help="with --node-name: the node's InternalIP (default: from "
                   "--node-ip-range)")
    p.add_argument("--dataplane", choices=("emulated", "linux"), default="emulated",
                   help="emulated only: linux (real namespaces) needs `up --dataplane linux`")
    p.add_argument("--pod-cidr", default="", metavar="CIDR",
                   help="node i takes the i-th /MASK subnet of CIDR (default: the podCIDR the "
                   "control plane allocates, else subnets of 10.244.0.0/16)")
    p.add_argument("--node-cidr-mask-size", type=int, default=24, metavar="MASK",
                   help="each node's share of --pod-cidr (default 24)")
    p.add_argument("--pod-cidr-wait", type=float, default=5.0, metavar="SECONDS",
                   help="without --pod-cidr: how long to wait for the control plane's podCIDR "
                   "(default 5)")
    p.add_argument("--node-ip-range", default="192.168.0.0/16", metavar="CIDR",
                   help="node i's InternalIP is the i-th address of CIDR")
    p.add_argument("--node-labels", action="append", default=[], metavar="K=V[,K=V]",
                   help="more labels to register the nodes with")
    p.add_argument("--register-with-taints", action="append", default=[],
                   metavar="KEY[=VALUE]:EFFECT[,...]",
                   help="taints to register the nodes with, e.g. "
                   "sim.cni-csi-mini.io/node=true:NoSchedule")
    p.add_argument("--max-pods", type=int, default=110, help="pods per node (default 110)")
    p.add_argument("--csi-node-endpoint", action="append", default=[], metavar="[NODE=]EP",
                   help="use this running CSI node plugin for NODE (repeatable; EP alone "
                   "with one node) instead of starting ours")
    p.add_argument("--driver-name", default="", metavar="NAME",
                   help="our node plugins' driver name (default csi-mini.example.com)")
    p.add_argument("--csi-state-dir", type=Path, metavar="DIR",
                   help="the storage array our node plugins share with the controller plugin "
                   "(its --state-dir; default STATE_DIR/storage-array)")
    p.add_argument("--csi-faults", type=Path, metavar="FILE",
                   help="our CSI node plugins inject faults by these rules")
    p.add_argument("--cni-bin-dir", type=Path, metavar="DIR",
                   help="exec the CNI plugins from DIR instead of laying ours out")
    p.add_argument("--cni-faults", type=Path, metavar="FILE",
                   help="our CNI plugins inject faults by these JSON rules")
    p.add_argument("--trace-file", type=Path, metavar="T.jsonl",
                   help="append every CSI call and CNI exec of the nodes to this file as "
                   "JSON lines (ts on the machine's monotonic clock)")
    p.add_argument("--api-wait", type=float, default=10.0, metavar="SECONDS",
                   help="how long to keep trying an unreachable API server at start "
                   "(default 10; then exit 1)")
    p.add_argument("--kube-api-qps", type=float, default=50.0,
                   help="requests/s per node (default 50, the kubelet's; the nodes of a "
                   "process share one client with the sum of their limits)")
    p.add_argument("--kube-api-burst", type=int, default=100,
                   help="burst per node (default 100)")
    p.add_argument("--node-lease-duration-seconds", type=int, default=40,
                   help="the nodes' Lease duration; renewed every quarter of it (default 40)")


def main_kubelet(args: argparse.Namespace) -> int:
    """`kubelet`: exit 0 after SIGINT/SIGTERM, 2 for bad flags or files, 1 when the API
    server cannot be reached or refuses the nodes."""
    from kubelet_sim.kubelet_process import KubeletRefused, options_from, run_kubelets

    try:
        return asyncio.run(run_kubelets(options_from(args)))
    except KubeletRefused as e:
        print(f"kubelet_sim: {e}", file=sys.stderr)
        return e.code
