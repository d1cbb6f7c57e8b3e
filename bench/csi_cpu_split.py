"""Where the CSI driver's CPU goes per CreateVolume and DeleteVolume: the driver runs in
this process with thread-CPU meters around its parts, under ``bench csi``'s client
processes.

    .venv/bin/python -m bench.csi_cpu_split [--clients 1] [--seconds 5] [-- driver flags]

Each meter adds the CPU time (``time.thread_time``, so other load on the machine does
not count) its thread spent inside one part: the interceptor's checks before the
servicer and its log line after, the servicer (request → domain arguments → response),
the domain's create/delete, and inside those SQLite statements and file-system calls;
the reaper thread's removals too.  What is left of the process's CPU is grpcio's core
(transport, HTTP/2, (de)serialisation, its threads) and asyncio.  A meter costs about
a microsecond of its own, counted in the part it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from bench.csi_bench import rate
from csi_driver.cli import parse_config
from csi_driver.domain.volumes import Volumes
from csi_driver.server.interceptors import CsiInterceptor
from csi_driver.server.server import create_server
from csi_driver.service.controller import ControllerServicer
from csi_driver.state import volume_data
from csi_driver.state.db import Database

DRIVER_FLAGS = ["--node-id", "bench-node", "--capacity", "default=1024Ti",
                "--max-volume-size", "1Ti", "--fs-backend", "dir"]
_now = time.thread_time_ns


class Meters:
    def __init__(self) -> None:
        self.ns: dict[str, int] = {}
        self.calls: dict[str, int] = {}

    @contextmanager
    def part(self, name: str) -> Iterator[None]:
        start = _now()
        try:
            yield
        finally:
            self.ns[name] = self.ns.get(name, 0) + _now() - start
            self.calls[name] = self.calls.get(name, 0) + 1

    def reset(self) -> None:
        self.ns.clear()
        self.calls.clear()

    def sync(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def metered(*args: Any, **kwargs: Any) -> Any:
            with self.part(name):
                return fn(*args, **kwargs)

        return metered

    def coroutine(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """An ``async def``'s CPU; exact while it does not suspend (with
        ``--durability process`` CreateVolume and DeleteVolume never do)."""

        @functools.wraps(fn)
        async def metered(*args: Any, **kwargs: Any) -> Any:
            with self.part(name):
                return await fn(*args, **kwargs)

        return metered


class _MeteredConnection:
    """A sqlite3 connection whose ``execute`` (the statement's step, in C) is metered."""

    def __init__(self, conn: sqlite3.Connection, meters: Meters) -> None:
        self._conn = conn
        self._meters = meters

    def execute(self, sql: str, args: Any = ()) -> sqlite3.Cursor:
        with self._meters.part("sqlite"):
            return self._conn.execute(sql, args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def install(meters: Meters) -> None:
    """Meter the parts (class attributes, so before the server is built)."""
    CsiInterceptor._admit = meters.sync("interceptor: checks", CsiInterceptor._admit)  # type: ignore[method-assign]
    CsiInterceptor._write_log = meters.sync(  # type: ignore[method-assign]
        "interceptor: log line", CsiInterceptor._write_log)
    for rpc in ("CreateVolume", "DeleteVolume"):
        setattr(ControllerServicer, rpc,
                meters.coroutine(f"servicer {rpc}", getattr(ControllerServicer, rpc)))
    Volumes.create_volume = meters.sync("domain create", Volumes.create_volume)  # type: ignore[method-assign]
    Volumes.delete_volume = meters.sync("domain delete", Volumes.delete_volume)  # type: ignore[method-assign]
    volume_data.VolumeData.create_volume = meters.sync(  # type: ignore[method-assign]
        "fs: mkdir", volume_data.VolumeData.create_volume)
    volume_data.VolumeData.delete_volume = meters.sync(  # type: ignore[method-assign]
        "fs: rename away", volume_data.VolumeData.delete_volume)
    volume_data.VolumeData._remove = staticmethod(  # type: ignore[method-assign]
        meters.sync("fs: rmdir (reaper thread)", volume_data.VolumeData._remove))
    original_init = Database.__init__

    def init(self: Database, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self._conn = _MeteredConnection(self._conn, meters)  # type: ignore[assignment]
        self._read = _MeteredConnection(self._read, meters)  # type: ignore[assignment]

    Database.__init__ = init  # type: ignore[method-assign]


async def _run(args: argparse.Namespace, workdir: str, meters: Meters) -> tuple[float, float]:
    endpoint = f"unix://{workdir}/csi.sock"
    cfg = parse_config(["--endpoint", endpoint, "--state-dir", f"{workdir}/state",
                        *DRIVER_FLAGS, *args.driver_args])
    log = open(os.path.join(workdir, "driver.log"), "w", buffering=1)  # noqa: SIM115
    driver = create_server(cfg, log_stream=log)
    await driver.start()
    try:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, rate, "pair", endpoint, 1, 1.0)  # warm up
        meters.reset()
        cpu0 = os.times()
        pairs = await loop.run_in_executor(None, rate, "pair", endpoint, args.clients,
                                           args.seconds)
        cpu1 = os.times()
        return pairs * args.seconds, (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system)
    finally:
        await driver.stop()
        log.close()


def report(meters: Meters, pairs: float, cpu: float) -> None:
    us = {name: ns / 1e3 / pairs for name, ns in meters.ns.items()}
    total = cpu * 1e6 / pairs

    def get(name: str) -> float:
        return us.get(name, 0.0)

    fs = get("fs: mkdir") + get("fs: rename away")
    domain = get("domain create") + get("domain delete")
    servicer = get("servicer CreateVolume") + get("servicer DeleteVolume")
    interceptor = get("interceptor: checks") + get("interceptor: log line")
    rows = [
        ("interceptor: checks (validation, secrets, faults)", get("interceptor: checks")),
        ("interceptor: log line (JSON, write)", get("interceptor: log line")),
        ("servicer: request/response, in-flight guard", servicer - domain),
        ("domain: Python", domain - get("sqlite") - fs),
        ("SQLite statements", get("sqlite")),
        ("file system (mkdir, rename)", fs),
        ("file system, reaper thread (rmdir)", get("fs: rmdir (reaper thread)")),
        ("grpcio core + asyncio (the rest)",
         total - interceptor - servicer - get("fs: rmdir (reaper thread)")),
    ]
    print(f"{pairs:.0f} pairs; driver CPU {total:.0f} µs per pair (user+sys, all threads)")
    for name, value in rows:
        print(f"  {name:<52} {value:7.0f} µs  {value / total:5.1%}")
    per_call = {name: meters.calls[name] / pairs for name in meters.calls}
    print("  calls per pair: " + ", ".join(f"{n} {c:.1f}" for n, c in sorted(per_call.items())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.csi_cpu_split",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("driver_args", nargs="*", help="extra driver flags after --")
    args = parser.parse_args(argv)
    os.umask(0o077)
    meters = Meters()
    install(meters)
    workdir = tempfile.mkdtemp(prefix="csis", dir="/tmp")
    try:
        pairs, cpu = asyncio.run(_run(args, workdir, meters))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.clients} client(s)")
    report(meters, pairs, cpu)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
