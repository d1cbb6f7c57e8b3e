"""A real runtime's CNI ADD and DEL spans: podman (CNI backend) with our bridge+host-local
(linux dataplane) against the reference plugins, as root.

Each side gets its own isolated podman (tests/podman_support.py: own mount and network
namespaces, storage and libcni cache under a temp dir) with the same bridge+host-local
network; only the plugin types differ. One cycle per side and run, interleaved:

- ``podman run -d`` and ``podman stop -t 0`` of a busybox container with ``--network
  none`` (the runtime's own cost), then the same on the CNI network;
- ADD span: from podman creating the container's netns file (just before it calls
  libcni) to libcni closing the cache entry it writes once the whole chain answered ADD;
- DEL span: from libcni opening that cache entry (the first thing DelNetworkList does)
  to libcni deleting it once the whole chain answered DEL;
  both seen as inotify events on the sandbox's /run/netns and /var/lib/cni/results;
- run Δ and stop Δ: the network cycle's wall time less the ``--network none`` one's,
  i.e. what the CNI ADD (DEL) costs the user of the runtime.

Medians (and minimums) over ``--runs`` cycles, in milliseconds, and ours / reference.
Run: ``sudo .venv/bin/python -m bench podman [--runs N]``.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from cni_plugin.install import install
from tests.fixtures.netns import REFERENCE_DIR
from tests.podman_support import PodmanSandbox, RuntimeUnavailable, podman_sandbox

SIDES = {"ours": ("emu-bridge", "emu-host-local", {"dataplane": "linux"}),
         "reference": ("bridge", "host-local", {})}
COLUMNS = ("ADD span", "DEL span", "run Δ", "stop Δ", "run (net)", "stop (net)", "run (none)",
           "stop (none)")


def network_for(side: str) -> Callable[[Path], dict[str, Any]]:
    bridge, ipam, extra = SIDES[side]
    return lambda root: {"cniVersion": "1.0.0", "name": "benchnet", "plugins": [{
        "type": bridge, "bridge": "benchbr0", "isGateway": True, "ipMasq": False, **extra,
        "ipam": {"type": ipam, "ranges": [[{"subnet": "10.213.0.0/24"}]],
                 "routes": [{"dst": "0.0.0.0/0"}], "dataDir": str(root / "ipam")}}]}


IN_CLOSE_WRITE, IN_OPEN, IN_CREATE, IN_DELETE = 0x8, 0x20, 0x100, 0x200
EVENT = struct.Struct("iIII")


class FileEvents:
    """inotify on a few directories: (monotonic ns, mask, directory, name) as they come."""

    def __init__(self, watches: dict[Path, int]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self._fd = self._libc.inotify_init1(os.O_CLOEXEC)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._dirs: dict[int, Path] = {}
        for directory, mask in watches.items():
            wd = self._libc.inotify_add_watch(self._fd, str(directory).encode(), mask)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {directory}")
            self._dirs[wd] = directory
        self.events: list[tuple[int, int, Path, str]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self._fd, 65536)
            except OSError:
                return
            now = time.monotonic_ns()
            offset = 0
            while offset < len(data):
                wd, mask, _cookie, length = EVENT.unpack_from(data, offset)
                name = data[offset + EVENT.size:offset + EVENT.size + length].rstrip(b"\0")
                self.events.append((now, mask, self._dirs[wd], name.decode()))
                offset += EVENT.size + length

    def take(self) -> list[tuple[int, int, Path, str]]:
        time.sleep(0.01)  # let the reader catch up with what already happened
        taken, self.events = self.events, []
        return taken

    def close(self) -> None:
        os.close(self._fd)


def span_ms(events: list[tuple[int, int, Path, str]], start: tuple[Path, int],
            end: tuple[Path, int]) -> float:
    """From the last ``start`` event before the first ``end`` event to that end event."""
    ends = [t for t, mask, d, _ in events if d == end[0] and mask & end[1]]
    starts = [t for t, mask, d, _ in events
              if d == start[0] and mask & start[1] and ends and t <= ends[0]]
    assert ends and starts, events
    return (ends[0] - starts[-1]) / 1e6


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1000


def one_cycle(sandbox: PodmanSandbox, index: int,
              events: FileEvents | None = None) -> dict[str, float]:
    row: dict[str, float] = {}
    netns_dir, cache_dir = sandbox.path("run") / "netns", sandbox.libcni_cache
    for network in ("none", "net"):
        name = f"b{index}{network}"
        if events:
            events.take()
        row[f"run ({network})"] = timed(partial(sandbox.start_container, name,
                                                 None if network == "net" else "none"))
        if events and network == "net":
            row["ADD span"] = span_ms(events.take(), (netns_dir, IN_CREATE),
                                      (cache_dir, IN_CLOSE_WRITE))
        row[f"stop ({network})"] = timed(partial(sandbox.stop_container, name))
        if events and network == "net":
            row["DEL span"] = span_ms(events.take(), (cache_dir, IN_OPEN),
                                      (cache_dir, IN_DELETE))
        sandbox.remove_container(name)
    row["run Δ"] = row["run (net)"] - row["run (none)"]
    row["stop Δ"] = row["stop (net)"] - row["stop (none)"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="podman_bench",
                                     description="podman CNI ADD/DEL spans, ours vs reference")
    parser.add_argument("--runs", type=int, default=10)
    opts = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="empbench") as tmp:
        install(tmp)
        rows: dict[str, list[dict[str, float]]] = {side: [] for side in SIDES}
        try:
            with podman_sandbox(network_for("ours"), [tmp, REFERENCE_DIR]) as ours, \
                    podman_sandbox(network_for("reference"), [tmp, REFERENCE_DIR]) as ref:
                sandboxes = {"ours": ours, "reference": ref}
                for sandbox in sandboxes.values():  # warm-up, not counted: makes the dirs
                    one_cycle(sandbox, -1)
                watched = {side: FileEvents({sandbox.path("run") / "netns": IN_CREATE,
                                             sandbox.libcni_cache:
                                                 IN_OPEN | IN_CLOSE_WRITE | IN_DELETE})
                           for side, sandbox in sandboxes.items()}
                for index in range(opts.runs):
                    for side, sandbox in sandboxes.items():
                        rows[side].append(one_cycle(sandbox, index, watched[side]))
                for recorder in watched.values():
                    recorder.close()
        except RuntimeUnavailable as e:
            print(f"skipped: {e}")
            return 0
    print(f"podman {opts.runs} runs per side; ms, median (min)")
    print(f"{'':10}" + "".join(f"{c:>18}" for c in COLUMNS))
    medians: dict[str, dict[str, float]] = {}
    for side, cycles in rows.items():
        medians[side] = {c: statistics.median(r[c] for r in cycles) for c in COLUMNS}
        cells = [f"{medians[side][c]:8.1f} ({min(r[c] for r in cycles):6.1f})" for c in COLUMNS]
        print(f"{side:10}" + "".join(f"{cell:>18}" for cell in cells))
    # A difference the reference's run does not show (podman's stop polls for the exit,
    # which can hide a short DEL) has no meaningful ratio.
    ratios = [f"{medians['ours'][c] / medians['reference'][c]:.2f}x"
              if medians["reference"][c] >= 1 else "-" for c in COLUMNS]
    print(f"{'ours/ref':10}" + "".join(f"{r:>18}" for r in ratios))
    return 0
