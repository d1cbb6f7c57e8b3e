"""``python -m kubelet_sim conformance cni --cni-bin-dir DIR --conflist FILE
[--dataplane emulated|linux] [--junit FILE] [--focus RE] [--skip RE] [--compare-to ours
[--fail-on-difference]]`` (and ``conformance csi [--controller-endpoint EP
--node-endpoint NODE=EP ... [--driver-name NAME]] [--storage-class-params K=V ...]
[--csidriver FILE]`` with
the same common flags): the table on stdout, JUnit
XML when asked, exit status 1 when a case of the target failed. ``--compare-to ours``
runs the cases again against our own plugins (same list, same dataplane) or our own
driver (on the target's nodes, without its StorageClass parameters) and prints a second
table, DIFFERENCES; differences alone leave the exit status alone unless
``--fail-on-difference``."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from kubelet_sim.conformance.cni import CniTarget, run_cni_suite
from kubelet_sim.conformance.compare import (
    differences,
    differences_table,
    install_our_cni_plugins,
)
from kubelet_sim.conformance.csi import CsiTarget, WrongDriver, run_csi_suite
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
    csi.add_argument("--driver-name", default="", metavar="NAME",
                     help="the driver expected at the endpoints (GetPluginInfo's name); "
                     "another one stops the suite")
    csi.add_argument("--storage-class-params", action="append", default=[], metavar="K=V",
                     help="a StorageClass parameter for the volumes it makes (repeatable)")
    csi.add_argument("--csidriver", type=Path, default=None, metavar="FILE",
                     help="the driver's CSIDriver object (YAML): installed in place of the "
                     "suite's, and the cases about its fields run")
    for suite in (cni, csi):
        suite.add_argument("--junit", type=Path, metavar="FILE", help="also write JUnit XML")
        suite.add_argument("--focus", default="", metavar="REGEX",
                           help="run only the cases whose suite/case matches")
        suite.add_argument("--skip", default="", metavar="REGEX",
                           help="leave out the cases whose suite/case matches")
        suite.add_argument("--compare-to", choices=("ours",), default=None,
                           help="run the cases against our own plugins/driver too and print "
                           "where the target behaves differently")
        suite.add_argument("--fail-on-difference", action="store_true",
                           help="with --compare-to: exit 1 when anything differs")


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    pairs = dict(item.split("=", 1) for item in items if "=" in item)
    if len(pairs) != len(items):
        raise SystemExit(f"kubelet_sim conformance: {flag} wants KEY=VALUE")
    return pairs


def load_csidriver(path: Path) -> dict[str, Any]:
    """The ``spec`` of the CSIDriver object in ``path`` (YAML); ValueError when it is not
    one."""
    try:
        obj = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(str(err)) from None
    if not isinstance(obj, dict) or obj.get("kind") != "CSIDriver" \
            or not isinstance(obj.get("spec"), dict):
        raise ValueError(f"{path} holds no CSIDriver object with a spec")
    return dict(obj["spec"])


def _run_csi(args: argparse.Namespace, report: Report, ours: Report | None) -> int:
    nodes = _pairs(args.node_endpoint, "--node-endpoint")
    if bool(nodes) != bool(args.controller_endpoint):
        print("kubelet_sim conformance: give both --controller-endpoint and "
              "--node-endpoint, or neither (our driver)")
        return 2
    if args.driver_name and not nodes:
        print("kubelet_sim conformance: --driver-name names the driver at the endpoints "
              "(ours is csi-mini.example.com)")
        return 2
    try:
        csidriver = load_csidriver(args.csidriver) if args.csidriver else None
    except ValueError as err:
        print(f"kubelet_sim conformance: --csidriver: {err}")
        return 2
    target = CsiTarget(args.controller_endpoint, nodes,
                       _pairs(args.storage_class_params, "--storage-class-params"),
                       driver_name=args.driver_name, csidriver=csidriver)
    try:
        asyncio.run(run_csi_suite(target, report))
    except WrongDriver as err:
        print(f"kubelet_sim conformance: {err}")
        return 2
    if ours is not None:
        asyncio.run(run_csi_suite(CsiTarget(node_names=tuple(sorted(nodes)),
                                            csidriver=csidriver), ours))
    return 0


def _run_cni(args: argparse.Namespace, report: Report, ours: Report | None) -> int:
    if args.dataplane == "linux" and os.geteuid() != 0:
        print("kubelet_sim conformance: --dataplane linux needs root (network namespaces)")
        return 2
    if not args.conflist.is_file():
        print(f"kubelet_sim conformance: no such network config: {args.conflist}")
        return 2
    target = CniTarget(args.cni_bin_dir, args.conflist, args.dataplane)
    run_cni_suite(target, report)
    if ours is not None:
        bin_dir = Path(tempfile.mkdtemp(prefix="cni-ours-"))
        try:
            try:
                install_our_cni_plugins(bin_dir)
            except RuntimeError as err:
                print(f"kubelet_sim conformance: --compare-to ours: {err}")
                return 2
            run_cni_suite(replace(target, bin_dir=bin_dir), ours)
        finally:
            shutil.rmtree(bin_dir, ignore_errors=True)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.fail_on_difference and not args.compare_to:
        print("kubelet_sim conformance: --fail-on-difference goes with --compare-to ours")
        return 2
    report = Report(focus=args.focus, skip=args.skip)
    ours = Report(focus=args.focus, skip=args.skip) if args.compare_to else None
    status = (_run_csi if args.suite == "csi" else _run_cni)(args, report, ours)
    if status:
        return status
    print(report.table())
    found = []
    if ours is not None:
        found = differences(report, ours)
        print()
        print(differences_table(found, report, ours))
    if args.junit is not None:
        report.write_junit(args.junit)
    return 1 if report.failed or (args.fail_on_difference and found) else 0
