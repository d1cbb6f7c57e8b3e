"""What a CNI conformance case did, normalised so that two runs can be set side by side
(``--compare-to ours``).

A step is one plugin exec the runtime made — ``ADD bridge → OK``, ``DEL bridge → code
7`` (the error code only, no message) — or the shape of an ADD's result — ``result
1.0.0: 3 interfaces, IPv4, routes`` (how many interfaces, which IP versions, whether it
has routes; no names, MACs or addresses) — or what VERSION claimed. Steps are grouped
per attachment, the container ids replaced by ``c1``, ``c2``… in order of first
appearance (``-`` for STATUS, GC and VERSION, which name no container), so the
interleaving of concurrent ADDs does not make two runs differ.
"""

from __future__ import annotations

import ipaddress
import threading
from typing import Any

from kubelet_sim.runtime.libcni.api import LibCNI, RuntimeConf
from kubelet_sim.runtime.libcni.conf import NetworkConfigList
from kubelet_sim.runtime.libcni.results import Result, to_current
from kubelet_sim.utils.trace import TraceEvent

NO_CONTAINER = "-"


def result_shape(result: Result) -> str:
    current = to_current(result)
    versions = sorted({ipaddress.ip_interface(str(ip.get("address", ""))).version
                       for ip in current.get("ips") or [] if ip.get("address")})
    addresses = "+".join(f"IPv{v}" for v in versions) or "no address"
    routes = "routes" if current.get("routes") else "no routes"
    return (f"result {result.get('cniVersion', '')}: "
            f"{len(current.get('interfaces') or [])} interfaces, {addresses}, {routes}")


class CniSteps:
    """The CNI suite's `~kubelet_sim.conformance.report.Transcriber`: fed by the trace
    (every exec) and by `RecordingLibCNI` (every ADD's result); thread-safe."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, str]] = []  # (container id, step)
        self._lock = threading.Lock()

    def add(self, container_id: str, step: str) -> None:
        with self._lock:
            self._steps.append((container_id, step))

    def on_event(self, event: TraceEvent) -> None:
        """A trace listener: ``cni ADD bridge`` with result ``code 7: …`` → ``ADD bridge →
        code 7``."""
        if not event.call.startswith("cni "):
            return
        code = event.result if event.result == "OK" else event.result.split(":")[0]
        self.add(str(event.request.get("container_id", "")),
                 f"{event.call.removeprefix('cni ')} → {code}")

    def mark(self) -> int:
        with self._lock:
            return len(self._steps)

    def since(self, mark: int) -> list[str]:
        with self._lock:
            steps = self._steps[mark:]
        groups: dict[str, list[str]] = {}
        for container_id, step in steps:
            groups.setdefault(container_id, []).append(step)
        labels = {cid: f"c{n}" for n, cid in enumerate((c for c in groups if c), start=1)}
        return [f"{labels.get(cid, NO_CONTAINER)} {step}"
                for cid, group in groups.items() for step in group]


class RecordingLibCNI(LibCNI):
    """libcni that also writes each ADD's result shape into `CniSteps`."""

    def __init__(self, *args: Any, steps: CniSteps, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.steps = steps

    def add_network_list(self, net: NetworkConfigList, rt: RuntimeConf) -> Result:
        result = super().add_network_list(net, rt)
        self.steps.add(rt.container_id, result_shape(result))
        return result
