"""CNI exec benchmark: ADD+DEL cycles as a runtime runs them, beside the interpreter floor.

Rows (median wall time of one cycle, each command a fresh process exec'd from
the CNI bin dir laid out by ``python -m cni_plugin.install``):

- the floor: ``<venv>/bin/python -I -S -c pass`` (one process start);
- the floor plus importing emu-host-local's / emu-bridge's modules, without
  running a command (what the exec path's imports cost);
- emu-loopback ADD+DEL (2 starts);
- emu-host-local ADD+DEL (2 starts);
- the reference /usr/lib/cni/host-local ADD+DEL, when installed (2 starts);
- emu-bridge (emulated dataplane) delegating to emu-host-local, ADD+DEL (4 starts);
- the same two cycles called in-process (0 starts: plugin_main with injected
  env/stdin/stdout, the bridge's IPAM exec replaced by an in-process call),
  i.e. the work of a cycle without any start-up, modules already imported.

Each exec'd row also gives the peak resident set of any process of one cycle
(measured by GNU time, /usr/bin/time, so a plugin's delegated IPAM counts; "-"
without it), beside the floor's.

Ratios are given to the single floor and to the floor times the number of
process starts in the cycle (what the cycle would cost if each start were free
of everything but the interpreter). The per-start ratio is the one that
matters for a cycle of several execs; the target is 2x. Cases are timed
interleaved, one cycle of each in turn, so background load weighs on all rows
alike.

Then, as root beside the reference Go plugins, the linux-dataplane rows (ADD and DEL
timed apart, a fresh netns per cycle, ratios to the reference): see bench/cni_linux.py.

Run: ``.venv/bin/python -m bench cni [--cycles N] [--linux-cycles N] [--only-linux]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from bench import cni_linux

REFERENCE_HOST_LOCAL = "/usr/lib/cni/host-local"
PROJECT_ROOT = Path(__file__).resolve().parent.parent
PLUGIN_MODULES = {"emu-host-local": "cni_plugin.host_local", "emu-bridge": "cni_plugin.bridge",
                  "emu-loopback": "cni_plugin.loopback"}
TARGET_PER_START = 2.0


class Row:
    def __init__(self, name: str, starts: int, median_ms: float | None, note: str = "",
                 peak_kib: int = 0) -> None:
        self.name = name
        self.starts = starts
        self.median_ms = median_ms
        self.note = note
        self.peak_kib = peak_kib  # largest resident set of any process of one cycle


def venv_python() -> str:
    candidate = Path(sys.prefix) / "bin" / "python"
    return str(candidate if candidate.exists() else Path(sys.executable))


def install_plugins(bin_dir: Path) -> str:
    """Lay the plugins into bin_dir; return how it was done."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    if importlib.util.find_spec("cni_plugin.install") is not None:
        subprocess.run([venv_python(), "-m", "cni_plugin.install", str(bin_dir)], check=True,
                       capture_output=True)
        return "python -m cni_plugin.install"
    # Until the installer exists: the same shape it is specified to produce.
    for name, module in PLUGIN_MODULES.items():
        script = bin_dir / name
        script.write_text(f"#!{venv_python()} -IS\nimport sys\n"
                          f"sys.path.insert(0, {str(PROJECT_ROOT)!r})\n"
                          f"from {module} import main\nmain()\n")
        script.chmod(0o755)
    return "bench fallback scripts (cni_plugin.install not available)"


def cni_env(command: str, container_id: str, bin_dir: Path, netns: str) -> dict[str, str]:
    return {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
            "CNI_IFNAME": "eth0", "CNI_PATH": f"{bin_dir}:/usr/lib/cni", "PATH": "/usr/bin:/bin"}


GNU_TIME = "/usr/bin/time"  # Debian package "time"


class PeakMemory:
    """While ``on``, every exec runs under GNU time, which reaps it with wait4 and
    reports the largest resident set of the process or anything it ran and waited
    for (a plugin's delegated IPAM).  Reaping the child ourselves would not do: the
    kernel counts the forking Python's memory into a child's peak until it execs."""

    on = False
    kib = 0

    @staticmethod
    def available() -> bool:
        return os.access(GNU_TIME, os.X_OK)


def run_process(argv: list[str], data: bytes = b"",
                env: dict[str, str] | None = None) -> tuple[int, bytes]:
    """Run argv with data on stdin; (exit status, stdout + stderr)."""
    if not PeakMemory.on:
        done = subprocess.run(argv, input=data, env=env, capture_output=True, check=False)
        return done.returncode, done.stdout + done.stderr
    with tempfile.NamedTemporaryFile("r") as report:
        done = subprocess.run([GNU_TIME, "-f", "%M", "-o", report.name, *argv], input=data,
                              env=env, capture_output=True, check=False)
        lines = [line for line in report.read().split() if line.isdigit()]
    if lines:
        PeakMemory.kib = max(PeakMemory.kib, int(lines[-1]))
    return done.returncode, done.stdout + done.stderr


def exec_plugin(plugin: str, command: str, conf: bytes, env: dict[str, str]) -> None:
    status, output = run_process([plugin], conf, env)
    if status != 0:
        raise RuntimeError(f"{os.path.basename(plugin)} {command} failed: "
                           f"{output.decode().strip()}")


class Case:
    """One benchmarked cycle: a callable doing one cycle (index -> None)."""

    def __init__(self, name: str, starts: int, cycle: Callable[[int], None]) -> None:
        self.name = name
        self.starts = starts
        self.cycle = cycle
        self.samples: list[float] = []
        self.note = ""
        self.peak_kib = 0


def interpreter_case(name: str, code: str) -> Case:
    cmd = [venv_python(), "-I", "-S", "-c", code]

    def cycle(_: int) -> None:
        status, output = run_process(cmd)
        if status != 0:
            raise RuntimeError(f"{name} failed: {output.decode().strip()}")

    return Case(name, 1, cycle)


def add_del_case(name: str, plugin: str, conf: dict[str, object], starts: int,
                 bin_dir: Path, netns: str) -> Case:
    data = json.dumps(conf).encode()

    def cycle(i: int) -> None:
        cid = f"bench{i + 2}"
        exec_plugin(plugin, "ADD", data, cni_env("ADD", cid, bin_dir, netns))
        exec_plugin(plugin, "DEL", data, cni_env("DEL", cid, bin_dir, netns))

    case = Case(name, starts, cycle)
    if not os.access(plugin, os.X_OK):
        case.note = "not available (not installed)"
    return case


class InProcess:
    """Our plugins called through plugin_main in this process, as the skel tests do."""

    def __init__(self) -> None:
        from cni_plugin import bridge, host_local

        self.modules = {"emu-host-local": host_local, "emu-bridge": bridge}

    def run(self, plugin: str, conf: bytes, env: dict[str, str]) -> bytes:
        from cni_plugin.skel import plugin_main

        module = self.modules[plugin]
        out = io.StringIO()
        status = plugin_main(module.HANDLERS, about="", known_args=module.KNOWN_ARGS,
                             getenv=env.get, stdin=io.BytesIO(conf), stdout=out,
                             stderr=io.StringIO())
        if status != 0:
            raise RuntimeError(f"{plugin} {env['CNI_COMMAND']} in-process failed: "
                               f"{out.getvalue().strip()}")
        return out.getvalue().encode()

    def exec_in_process(self, plugin_path: str, stdin_data: bytes,
                        env: Mapping[str, str]) -> bytes:
        """Stands in for invoke.exec_plugin: the delegated IPAM runs in this process."""
        return self.run(os.path.basename(plugin_path), stdin_data, dict(env))


def in_process_case(name: str, plugin: str, conf: dict[str, object], bin_dir: Path,
                    netns: str) -> Case:
    data = json.dumps(conf).encode()
    runner = InProcess()

    def cycle(i: int) -> None:
        from cni_plugin import invoke

        cid = f"inproc{i + 2}"
        real_exec = invoke.exec_plugin
        invoke.exec_plugin = runner.exec_in_process
        try:
            for command in ("ADD", "DEL"):
                runner.run(plugin, data, cni_env(command, cid, bin_dir, netns))
        finally:
            invoke.exec_plugin = real_exec

    return Case(name, 0, cycle)


def measure(cases: list[Case], cycles: int) -> list[Row]:
    """Warm each case once, then time them interleaved so load hits all alike."""
    live: list[Case] = []
    for case in cases:
        if case.note:
            continue
        try:
            case.cycle(-1)
        except RuntimeError as exc:
            case.note = f"not available: {exc}"
            continue
        live.append(case)
    for i in range(cycles):
        for case in live:
            start = time.perf_counter()
            case.cycle(i)
            case.samples.append((time.perf_counter() - start) * 1000)
    # One more cycle of each exec'd case, untimed, under GNU time for peak memory.
    PeakMemory.on = PeakMemory.available()
    try:
        for case in live:
            if case.starts:
                PeakMemory.kib = 0
                case.cycle(cycles)
                case.peak_kib = PeakMemory.kib
    finally:
        PeakMemory.on = False
    return [Row(c.name, c.starts, statistics.median(c.samples) if c.samples else None, c.note,
                c.peak_kib) for c in cases]


def format_table(rows: list[Row], floor_ms: float, floor_kib: int) -> str:
    header = (f"{'cycle':<58} {'starts':>6} {'median ms':>10} {'x floor':>8} "
              f"{'x floor*starts':>15} {'peak RSS MiB':>13} {'x floor':>8}")
    lines = [header, "-" * len(header)]
    for row in rows:
        if row.median_ms is None:
            lines.append(f"{row.name:<58} {row.starts:>6} {'-':>10} {'-':>8} {'-':>15} "
                         f"{'-':>13} {'-':>8}  {row.note}")
            continue
        per_start = (f"{row.median_ms / (floor_ms * row.starts):>15.2f}" if row.starts
                     else f"{'-':>15}")
        memory = (f"{row.peak_kib / 1024:>13.1f} {row.peak_kib / floor_kib:>8.2f}"
                  if row.peak_kib and floor_kib else f"{'-':>13} {'-':>8}")
        lines.append(f"{row.name:<58} {row.starts:>6} {row.median_ms:>10.2f} "
                     f"{row.median_ms / floor_ms:>8.2f} {per_start} {memory}  "
                     f"{row.note}".rstrip())
    return "\n".join(lines)


def verdicts(rows: list[Row], floor_ms: float) -> list[str]:
    """Per exec'd cycle of ours: the per-start ratio against the target, and how much of
    the cycle is work (its in-process twin) rather than start-up."""
    by_name = {row.name: row for row in rows}
    lines = [f"target: each process start within {TARGET_PER_START:g}x the floor "
             f"({TARGET_PER_START * floor_ms:.2f} ms)"]
    for name, twin in IN_PROCESS_TWINS.items():
        row, work = by_name.get(name), by_name.get(twin)
        if row is None or row.median_ms is None:
            continue
        ratio = row.median_ms / (floor_ms * row.starts)
        verdict = "met" if ratio <= TARGET_PER_START else "NOT met"
        line = (f"  {name}: {ratio:.2f}x floor per start ({row.starts} starts) -> {verdict}")
        if work is not None and work.median_ms is not None:
            line += (f"; work in-process {work.median_ms:.2f} ms, start-up and process "
                     f"plumbing {row.median_ms - work.median_ms:.2f} ms "
                     f"({(row.median_ms - work.median_ms) / row.median_ms:.0%})")
        lines.append(line)
    return lines


HOST_LOCAL_CYCLE = "emu-host-local ADD+DEL"
BRIDGE_CYCLE = "emu-bridge + emu-host-local ADD+DEL (emulated)"
IN_PROCESS_TWINS = {
    "emu-loopback ADD+DEL": "",
    HOST_LOCAL_CYCLE: f"{HOST_LOCAL_CYCLE}, in-process",
    BRIDGE_CYCLE: f"{BRIDGE_CYCLE}, in-process",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cni_bench", description="CNI ADD+DEL exec benchmark")
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--linux-cycles", type=int, default=20,
                        help="cycles of the linux-dataplane rows (root only; 0: leave out)")
    parser.add_argument("--only-linux", action="store_true",
                        help="print only the linux-dataplane rows")
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cnibench") as tmp:
        root = Path(tmp)
        bin_dir = root / "bin"
        how = install_plugins(bin_dir)
        if opts.only_linux:
            print(cni_linux.report(root / "linux", bin_dir, opts.linux_cycles))
            return 0
        netns = str(root / "netns")
        Path(netns).touch()
        ipam = {"type": "emu-host-local", "subnet": "10.88.0.0/16",
                "dataDir": str(root / "ipam")}
        host_local_conf: dict[str, object] = {"cniVersion": "1.0.0", "name": "bench",
                                               "type": "emu-bridge", "ipam": ipam}
        ref_conf = {**host_local_conf, "ipam": {**ipam, "type": "host-local",
                                                 "dataDir": str(root / "ref-ipam")}}
        bridge_conf = {"cniVersion": "1.1.0", "name": "bench", "type": "emu-bridge",
                       "bridge": "cnibench0", "isGateway": True,
                       "dataplaneDir": str(root / "dataplane"), "ipam": ipam}
        loopback_conf: dict[str, object] = {"cniVersion": "1.1.0", "name": "bench",
                                            "type": "emu-loopback",
                                            "dataplaneDir": str(root / "dataplane-lo")}
        # In-process twins keep their own state, so the exec'd cycles are not disturbed.
        inproc_ipam = {**ipam, "dataDir": str(root / "ipam-inproc")}
        inproc_host_local = {**host_local_conf, "ipam": inproc_ipam}
        inproc_bridge = {**bridge_conf, "ipam": inproc_ipam,
                         "dataplaneDir": str(root / "dataplane-inproc")}

        def importing(module: str) -> str:
            return f"import sys; sys.path.insert(0, {str(PROJECT_ROOT)!r}); import {module}"

        cases = [
            interpreter_case("floor: python -I -S -c pass", "pass"),
            interpreter_case("  (import of emu-host-local's modules only)",
                             importing("cni_plugin.host_local")),
            interpreter_case("  (import of emu-bridge's modules only)",
                             importing("cni_plugin.bridge")),
            add_del_case("emu-loopback ADD+DEL", str(bin_dir / "emu-loopback"),
                         loopback_conf, 2, bin_dir, netns),
            add_del_case(HOST_LOCAL_CYCLE, str(bin_dir / "emu-host-local"),
                         host_local_conf, 2, bin_dir, netns),
            add_del_case("reference host-local ADD+DEL", REFERENCE_HOST_LOCAL, ref_conf, 2,
                         bin_dir, netns),
            add_del_case(BRIDGE_CYCLE, str(bin_dir / "emu-bridge"), bridge_conf, 4, bin_dir,
                         netns),
            in_process_case(f"{HOST_LOCAL_CYCLE}, in-process", "emu-host-local",
                            inproc_host_local, bin_dir, netns),
            in_process_case(f"{BRIDGE_CYCLE}, in-process", "emu-bridge", inproc_bridge,
                            bin_dir, netns),
        ]
        rows = measure(cases, opts.cycles)
        floor_ms = rows[0].median_ms
        assert floor_ms is not None
        print(f"CNI ADD+DEL cycles: median of {opts.cycles}; plugins installed by: {how}")
        print(format_table(rows, floor_ms, rows[0].peak_kib))
        print("\n".join(verdicts(rows, floor_ms)))
        if opts.linux_cycles > 0:
            print()
            print(cni_linux.report(root / "linux", bin_dir, opts.linux_cycles))
    return 0


if __name__ == "__main__":
    sys.exit(main())
