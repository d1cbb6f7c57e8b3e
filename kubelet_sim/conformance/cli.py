"""``python -m kubelet_sim conformance cni --cni-bin-dir DIR --conflist FILE
[--dataplane emulated|linux] [--junit FILE] [--focus RE] [--skip RE]``: the table on
stdout, JUnit XML when asked, exit status 1 when a case failed."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from kubelet_sim.conformance.cni import CniTarget, run_cni_suite
from kubelet_sim.conformance.report import Report


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conformance = commands.add_parser(
        "conformance", help="check a CNI plugin list through the runtime's lifecycle")
    suites = conformance.add_subparsers(dest="suite", required=True)
    cni = suites.add_parser("cni", help="ADD/CHECK/DEL/STATUS/GC as a container runtime "
                            "runs them, in every cniVersion the plugins claim")
    cni.add_argument("--cni-bin-dir", type=Path, required=True, metavar="DIR")
    cni.add_argument("--conflist", type=Path, required=True, metavar="FILE")
    cni.add_argument("--dataplane", choices=("emulated", "linux"), default="emulated",
                     help="linux (root): each test container gets a real network namespace")
    cni.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
    cni.add_argument("--focus", default="", metavar="REGEX",
                     help="run only the cases whose suite/case matches")
    cni.add_argument("--skip", default="", metavar="REGEX",
                     help="leave out the cases whose suite/case matches")


def run(args: argparse.Namespace) -> int:
    if args.dataplane == "linux" and os.geteuid() != 0:
        print("kubelet_sim conformance: --dataplane linux needs root (network namespaces)")
        return 2
    report = Report(focus=args.focus, skip=args.skip)
    if not args.conflist.is_file():
        print(f"kubelet_sim conformance: no such network config: {args.conflist}")
        return 2
    run_cni_suite(CniTarget(args.cni_bin_dir, args.conflist, args.dataplane), report)
    print(report.table())
    if args.junit is not None:
        report.write_junit(args.junit)
    return 1 if report.failed else 0
