"""CSI driver throughput: CreateVolume+DeleteVolume pairs/s beside the bare Probe rate.

Starts the real driver (``python -m csi_driver``) on a temp socket and state dir,
measures, for 1 client and for 8 client processes, the Probe round-trip rate and
the create+delete pair rate, first with an empty store and then with 10,000
volumes already in it.  Targets: pairs/s ≥ 25% of the Probe rate measured in the
same run, and no drop from 0 to 10,000 existing volumes.  The driver runs with its
defaults (``--durability process``: answers survive kill -9).  A second table,
for information, repeats the empty-store rows with ``--durability host``, where
every commit also waits for fdatasync.

    .venv/bin/python -m bench csi [--seconds 3] [--preload 10000] [--rounds 3]
                                  [--no-host] [--peer NAME=COMMAND] [-- extra driver flags]

``--peer`` runs the same phases against another driver, e.g. the reference
csi-driver-host-path built elsewhere:
``--peer 'hostpath=/path/hostpathplugin -endpoint {endpoint} -nodeid bench-node
-statedir {state}'``.  The empty-store rows are also measured against a floor: a bare
grpc.aio server with the same stubs that only builds the responses
(``bench/grpc_floor.py``); what it reaches is the most any Python driver on grpcio
could, and the comparison says whether that floor is above a peer at all.

Every server is started at once and each round visits them in turn, so load from
elsewhere on the machine hurts every side of a ratio alike.  Beside the rates, each
server's CPU per operation (user+system of its process, from /proc): unlike the
rates, that hardly moves with other load.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import grpc

from csi_protos import csi_pb2, csi_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
PYTHON = str(REPO / ".venv" / "bin" / "python")
VOLUME_SIZE = 1 << 20
CAP = csi_pb2.VolumeCapability(
    access_mode=csi_pb2.VolumeCapability.AccessMode(mode="SINGLE_NODE_WRITER"),
    mount=csi_pb2.VolumeCapability.MountVolume(),
)
TARGET_RATIO = 0.25


def _channel(endpoint: str) -> grpc.Channel:
    return grpc.insecure_channel(endpoint)


def _probe_loop(endpoint: str, seconds: float) -> int:
    with _channel(endpoint) as channel:
        stub = csi_pb2_grpc.IdentityStub(channel)
        stub.Probe(csi_pb2.ProbeRequest())
        count = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            stub.Probe(csi_pb2.ProbeRequest())
            count += 1
    return count


def _pair_loop(endpoint: str, seconds: float) -> int:
    prefix = uuid.uuid4().hex[:8]
    with _channel(endpoint) as channel:
        stub = csi_pb2_grpc.ControllerStub(channel)
        csi_pb2_grpc.IdentityStub(channel).Probe(csi_pb2.ProbeRequest())
        count = 0
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            created = stub.CreateVolume(csi_pb2.CreateVolumeRequest(
                name=f"bench-{prefix}-{count}", volume_capabilities=[CAP],
                capacity_range=csi_pb2.CapacityRange(required_bytes=VOLUME_SIZE),
            ))
            stub.DeleteVolume(csi_pb2.DeleteVolumeRequest(volume_id=created.volume.volume_id))
            count += 1
    return count


def _preload_loop(endpoint: str, names: list[str]) -> int:
    with _channel(endpoint) as channel:
        stub = csi_pb2_grpc.ControllerStub(channel)
        for name in names:
            stub.CreateVolume(csi_pb2.CreateVolumeRequest(
                name=name, volume_capabilities=[CAP],
                capacity_range=csi_pb2.CapacityRange(required_bytes=VOLUME_SIZE),
            ))
    return len(names)


def _worker(kind: str, endpoint: str, seconds: float, start: mp.synchronize.Event,
            out: mp.Queue) -> None:
    start.wait()
    loop = _probe_loop if kind == "probe" else _pair_loop
    out.put(loop(endpoint, seconds))


def rate(kind: str, endpoint: str, clients: int, seconds: float) -> float:
    """Operations per second summed over ``clients`` processes."""
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    out: mp.Queue = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(kind, endpoint, seconds, start, out))
             for _ in range(clients)]
    for p in procs:
        p.start()
    time.sleep(1.0)  # let every process import grpc before the clock starts
    start.set()
    total = sum(out.get() for _ in procs)
    for p in procs:
        p.join()
    return total / seconds


def preload(endpoint: str, count: int, clients: int = 8) -> None:
    names = [f"preload-{i}" for i in range(count)]
    ctx = mp.get_context("spawn")
    with ctx.Pool(clients) as pool:
        pool.starmap(_preload_loop, [(endpoint, names[i::clients]) for i in range(clients)])


@dataclass
class Driver:
    proc: subprocess.Popen[bytes]
    endpoint: str
    workdir: str

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.workdir, ignore_errors=True)


# Filesystem volumes as directories, as the reference hostpath driver keeps them (a later
# "-- --fs-backend loop" measures ext4 images instead: one mkfs per CreateVolume).
OUR_DRIVER = (f"{shlex.quote(PYTHON)} -m csi_driver --endpoint {{endpoint}} --state-dir {{state}} "
              "--node-id bench-node --capacity default=1024Ti --max-volume-size 1Ti "
              "--fs-backend dir")


def start_driver(extra: list[str], template: str = OUR_DRIVER) -> Driver:
    """Start a driver from a command ``template`` ({endpoint}: unix:// URL, {state}: an
    empty directory) and wait until its socket answers."""
    workdir = tempfile.mkdtemp(prefix="csib", dir="/tmp")
    endpoint = f"unix://{workdir}/csi.sock"
    command = [part.format(endpoint=endpoint, state=f"{workdir}/state")
               for part in shlex.split(template)]
    log = open(os.path.join(workdir, "driver.log"), "wb")  # noqa: SIM115
    proc = subprocess.Popen([*command, *extra], cwd=REPO, stderr=log,
                            stdout=subprocess.DEVNULL)
    channel = grpc.insecure_channel(endpoint)
    grpc.channel_ready_future(channel).result(timeout=30)
    channel.close()
    return Driver(proc, endpoint, workdir)


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def memory_kib(pid: int) -> tuple[int, int]:
    """(resident, peak resident) KiB of a process, from /proc/<pid>/status."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of a process, all its threads (/proc/<pid>/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


@dataclass
class Row:
    """Medians of one case: pairs/s and Probes/s, and the server's CPU per operation
    (µs; its own process only, so other load on the machine does not count)."""

    case: str
    pairs: float
    probes: float
    pair_cpu_us: float
    probe_cpu_us: float


def _measured(kind: str, driver: Driver, clients: int, seconds: float) -> tuple[float, float]:
    """(operations/s, server CPU µs per operation)."""
    cpu0 = cpu_seconds(driver.proc.pid)
    ops = rate(kind, driver.endpoint, clients, seconds)
    cpu = cpu_seconds(driver.proc.pid) - cpu0
    return ops, cpu * 1e6 / (ops * seconds) if ops else 0.0


def measure(drivers: dict[str, Driver], existing: int, rounds: int, seconds: float
            ) -> dict[str, list[Row]]:
    """Per driver, medians over ``rounds`` of Probe and pair measurements with 1 and 8
    clients.  Every round visits each driver in turn (Probe, then pairs), so a noisy
    neighbour hurts every side of each ratio alike."""
    rows: dict[str, list[Row]] = {name: [] for name in drivers}
    for clients in (1, 8):
        samples: dict[str, list[tuple[float, float, float, float]]] = {n: [] for n in drivers}
        for _ in range(rounds):
            for name, driver in drivers.items():
                probes, probe_cpu = _measured("probe", driver, clients, seconds)
                pairs, pair_cpu = _measured("pair", driver, clients, seconds)
                samples[name].append((pairs, probes, pair_cpu, probe_cpu))
        for name, values in samples.items():
            rows[name].append(Row(
                f"{clients} client{'s' if clients > 1 else ''}, {existing} volumes",
                *(_median([v[i] for v in values]) for i in range(4))))
    return rows


def print_table(rows: list[Row], judged: bool = True) -> bool:
    print(f"{'case':<26} {'pairs/s':>9} {'probe/s':>9} {'pairs/probe':>12}  "
          f"{'µs/pair':>8} {'µs/probe':>8}  {'target' if judged else ''}"
          "   (medians; CreateVolume+DeleteVolume pairs vs bare Probe round trips; "
          "µs: the server's CPU per operation)")
    ok = True
    for row in rows:
        ratio = row.pairs / row.probes if row.probes else 0.0
        hit = ratio >= TARGET_RATIO
        ok &= hit
        verdict = (f"{'≥' if hit else '<'}{TARGET_RATIO:.2f} {'ok' if hit else 'MISSED'}"
                   if judged else "")
        print(f"{row.case:<26} {row.pairs:9.0f} {row.probes:9.0f} {ratio:12.2f}  "
              f"{row.pair_cpu_us:8.0f} {row.probe_cpu_us:8.0f}  {verdict}")
    # The store-size check compares each phase's pairs/probe ratio, so load from
    # elsewhere on the machine (which moves both rates) does not read as a drop.
    by_clients: dict[str, list[Row]] = {}
    largest = rows[-1].case.split(", ")[-1] if rows else ""
    for row in rows:
        by_clients.setdefault(row.case.split(",")[0], []).append(row)
    for clients, values in by_clients.items():
        if len(values) == 2 and values[0].pairs and values[0].probes and values[1].probes:
            raw = values[1].pairs / values[0].pairs
            normalized = ((values[1].pairs / values[1].probes)
                          / (values[0].pairs / values[0].probes))
            flat = normalized >= 0.9
            ok &= flat
            print(f"{clients}: with {largest}, pairs/s x{raw:.2f} raw, "
                  f"x{normalized:.2f} relative to Probe ({'no drop' if flat else 'DROP'})")
    return ok


FLOOR = f"{shlex.quote(PYTHON)} -m bench.grpc_floor --endpoint {{endpoint}}"
OURS = "csi-mini"
HOST = "csi-mini --durability host"
FLOOR_NAME = "grpcio floor"


def compare(rows: dict[str, list[Row]], peers: list[str]) -> None:
    """Ours, the floor and each peer side by side, per case they share."""
    floor = {row.case: row for row in rows.get(FLOOR_NAME, [])}
    for index, row in enumerate(rows[OURS]):
        line = f"{row.case:<26} {OURS} {row.pairs:.0f} pairs/s"
        if row.case in floor:
            line += f", {FLOOR_NAME} {floor[row.case].pairs:.0f}"
        for peer in peers:
            peer_row = rows[peer][index]
            line += f"; = {row.pairs / peer_row.pairs:.2f} x {peer}'s {peer_row.pairs:.0f}"
            if row.case in floor:
                bare = floor[row.case].pairs
                line += (f" (floor {bare / peer_row.pairs:.2f} x: "
                         + (f"1.0x leaves a driver's own work {bare / peer_row.pairs - 1:.0%}"
                            " of the floor's time per pair)" if bare >= peer_row.pairs else
                            "grpcio alone, doing nothing per call, is below it)"))
        print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench csi", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--preload", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3, help="median of this many runs")
    parser.add_argument("--no-host", dest="host", action="store_false",
                        help="skip the --durability host table")
    parser.add_argument("--no-floor", dest="floor", action="store_false",
                        help="skip the bare grpcio server (bench/grpc_floor.py)")
    parser.add_argument("--peer", action="append", default=[], metavar="NAME=COMMAND",
                        help="also measure another CSI driver started by COMMAND, where "
                        "{endpoint} is the unix:// URL to serve and {state} an empty dir "
                        "(e.g. the reference hostpathplugin); printed for comparison")
    parser.add_argument("driver_args", nargs="*", help="extra driver flags after --")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    peers = dict(peer.partition("=")[::2] for peer in args.peer)
    drivers: dict[str, Driver] = {}
    rows: dict[str, list[Row]] = {}
    memory: dict[str, list[str]] = {}
    try:
        # Every server runs from the start, idle while another is measured.
        drivers[OURS] = start_driver(args.driver_args)
        if args.host:
            drivers[HOST] = start_driver([*args.driver_args, "--durability", "host"])
        if args.floor:
            drivers[FLOOR_NAME] = start_driver([], FLOOR)
        for name, template in peers.items():
            drivers[name] = start_driver([], template)
        for name, driver in drivers.items():
            memory[name] = [f"{memory_kib(driver.proc.pid)[0] / 1024:.0f} MiB at start"]
        sizes = (0, args.preload) if args.preload else (0,)
        for existing in sizes:
            if existing:  # only the stores: the floor keeps nothing, host is for information
                for name in (HOST, FLOOR_NAME):
                    if name in drivers:
                        drivers.pop(name).stop()
                for driver in drivers.values():
                    preload(driver.endpoint, existing)
                os.sync()  # the preload's writeback must not bill the measurement
                time.sleep(1.0)
            for name, phase in measure(drivers, existing, args.rounds, args.seconds).items():
                rows.setdefault(name, []).extend(phase)
                rss, peak = memory_kib(drivers[name].proc.pid)
                memory[name].append(f"{rss / 1024:.0f} MiB after the {existing}-volume runs "
                                    f"(peak so far {peak / 1024:.0f} MiB)")
    finally:
        for driver in drivers.values():
            driver.stop()
    ok = print_table(rows[OURS])
    print("driver resident memory: " + "; ".join(memory[OURS]))
    if HOST in rows:
        print("\nfor information, --durability host (every commit also waits for fdatasync):")
        print_table(rows[HOST], judged=False)
    if FLOOR_NAME in rows:
        print(f"\nfloor, {FLOOR_NAME}: a bare grpc.aio server with the same stubs, no "
              "interceptor, no state (bench/grpc_floor.py)")
        print_table(rows[FLOOR_NAME], judged=False)
    for name, template in peers.items():
        print(f"\nfor comparison, peer {name}: {template}")
        print_table(rows[name], judged=False)
        print(f"{name} resident memory: " + "; ".join(memory[name]))
    if peers or FLOOR_NAME in rows:
        print()
        compare(rows, list(peers))
    print(f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"({os.cpu_count()} CPUs; other work on the machine moves the rates, not the "
          "CPU per operation)")
    return 0 if ok else 1

if __name__ == "__main__":
    sys.exit(main())
