"""``python -m kubelet_sim conformance cni --cni-bin-dir DIR --conflist FILE
[--dataplane emulated|linux] [--junit FILE] [--focus RE] [--skip RE]``: the table on
stdout, JUnit XML when asked, exit status 1 when a case failed."""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from kubelet_sim.conformance.cni import CniTarget, run_cni_suite
from kubelet_sim.conformance.csi import CsiTarget, run_csi_suite
from kubelet_sim.conformance.report import Report


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conformance = commands.add_parser(
        "conformance", help="check a CNI plugin list or a CSI driver through the lifecycle "
        "Kubernetes drives")
    suites = conformance.add_subparsers(dest="suite", required=True)
    cni = suites.add_parser("cni", help="ADD/CHECK/DEL/STATUS/GC as a container runtime "
                            "runs them, in every cniVersion the plugins claim")
    cni.add_argument("--cni-bin-dir", type=Path, required=True, metavar="DIR")
    cni.add_argument("--conflist", type=Path, required=True, metavar="FILE")
    cni.add_argument("--dataplane", choices=("emulated", "linux"), default="emulated",
                     help="linux (root): each test container gets a real network namespace")
    csi = suites.add_parser("csi", help="a CSI driver under the simulated cluster, through "
                            "the whole lifecycle (default: our own driver)")
    csi.add_argument("--controller-endpoint", default="", metavar="EP",
                     help="the driver's controller plugin (unix:///path); default: start ours")
    csi.add_argument("--node-endpoint", action="append", default=[], metavar="NODE=EP",
                     help="the driver's node plugin for NODE (repeatable)")
    csi.add_argument("--storage-class-params", action="append", default=[], metavar="K=V",
                     help="a StorageClass parameter for the volumes it makes (repeatable)")
    for suite in (cni, csi):
        suite.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
        suite.add_argument("--focus", default="", metavar="REGEX",
                           help="run only the cases whose suite/case matches")
        suite.add_argument("--skip", default="", metavar="REGEX",
                           help="leave out the cases whose suite/case matches")


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs = dict(item.split("=", 1) for item in items if "=" in item)
    if len(pairs) != len(items):
        raise SystemExit(f"kubelet_sim conformance: {flag} wants KEY=VALUE")
    return pairs


def run(args: argparse.Namespace) -> int:
    report = Report(focus=args.focus, skip=args.skip)
    if args.suite == "csi":
        nodes = _pairs(args.node_endpoint, "--node-endpoint")
        if bool(nodes) != bool(args.controller_endpoint):
            print("kubelet_sim conformance: give both --controller-endpoint and "
                  "--node-endpoint, or neither (our driver)")
            return 2
        asyncio.run(run_csi_suite(CsiTarget(args.controller_endpoint, nodes, _pairs(
            args.storage_class_params, "--storage-class-params")), report))
    else:
        if args.dataplane == "linux" and os.geteuid() != 0:
            print("kubelet_sim conformance: --dataplane linux needs root (network namespaces)")
            return 2
        if not args.conflist.is_file():
            print(f"kubelet_sim conformance: no such network config: {args.conflist}")
            return 2
        run_cni_suite(CniTarget(args.cni_bin_dir, args.conflist, args.dataplane), report)
    print(report.table())
    if args.junit is not None:
        report.write_junit(args.junit)
    return 1 if report.failed else 0
