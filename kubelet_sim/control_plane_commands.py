"""``kubelet-sim controller-manager``, ``scheduler`` and ``sidecars``: the control plane's
loops (:data:`~kubelet_sim.control_plane.LOOPS`, the table ``up`` builds its in-process
set from) each run as a process of its own that reaches the API server over HTTPS with
``--kubeconfig``, under the leader Leases their upstream components take.

* ``controller-manager``: kube-controller-manager's loops the simulator has, chosen with
  its ``--controllers`` syntax (``*`` every loop on by default, ``name`` one more,
  ``-name`` one less; the first entry that names a loop decides; the legacy aliases
  are accepted), under ``kube-system/kube-controller-manager``; the snapshot-controller
  runs here too (``-snapshot-controller`` leaves it out) under its own Lease,
  ``snapshot-controller-leader``, as the upstream one takes.
* ``scheduler``: the scheduler, under ``kube-system/kube-scheduler``.
* ``sidecars``: the CSI sidecar roles for one driver's controller plugin
  (``--csi-address``), each under the Lease its upstream sidecar takes (the capacity
  controller is part of external-provisioner and shares its Lease).
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Iterable, Sequence
from pathlib import Path

from csi_protos import csi_pb2
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.component_process import (
    ComponentRefused,
    LeaseGroup,
    add_client_flags,
    add_leader_flags,
    go_duration,
    run_component,
)
from kubelet_sim.control_plane import (
    CONTROLLER_MANAGER,
    LOOPS,
    MANAGER_LOOPS,
    SCHEDULER,
    SIDECAR_ROLES,
    SNAPSHOT_CONTROLLER,
    Loop,
    build_loops,
    loop_context,
    sidecar_lease_name,
)
from kubelet_sim.csi.client import CsiError, GrpcCsiClient
from kubelet_sim.utils.trace import Trace

COMMANDS = ("controller-manager", "scheduler", "sidecars")
SNAPSHOT_CONTROLLER_LEASE = "snapshot-controller-leader"
CSI_CONNECT_SECONDS = 60.0


# -- --controllers ---------------------------------------------------------------------

def _canonical_names(loops: Iterable[Loop]) -> dict[str, str]:
    """Every name and alias a loop answers to -> its name."""
    out: dict[str, str] = {}
    for loop in loops:
        for name in loop.names:
            out[name] = name
        for k, alias in enumerate(loop.aliases):
            out[alias] = loop.names[min(k, len(loop.names) - 1)]
    return out


def parse_controllers(value: str, loops: Sequence[Loop] = MANAGER_LOOPS) -> list[str]:
    """``--controllers`` as kube-controller-manager reads it: entries ``*``, ``name``
    or ``-name`` (aliases resolved to names); an unknown name is refused."""
    known = _canonical_names(loops)
    entries: list[str] = []
    unknown: list[str] = []
    for raw in value.split(","):
        entry = raw.strip()
        if not entry:
            continue
        off = entry.startswith("-")
        name = entry[1:] if off else entry
        if name == "*":
            entries.append(entry)
        elif name in known:
            entries.append(("-" if off else "") + known[name])
        else:
            unknown.append(f"{name!r} is not in the list of known controllers")
    if unknown:
        raise argparse.ArgumentTypeError("; ".join(unknown))
    return entries


def controller_enabled(name: str, entries: Sequence[str],
                       off_by_default: Iterable[str] = ()) -> bool:
    """kube-controller-manager's rule: the first entry naming the controller decides
    (``name`` on, ``-name`` off); else ``*`` turns on those on by default."""
    star = False
    for entry in entries:
        if entry == name:
            return True
        if entry == f"-{name}":
            return False
        star = star or entry == "*"
    return star and name not in set(off_by_default)


def enabled_loops(entries: Sequence[str], loops: Sequence[Loop] = MANAGER_LOOPS) -> list[Loop]:
    """The loops ``entries`` turn on (one with several names: when any of them is on)."""
    return [loop for loop in loops
            if any(controller_enabled(name, entries) for name in loop.names)]


def _controllers_help() -> str:
    lines = []
    for loop in MANAGER_LOOPS:
        also = f" (alias {', '.join(loop.aliases)})" if loop.aliases else ""
        note = f" — {loop.help}" if loop.help else ""
        lines.append(f"{'/'.join(loop.names)}{also}{note}")
    return ("loops to run: '*' every loop on by default (all of these), 'name' one more, "
            "'-name' one less; the first entry naming a loop decides. Loops: "
            + "; ".join(lines))


def _roles(value: str) -> list[str]:
    roles = [r.strip() for r in value.split(",") if r.strip()]
    bad = [r for r in roles if r not in SIDECAR_ROLES]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown role {bad[0]!r} (roles: {', '.join(SIDECAR_ROLES)})")
    return roles


# -- the parsers -----------------------------------------------------------------------

def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cm = sub.add_parser("controller-manager", help="kube-controller-manager's loops (and the "
                        "snapshot-controller) as their own process, over --kubeconfig")
    add_client_flags(cm, qps=20, burst=30)
    cm.add_argument("--controllers", type=parse_controllers, default=["*"],
                    metavar="LIST", help=_controllers_help())
    cm.add_argument("--root-ca-file", type=Path, metavar="FILE",
                    help="the CA the root-ca-certificate-publisher puts in every namespace "
                    "(default: the kubeconfig's certificate-authority)")
    cm.add_argument("--node-monitor-grace-period", type=go_duration, default=50.0,
                    metavar="DURATION", help="how long a node may go without a heartbeat "
                    "before it is Unknown and unreachable (50s)")
    add_leader_flags(cm, "leader-elect", default=True, namespace="kube-system", retry=2.0)
    cm.add_argument("--leader-elect-resource-name", dest="lease_name",
                    default="kube-controller-manager", metavar="NAME",
                    help="the Lease of the loops (default kube-controller-manager)")

    sched = sub.add_parser("scheduler", help="the scheduler as its own process, over "
                           "--kubeconfig")
    add_client_flags(sched, qps=50, burst=100)
    add_leader_flags(sched, "leader-elect", default=True, namespace="kube-system", retry=2.0)
    sched.add_argument("--leader-elect-resource-name", dest="lease_name",
                       default="kube-scheduler", metavar="NAME",
                       help="the Lease (default kube-scheduler)")

    sc = sub.add_parser("sidecars", help="the CSI sidecar roles (external-provisioner, "
                        "-attacher, -resizer, -snapshotter) for one driver's controller "
                        "plugin, over --kubeconfig")
    add_client_flags(sc, qps=5, burst=10)
    sc.add_argument("--csi-address", required=True, metavar="unix:///PATH",
                    help="the driver's controller plugin socket")
    sc.add_argument("--driver-name", default="", metavar="NAME",
                    help="the driver's name (default: what its GetPluginInfo answers)")
    sc.add_argument("--roles", type=_roles, default=list(SIDECAR_ROLES), metavar="LIST",
                    help=f"which roles to run (default {','.join(SIDECAR_ROLES)}); capacity "
                    "is external-provisioner's CSIStorageCapacity controller")
    sc.add_argument("--trace-file", type=Path, metavar="T.jsonl",
                    help="append every CSI call to this file as JSON lines (ts on the "
                    "machine's monotonic clock)")
    add_leader_flags(sc, "leader-election", default=False, namespace="default", retry=5.0)


# -- running ---------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    component = {"controller-manager": CONTROLLER_MANAGER, "scheduler": SCHEDULER,
                 "sidecars": "csi-sidecars"}[args.command]
    build = {"controller-manager": _controller_manager, "scheduler": _scheduler,
             "sidecars": _sidecars}[args.command]

    async def groups(client: HttpKubeClient, recorder: EventRecorder) -> list[LeaseGroup]:
        return await build(args, client, recorder)

    return asyncio.run(run_component(component, args, groups))


async def _controller_manager(args: argparse.Namespace, client: HttpKubeClient,
                              recorder: EventRecorder) -> list[LeaseGroup]:
    loops = enabled_loops(args.controllers)
    root_ca = args.root_ca_file.read_bytes() if args.root_ca_file else client.config.ca_data
    if not root_ca:
        print("controller-manager: no --root-ca-file and no CA in the kubeconfig: "
              "root-ca-certificate-publisher-controller left out", flush=True)
        loops = [lp for lp in loops if lp.name != "root-ca-certificate-publisher-controller"]
    ctx = loop_context(client, recorder=recorder, root_ca_cert=root_ca,
                       node_monitor_grace_period=args.node_monitor_grace_period)
    groups = []
    for component, lease in ((CONTROLLER_MANAGER, args.lease_name),
                             (SNAPSHOT_CONTROLLER, SNAPSHOT_CONTROLLER_LEASE)):
        mine = [lp for lp in loops if lp.component == component]
        if mine:
            groups.append(LeaseGroup(args.leader_namespace, lease, build_loops(ctx, mine),
                                     names=[lp.name for lp in mine]))
    return groups


async def _scheduler(args: argparse.Namespace, client: HttpKubeClient,
                     recorder: EventRecorder) -> list[LeaseGroup]:
    ctx = loop_context(client, recorder=recorder)
    return [LeaseGroup(args.leader_namespace, args.lease_name,
                       build_loops(ctx, [lp for lp in LOOPS if lp.component == SCHEDULER]),
                       release_on_cancel=True)]


async def _sidecars(args: argparse.Namespace, client: HttpKubeClient,
                    recorder: EventRecorder) -> list[LeaseGroup]:
    trace = Trace.of_process(args.trace_file) if args.trace_file else Trace()
    csi = GrpcCsiClient(args.csi_address, trace=trace, node="control-plane",
                        component="controller")
    driver = args.driver_name or await plugin_name(csi, args.csi_address)
    ctx = loop_context(client, csi=csi, driver=driver, recorder=recorder)
    groups: dict[str, LeaseGroup] = {}
    for loop in LOOPS:
        if loop.name not in args.roles:
            continue
        name = sidecar_lease_name(loop.component, driver)
        group = groups.setdefault(name, LeaseGroup(args.leader_namespace, name, []))
        group.controllers.extend(build_loops(ctx, [loop]))
        group.names.append(loop.name)
    print(f"sidecars: driver {driver} at {args.csi_address}", flush=True)
    return list(groups.values())


async def plugin_name(csi: GrpcCsiClient, endpoint: str,
                      timeout: float = CSI_CONNECT_SECONDS) -> str:
    """The driver's name from GetPluginInfo, waiting for the socket to answer (as the
    sidecars keep connecting); :class:`ComponentRefused` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            info = await csi.call(csi_pb2.GetPluginInfoRequest(),
                                  csi_pb2.GetPluginInfoResponse, timeout=5.0)
            return str(info.name)
        except CsiError as err:
            if loop.time() >= deadline:
                raise ComponentRefused(f"the CSI driver at {endpoint} did not answer "
                                       f"GetPluginInfo: {err}") from None
            await asyncio.sleep(1.0)
