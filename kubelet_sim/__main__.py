"""``python -m kubelet_sim``: ``demo [N]`` runs the scenarios; ``apply FILE`` applies manifests."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from pathlib import Path

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
    apply = sub.add_parser("apply", help="apply manifests to a fresh cluster and report")
    apply.add_argument("files", nargs="+", type=Path)
    _common(apply)
    apply.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    apply.add_argument("--trace-file", type=Path, help="also write the trace as JSON lines")
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dataplane", choices=("emulated", "linux"), default="emulated",
                   help="linux (root only): real network namespaces, bridges and veth pairs")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.dataplane == "linux" and os.geteuid() != 0:
        print("kubelet_sim: --dataplane linux needs root (network namespaces)", file=sys.stderr)
        return 2
    if args.command == "demo":
        bad = [n for n in args.scenario if not 1 <= n <= len(SCENARIOS)]
        if bad:
            print(f"kubelet_sim: no scenario {bad[0]} (1-{len(SCENARIOS)})", file=sys.stderr)
            return 2
        return main_demo(DemoOptions(dataplane=args.dataplane, show_trace=not args.no_trace),
                         args.scenario or None)
    from kubelet_sim.apply import apply_files

    return asyncio.run(apply_files(args.files, nodes=args.nodes, dataplane=args.dataplane,
                                   trace_file=args.trace_file))


if __name__ == "__main__":
    sys.exit(main())
