"""``python -m bench [csi|cni|podman|cluster|lists|api-abuse] [args]``: run one benchmark, or
every one with no name."""

from __future__ import annotations

import importlib
import sys

BENCHES = {"csi": "bench.csi_bench", "cni": "bench.cni_bench", "podman": "bench.podman_bench",
           "cluster": "bench.cluster_bench", "lists": "bench.lists_bench",
           "api-abuse": "bench.api_abuse_bench"}


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    names = [args.pop(0)] if args and args[0] in BENCHES else list(BENCHES)
    status = 0
    for name in names:
        print(f"== {name} ==")
        status |= importlib.import_module(BENCHES[name]).main(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
