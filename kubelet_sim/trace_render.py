"""``python -m kubelet_sim trace FILE.jsonl``: a call trace drawn as a sequence diagram.

The input is what ``--trace-file`` writes (`kubelet_sim.utils.trace.TraceEvent`, one JSON
object a line). Each event becomes one arrow, in file order, from its caller's lane (its
``component`` on its ``node``) to its callee's lane:

* ``csi.Controller/…`` and ``csi.GroupController/…`` → the CSI controller plugin;
  ``csi.Identity/…`` too, unless a kubelet asks (then its node's plugin);
* ``csi.Node/…`` → the CSI node plugin of the caller's node;
* ``cni VERB TYPE`` → the lane of plugin TYPE (one lane per plugin type);
* CRI calls (``runtime.v1.RuntimeService/…``, or a bare ``RunPodSandbox``) → the
  runtime of the caller's node; ``pluginregistration.Registration/…`` → that node's
  node-driver-registrar;
* anything else (e.g. the kubelet's ``pluginmanager/DeRegisterPlugin``) → a self-call.

Lanes run left to right: API server, scheduler and controllers (unknown components go
here too), CSI sidecars, kubelets, runtimes, CSI controller plugin, CSI node plugins,
node-driver-registrars, CNI plugins; per-node lanes by node name. A call whose result is
not ``OK`` is a failure; a call repeated (same lanes, call and arguments) right after
its failure is a retry; both are drawn red.

``--pod NS/NAME`` keeps the calls about one pod: those naming it (a CRI/CNI ``pod``
field, CSI ``csi.storage.k8s.io/pod.*`` volume context), then — until nothing more is
learned — those sharing a pod UID (``…/pods/UID/…`` in a path), a ``volume_id`` or
``source_volume_id``, a PV name (``…/kubernetes.io~csi/PV/…`` of a target path is
CreateVolume's ``name``) or a sandbox id (``container_id``, ``pod_sandbox_id``) with a
call kept already. Capability probes and start-up calls name no pod and are left out.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubelet_sim.trace_svg import render_svg
from kubelet_sim.utils.trace import TraceEvent

__all__ = ["Arrow", "Lane", "TraceFileError", "arrows_of", "events_for_pod", "lanes_of",
           "main_trace", "read_trace", "render_svg", "to_mermaid"]


class TraceFileError(Exception):
    """The trace file cannot be read, or a line of it is not a trace event."""


# -- reading ------------------------------------------------------------------------------------

_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "seq": int, "node": str, "component": str, "call": str, "request": dict, "result": str}
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "ts": (int, float), "duration_ms": (int, float), "phase": (str,)}


def read_trace(path: Path) -> list[TraceEvent]:
    """The events of a ``--trace-file``, in order; blank lines are skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFileError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") \
            from None
    return [_event(line, f"{path}:{number}")
            for number, line in enumerate(text.splitlines(), 1) if line.strip()]


def _event(line: str, where: str) -> TraceEvent:
    try:
        raw = json.loads(line)
    except ValueError:
        raise TraceFileError(f"{where}: not a trace event (not JSON): {line[:80]!r}") from None
    if not isinstance(raw, dict):
        raise TraceFileError(f"{where}: not a trace event (not a JSON object)")
    for name, kind in _REQUIRED.items():
        value = raw.get(name)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TraceFileError(f"{where}: not a trace event: {name!r} missing or not "
                                 f"{getattr(kind, '__name__', kind)}")
    for name, kinds in _OPTIONAL.items():
        if name in raw and (not isinstance(raw[name], kinds) or isinstance(raw[name], bool)):
            raise TraceFileError(f"{where}: not a trace event: {name!r} has the wrong type")
    return TraceEvent(seq=raw["seq"], ts=float(raw.get("ts", 0.0)), node=raw["node"],
                      component=raw["component"], call=raw["call"], request=raw["request"],
                      result=raw["result"], duration_ms=float(raw.get("duration_ms", 0.0)),
                      phase=raw.get("phase", ""))


# -- the pod filter -----------------------------------------------------------------------------

_POD_INFO = "csi.storage.k8s.io/pod."
_POD_DIR = re.compile(r"/pods/([^/]+)/")
_CSI_VOLUME_DIR = re.compile(r"/kubernetes\.io~csi/([^/]+)/")


def parse_pod(text: str) -> tuple[str, str]:
    """``NS/NAME`` as (namespace, name); ValueError for anything else."""
    namespace, sep, name = text.partition("/")
    if not sep or not namespace or not name or "/" in name:
        raise ValueError(f"--pod wants NAMESPACE/NAME, not {text!r}")
    return namespace, name


@dataclass
class _PodKeys:
    """What ties a call to one pod: its name, and what its calls so far have shown."""

    namespace: str
    name: str
    uids: set[str] = field(default_factory=set)
    volumes: set[str] = field(default_factory=set)
    pvs: set[str] = field(default_factory=set)
    sandboxes: set[str] = field(default_factory=set)

    def names_pod(self, request: dict[str, Any]) -> bool:
        context = request.get("volume_context")
        by_context = isinstance(context, dict) and (
            context.get(_POD_INFO + "namespace") == self.namespace
            and context.get(_POD_INFO + "name") == self.name)
        return by_context or request.get("pod") == f"{self.namespace}/{self.name}"

    def matches(self, request: dict[str, Any]) -> bool:
        if self.names_pod(request):
            return True
        if any(request.get(k) in self.volumes for k in ("volume_id", "source_volume_id")):
            return True
        if any(request.get(k) in self.sandboxes for k in ("container_id", "pod_sandbox_id")):
            return True
        if request.get("name") in self.pvs:
            return True
        return any(m.group(1) in self.uids for s in _strings(request)
                   for m in _POD_DIR.finditer(s))

    def learn(self, request: dict[str, Any]) -> None:
        context = request.get("volume_context")
        if isinstance(context, dict) and self.names_pod(request):
            self.uids.update(_nonempty([context.get(_POD_INFO + "uid")]))
        self.volumes.update(_nonempty(request.get(k) for k in ("volume_id", "source_volume_id")))
        self.sandboxes.update(_nonempty(request.get(k)
                                        for k in ("container_id", "pod_sandbox_id")))
        target = request.get("target_path")
        if isinstance(target, str):
            self.uids.update(m.group(1) for m in _POD_DIR.finditer(target))
            self.pvs.update(m.group(1) for m in _CSI_VOLUME_DIR.finditer(target))


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _nonempty(values: Iterable[object]) -> set[str]:
    return {v for v in values if isinstance(v, str) and v}


def events_for_pod(events: Sequence[TraceEvent], namespace: str, name: str) -> list[TraceEvent]:
    """The events about pod NAMESPACE/NAME, in order (see the module's docstring)."""
    keys = _PodKeys(namespace, name)
    kept: set[int] = set()
    grown = True
    while grown:  # a later call can tie an earlier one (NodePublish names the pod, not Stage)
        grown = False
        for index, event in enumerate(events):
            if index not in kept and keys.matches(event.request):
                kept.add(index)
                keys.learn(event.request)
                grown = True
    return [event for index, event in enumerate(events) if index in kept]


# -- lanes and arrows ---------------------------------------------------------------------------

API_SERVER, CONTROLLERS, SIDECARS, KUBELET, RUNTIME = range(5)
CSI_CONTROLLER, CSI_NODE, REGISTRAR, CNI = range(5, 9)
SIDECAR_ORDER = ("external-provisioner", "external-attacher", "csi-snapshotter", "csi-resizer")
API_SERVER_NAMES = frozenset({"kube-apiserver", "apiserver", "api-server", "api server"})
RUNTIME_NAMES = frozenset({"containerd", "cri-o", "crio"})
CRI_METHODS = frozenset({
    "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "PodSandboxStatus",
    "ListPodSandbox", "CreateContainer", "StartContainer", "StopContainer",
    "RemoveContainer", "ListContainers", "ContainerStatus", "PullImage", "Status", "Version"})


@dataclass(frozen=True)
class Lane:
    """One participant: ``kind`` orders it, ``title`` and ``node`` name it (``node`` is
    empty for lanes that are not one per node)."""

    kind: int
    title: str
    node: str = ""

    @property
    def subtitle(self) -> str:
        return self.node or {SIDECARS: "CSI sidecar", CNI: "CNI plugin",
                             CSI_CONTROLLER: "controller service"}.get(self.kind, "")


@dataclass(frozen=True)
class Arrow:
    event: TraceEvent
    source: Lane
    target: Lane
    verb: str  # the RPC's method or the CNI command
    status: str  # "ok", "failed" or "retry"

    @property
    def label(self) -> str:
        result = self.event.result if len(self.event.result) <= 60 else \
            self.event.result[:59] + "…"
        return f"{self.verb} → {result}" + (" (retry)" if self.status == "retry" else "")


def caller_lane(event: TraceEvent) -> Lane:
    component = event.component
    if component.lower() in API_SERVER_NAMES:
        return Lane(API_SERVER, component)
    if component in SIDECAR_ORDER:
        return Lane(SIDECARS, component)
    if component == "kubelet":
        return Lane(KUBELET, "kubelet", event.node)
    if component in RUNTIME_NAMES:
        return Lane(RUNTIME, component, event.node)
    return Lane(CONTROLLERS, component)


def callee(event: TraceEvent, caller: Lane, runtime: str) -> tuple[Lane, str]:
    """The lane the call goes to, and its verb."""
    if event.call.startswith("cni "):
        verb, _, plugin = event.call.removeprefix("cni ").partition(" ")
        return Lane(CNI, plugin or "?"), verb
    service, _, method = event.call.rpartition("/")
    verb = method or event.call
    if service in ("csi.Controller", "csi.GroupController") or (
            service == "csi.Identity" and caller.kind != KUBELET):
        return Lane(CSI_CONTROLLER, "CSI controller plugin"), verb
    if service in ("csi.Node", "csi.Identity"):
        return Lane(CSI_NODE, "CSI node plugin", event.node), verb
    if service.startswith("runtime.v1.") or (not service and verb in CRI_METHODS):
        return Lane(RUNTIME, runtime, event.node), verb
    if service.startswith("pluginregistration."):
        return Lane(REGISTRAR, "node-driver-registrar", event.node), verb
    return caller, verb


def _same_call(event: TraceEvent) -> str:
    """The arguments a retry repeats: with the pod named, not the sandbox (a new one)."""
    volatile = ("container_id", "netns", "pod_sandbox_id") if "pod" in event.request else ()
    return json.dumps({k: v for k, v in event.request.items() if k not in volatile},
                      sort_keys=True, default=str)


def arrows_of(events: Sequence[TraceEvent]) -> list[Arrow]:
    """One arrow per event, in order, each with its lanes and whether it failed or retried."""
    runtime = next((e.component for e in events if e.component in RUNTIME_NAMES), "containerd")
    last_failed: dict[tuple[Lane, Lane, str, str], bool] = {}
    arrows = []
    for event in events:
        source = caller_lane(event)
        target, verb = callee(event, source, runtime)
        key = (source, target, event.call, _same_call(event))
        failed = event.result != "OK"
        status = "failed" if failed else "retry" if last_failed.get(key) else "ok"
        last_failed[key] = failed
        arrows.append(Arrow(event, source, target, verb, status))
    return arrows


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text))


def lanes_of(arrows: Sequence[Arrow]) -> list[Lane]:
    """The lanes the arrows touch, left to right."""
    first_seen: dict[Lane, int] = {}
    for index, arrow in enumerate(arrows):
        first_seen.setdefault(arrow.source, index)
        first_seen.setdefault(arrow.target, index)

    def order(lane: Lane) -> tuple[Any, ...]:
        within = (SIDECAR_ORDER.index(lane.title) if lane.kind == SIDECARS
                  else 0 if lane.title == "scheduler" else 1)
        return (lane.kind, within, _natural(lane.node), first_seen[lane])

    return sorted(first_seen, key=order)


# -- Mermaid ------------------------------------------------------------------------------------

_MERMAID_ESCAPES = {"#": "#35;", ";": "#59;", "<": "#60;", ">": "#62;"}


def _mermaid_text(text: str) -> str:
    """Text Mermaid shows as it is: its own entity codes for what it would parse."""
    return "".join(_MERMAID_ESCAPES.get(c, c) for c in re.sub(r"[\s\x00-\x1f\x7f]+", " ", text))


def _mermaid_ids(lanes: Sequence[Lane]) -> dict[Lane, str]:
    ids: dict[Lane, str] = {}
    for lane in lanes:
        base = re.sub(r"\W", "_", f"{lane.title} {lane.node}".strip(), flags=re.ASCII)
        base = base if base[:1].isalpha() else f"p_{base}"
        ids[lane] = base if base not in ids.values() else f"{base}_{len(ids)}"
    return ids


def to_mermaid(arrows: Sequence[Arrow]) -> str:
    """A Mermaid ``sequenceDiagram``: participants in lane order, one message per arrow
    (``-x`` for a failure), a note over all lanes where a phase begins."""
    lanes = lanes_of(arrows)
    ids = _mermaid_ids(lanes)
    lines = ["sequenceDiagram"]
    for lane in lanes:
        name = f"{lane.title} ({lane.subtitle})" if lane.subtitle else lane.title
        lines.append(f"    participant {ids[lane]} as {_mermaid_text(name)}")
    phase: str | None = None
    for arrow in arrows:
        if arrow.event.phase != phase:
            phase = arrow.event.phase
            span = ",".join(dict.fromkeys((ids[lanes[0]], ids[lanes[-1]])))
            lines.append(f"    Note over {span}: {_mermaid_text(phase or 'calls')}")
        line = "-x" if arrow.status == "failed" else "->>"
        lines.append(f"    {ids[arrow.source]}{line}{ids[arrow.target]}: "
                     f"{_mermaid_text(arrow.label)}")
    return "\n".join(lines) + "\n"


# -- the command --------------------------------------------------------------------------------

def main_trace(path: Path, *, svg: Path | None, mermaid: str | None, pod: str | None) -> int:
    """Render ``path`` to ``svg`` and/or ``mermaid`` (a file, or "-" for stdout)."""
    if svg is None and mermaid is None:
        print("kubelet_sim trace: say what to write: --svg OUT.svg and/or --mermaid [OUT.mmd]",
              file=sys.stderr)
        return 2
    try:
        namespace_name = parse_pod(pod) if pod is not None else None
        events = read_trace(path)
    except (ValueError, TraceFileError) as exc:
        print(f"kubelet_sim trace: {exc}", file=sys.stderr)
        return 2
    if namespace_name is not None:
        events = events_for_pod(events, *namespace_name)
    arrows = arrows_of(events)
    try:
        if svg is not None:
            title = f"{path.name}" + (f" — pod {pod}" if pod else "")
            svg.write_text(render_svg(arrows, lanes_of(arrows), title=title), encoding="utf-8")
        if mermaid == "-":
            sys.stdout.write(to_mermaid(arrows))
        elif mermaid is not None:
            Path(mermaid).write_text(to_mermaid(arrows), encoding="utf-8")
    except OSError as exc:
        print(f"kubelet_sim trace: cannot write: {exc}", file=sys.stderr)
        return 2
    return 0
