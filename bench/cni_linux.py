"""The linux-dataplane rows of ``bench cni``: our plugins on a real netns beside the
reference Go plugins (Debian's containernetworking-plugins in /usr/lib/cni).

Each cycle creates a fresh network namespace (untimed), then times ADD and DEL of
one attachment, each a fresh exec as a runtime makes it; ours and the reference's
cycles alternate, so background load weighs on both alike. Root only.

Pairs (ours / reference):

- bridge with ``isGateway`` delegating to host-local: emu-bridge + emu-host-local on
  the linux dataplane / bridge + host-local (the issue's target: ADD within 3x, DEL
  within 2x of the reference);
- the same with ``ipMasq`` (both sides run iptables; for information);
- loopback: emu-loopback on the linux dataplane / loopback.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

REFERENCE_DIR = "/usr/lib/cni"
ADD_TARGET = 3.0
DEL_TARGET = 2.0
# A runtime's PATH: iproute2 and iptables live in sbin.
EXEC_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass
class Side:
    """One plugin chain of a pair: the executable and its network config."""

    plugin: str
    conf: dict[str, object]
    cni_path: str
    add_ms: list[float] = field(default_factory=list)
    del_ms: list[float] = field(default_factory=list)

    def run(self, command: str, container_id: str, netns: str, ifname: str) -> float:
        env = {"CNI_COMMAND": command, "CNI_CONTAINERID": container_id, "CNI_NETNS": netns,
               "CNI_IFNAME": ifname, "CNI_PATH": self.cni_path, "PATH": EXEC_PATH}
        data = json.dumps(self.conf).encode()
        start = time.perf_counter()
        done = subprocess.run([self.plugin], input=data, env=env, capture_output=True,
                              check=False)
        elapsed = (time.perf_counter() - start) * 1000
        if done.returncode != 0:
            raise RuntimeError(f"{os.path.basename(self.plugin)} {command} failed: "
                               f"{(done.stdout + done.stderr).decode().strip()}")
        return elapsed


@dataclass
class Pair:
    name: str
    ifname: str
    ours: Side
    reference: Side
    add_target: float | None = ADD_TARGET
    del_target: float | None = DEL_TARGET


def _netns_add() -> str:
    name = "cnib" + uuid.uuid4().hex[:8]
    subprocess.run(["ip", "netns", "add", name], check=True)
    return name


def _cycle(side: Side, ifname: str, index: int, record: bool) -> None:
    netns = _netns_add()
    try:
        cid = f"benchlx{index}{uuid.uuid4().hex[:6]}"
        path = f"/var/run/netns/{netns}"
        add = side.run("ADD", cid, path, ifname)
        delete = side.run("DEL", cid, path, ifname)
        if record:
            side.add_ms.append(add)
            side.del_ms.append(delete)
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False)


def unavailable_reason(bin_dir: Path) -> str:
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("ip") is None:
        return "iproute2 not installed"
    for name in ("bridge", "host-local", "loopback"):
        if not os.access(f"{REFERENCE_DIR}/{name}", os.X_OK):
            return f"reference plugin {REFERENCE_DIR}/{name} not installed"
    if not os.access(bin_dir / "emu-bridge", os.X_OK):
        return f"our plugins are not installed in {bin_dir}"
    return ""


def make_pairs(root: Path, bin_dir: Path) -> list[Pair]:
    cni_path = f"{bin_dir}:{REFERENCE_DIR}"
    tag = uuid.uuid4().hex[:4]

    def bridge_pair(name: str, octet: int, **fields: object) -> Pair:
        def side(bridge_type: str, ipam_type: str, plugin: str, bridge: str,
                 subnet: str) -> Side:
            conf: dict[str, object] = {
                "cniVersion": "1.0.0", "name": f"benchlx{octet}", "type": bridge_type,
                "bridge": bridge, "isGateway": True, **fields,
                "ipam": {"type": ipam_type, "subnet": subnet,
                         "dataDir": str(root / f"ipam-{bridge}")}}
            if bridge_type.startswith("emu-"):
                conf["dataplane"] = "linux"
            return Side(plugin, conf, cni_path)

        return Pair(name, "eth0",
                    side("emu-bridge", "emu-host-local", str(bin_dir / "emu-bridge"),
                         f"cbo{tag}{octet}", f"10.{octet}.0.0/16"),
                    side("bridge", "host-local", f"{REFERENCE_DIR}/bridge",
                         f"cbr{tag}{octet}", f"10.{octet + 1}.0.0/16"))

    loopback = Pair(
        "loopback", "lo",
        Side(str(bin_dir / "emu-loopback"),
             {"cniVersion": "1.0.0", "name": "benchlo", "type": "emu-loopback",
              "dataplane": "linux"}, cni_path),
        Side(f"{REFERENCE_DIR}/loopback",
             {"cniVersion": "1.0.0", "name": "benchlo", "type": "loopback"}, cni_path),
        add_target=None, del_target=None)
    masq = bridge_pair("bridge + host-local, isGateway + ipMasq", 213, ipMasq=True)
    masq.add_target = masq.del_target = None
    return [bridge_pair("bridge + host-local, isGateway", 211), masq, loopback]


def _bridges(pair: Pair) -> list[str]:
    return [str(side.conf["bridge"]) for side in (pair.ours, pair.reference)
            if "bridge" in side.conf]


def measure(pairs: list[Pair], cycles: int) -> None:
    try:
        for pair in pairs:  # warm-up: page cache, the bridge itself
            for side in (pair.ours, pair.reference):
                _cycle(side, pair.ifname, -1, record=False)
        for i in range(cycles):
            for pair in pairs:
                sides = (pair.ours, pair.reference) if i % 2 else (pair.reference, pair.ours)
                for side in sides:
                    _cycle(side, pair.ifname, i, record=True)
    finally:
        for pair in pairs:
            for bridge in _bridges(pair):
                subprocess.run(["ip", "link", "del", bridge], capture_output=True, check=False)


def _ratio_cell(ours: float, ref: float, target: float | None) -> str:
    ratio = ours / ref
    if target is None:
        return f"{ratio:>6.2f}x {'':>10}"
    verdict = "met" if ratio <= target else "NOT met"
    return f"{ratio:>6.2f}x {f'<={target:g}x {verdict}':>10}"


def format_table(pairs: list[Pair]) -> str:
    header = (f"{'linux dataplane (ours vs reference)':<42} {'ADD ms':>7} {'ref ADD':>8} "
              f"{'ratio':>7} {'target':>10}   {'DEL ms':>7} {'ref DEL':>8} {'ratio':>7} "
              f"{'target':>10}")
    lines = [header, "-" * len(header)]
    for pair in pairs:
        add, ref_add = (statistics.median(s.add_ms) for s in (pair.ours, pair.reference))
        dele, ref_del = (statistics.median(s.del_ms) for s in (pair.ours, pair.reference))
        lines.append(f"{pair.name:<42} {add:>7.2f} {ref_add:>8.2f} "
                     f"{_ratio_cell(add, ref_add, pair.add_target)}   {dele:>7.2f} "
                     f"{ref_del:>8.2f} {_ratio_cell(dele, ref_del, pair.del_target)}")
    return "\n".join(lines)


def report(root: Path, bin_dir: Path, cycles: int) -> str:
    """The linux-dataplane table, or why it was left out."""
    reason = unavailable_reason(bin_dir)
    if reason:
        return f"linux dataplane rows left out: {reason}"
    pairs = make_pairs(root, bin_dir)
    try:
        measure(pairs, cycles)
    except RuntimeError as exc:
        return f"linux dataplane rows left out: {exc}"
    return (f"linux dataplane: median of {cycles} cycles, a fresh netns per cycle "
            f"(reference: {REFERENCE_DIR})\n{format_table(pairs)}")
