"""Profile the CSI driver under CreateVolume+DeleteVolume load: cProfile around the
driver's event loop, run in this process (the driver's own code is unchanged; the
load comes from ``bench csi``'s client processes).

    .venv/bin/python -m bench.csi_profile [--clients 1] [--seconds 5] [--kind pair]
                                          [--top 40] [--sort tottime] [-- driver flags]

Prints the pairs/s reached under the profiler, the driver's CPU seconds per
operation (user+sys of this process, all its threads) and the top functions.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import shutil
import tempfile
import time

from bench.csi_bench import rate
from csi_driver.cli import parse_config
from csi_driver.server.server import create_server

DRIVER_FLAGS = ["--node-id", "bench-node", "--capacity", "default=1024Ti",
                "--max-volume-size", "1Ti", "--fs-backend", "dir"]


async def _profiled(args: argparse.Namespace, workdir: str, profiler: cProfile.Profile
                    ) -> tuple[float, float]:
    endpoint = f"unix://{workdir}/csi.sock"
    cfg = parse_config(["--endpoint", endpoint, "--state-dir", f"{workdir}/state",
                        *DRIVER_FLAGS, *args.driver_args])
    log = open(os.path.join(workdir, "driver.log"), "w")  # noqa: SIM115
    driver = create_server(cfg, log_stream=log)
    await driver.start()
    try:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, rate, args.kind, endpoint, 1, 1.0)  # warm up
        cpu0 = os.times()
        if not args.cpu_only:
            profiler.enable()
        ops = await loop.run_in_executor(None, rate, args.kind, endpoint, args.clients,
                                         args.seconds)
        profiler.disable()
        cpu1 = os.times()
        cpu = (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
        return ops, cpu / (ops * args.seconds) if ops else 0.0
    finally:
        await driver.stop()
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.csi_profile", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--kind", choices=("pair", "probe"), default="pair")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument("--cpu-only", action="store_true",
                        help="no profiler: only the rate and the driver's CPU per operation")
    parser.add_argument("--dump", default="", help="also write the raw stats to this file")
    parser.add_argument("driver_args", nargs="*", help="extra driver flags after --")
    args = parser.parse_args(argv)
    os.umask(0o077)
    workdir = tempfile.mkdtemp(prefix="csip", dir="/tmp")
    profiler = cProfile.Profile()
    try:
        started = time.perf_counter()
        ops, cpu_per_op = asyncio.run(_profiled(args, workdir, profiler))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.kind}s/s under the profiler: {ops:.0f} ({args.clients} clients); driver CPU "
          f"{cpu_per_op * 1e6:.0f} µs per {args.kind} ({time.perf_counter() - started:.0f} s)")
    if args.dump:
        profiler.dump_stats(args.dump)
    if args.cpu_only:
        return 0
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
