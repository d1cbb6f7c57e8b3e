"""What every component started as its own process (``controller-manager``,
``scheduler``, ``sidecars``) shares: the flags of its API client and of its leader
election, the connection to the API server from ``--kubeconfig`` (refused in one line
when the server cannot be reached), and running its loops under leader Leases until
SIGINT/SIGTERM.

A process runs one or more :class:`LeaseGroup` s (kube-controller-manager's loops under
the ``kube-controller-manager`` Lease; each CSI sidecar role under the Lease that
sidecar takes). With leader election each group has its own
:class:`~kubelet_sim.client.leader_election.LeaderElector`: the group's informers and
loops start when it leads, and losing a Lease ends the process with exit status 1, as
kube-controller-manager does ("leaderelection lost"): whatever runs the process starts
it again, and it waits as a candidate. A graceful stop releases the Leases it holds.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import re
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubelet_sim.api.errors import ApiError
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.events import EventRecorder
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.kube_client import ApiUnreachable, KubeClient
from kubelet_sim.client.kubeconfig import KubeconfigError, load_kubeconfig
from kubelet_sim.client.leader_election import LeaderElectionConfig, LeaderElector
from kubelet_sim.controllers.base import Controller, ControllerManager
from kubelet_sim.utils.clock import Backoff

log = logging.getLogger(__name__)

STOP_GRACE_SECONDS = 3.0
PROBE_SECONDS = 20.0
PROBE_BACKOFF = Backoff(duration=0.2, factor=2.0, jitter=0.0, steps=4, cap=1.0)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


class ComponentRefused(RuntimeError):
    """The component cannot start as asked; said in one line, exit 1."""


def go_duration(text: str) -> float:
    """Seconds of a Go duration as the components' flags take it (``15s``, ``1m30s``,
    ``500ms``; a bare number is seconds)."""
    text = text.strip()
    with contextlib.suppress(ValueError):
        return float(text)
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r} (e.g. 15s, 1m30s, 500ms)")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def go_bool(text: str) -> bool:
    """A boolean flag's value as Go's flag package reads ``--flag=VALUE``."""
    value = text.strip().lower()
    if value in ("1", "t", "true"):
        return True
    if value in ("0", "f", "false"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean {text!r} (true or false)")


def add_client_flags(p: argparse.ArgumentParser, qps: float, burst: int) -> None:
    p.add_argument("--kubeconfig", type=Path, metavar="FILE", required=True,
                   help="the API server to reach and how (server URL, CA, token)")
    p.add_argument("--kube-api-qps", type=float, default=qps, metavar="QPS",
                   help=f"requests per second to the API server (default {qps:g})")
    p.add_argument("--kube-api-burst", type=int, default=burst, metavar="N",
                   help=f"burst of requests to the API server (default {burst})")


def add_leader_flags(p: argparse.ArgumentParser, prefix: str, *, default: bool,
                     namespace: str, retry: float) -> None:
    """``--<prefix>`` (a boolean: bare, or ``=true``/``=false``) and its timings, as the
    component's upstream names them (``leader-elect`` for kube-controller-manager and
    kube-scheduler, ``leader-election`` for the CSI sidecars)."""
    p.add_argument(f"--{prefix}", dest="leader_elect", type=go_bool, nargs="?", const=True,
                   default=default, metavar="BOOL",
                   help=f"run only while holding the leader Lease (default {str(default).lower()})")
    name_ns = "resource-namespace" if prefix == "leader-elect" else "namespace"
    p.add_argument(f"--{prefix}-{name_ns}", dest="leader_namespace", default=namespace,
                   metavar="NS", help=f"the namespace of the Lease (default {namespace})")
    p.add_argument(f"--{prefix}-lease-duration", dest="lease_duration", type=go_duration,
                   default=15.0, metavar="DURATION",
                   help="how long a candidate waits before taking an unrenewed Lease (15s)")
    p.add_argument(f"--{prefix}-renew-deadline", dest="renew_deadline", type=go_duration,
                   default=10.0, metavar="DURATION",
                   help="how long the leader tries to renew before giving up (10s)")
    p.add_argument(f"--{prefix}-retry-period", dest="retry_period", type=go_duration,
                   default=retry, metavar="DURATION",
                   help=f"how often candidates try and the leader renews ({retry:g}s)")


def leader_identity() -> str:
    """``<hostname>_<uuid>``, as kube-controller-manager and kube-scheduler make theirs:
    unique per process, so several candidates on one machine never share one."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


async def connect(args: argparse.Namespace) -> HttpKubeClient:
    """The client of ``--kubeconfig``, once the server has answered a request;
    :class:`ComponentRefused` when the kubeconfig is unusable or the server unreachable."""
    try:
        config = load_kubeconfig(args.kubeconfig)
    except (KubeconfigError, OSError) as err:
        raise ComponentRefused(str(err)) from None
    probe = HttpKubeClient(config, qps=0, max_retries=len(PROBE_BACKOFF.delays()),
                           connection_backoff=PROBE_BACKOFF)
    try:
        await asyncio.wait_for(probe.get("Namespace", "kube-system"), PROBE_SECONDS)
    except TimeoutError:
        raise ComponentRefused(f"the API server at {config.server} did not answer within "
                               f"{PROBE_SECONDS:g}s") from None
    except ApiUnreachable as err:
        raise ComponentRefused(f"cannot reach the API server at {config.server}: {err}") \
            from None
    except ApiError:
        pass  # it answered (NotFound, Forbidden): reachable
    finally:
        await probe.close()
    return HttpKubeClient(config, qps=args.kube_api_qps, burst=args.kube_api_burst)


@dataclass
class LeaseGroup:
    """Loops that run while one Lease is held (all the time without leader election)."""

    namespace: str
    name: str
    controllers: list[Controller]
    # give the Lease up on a graceful stop (kube-scheduler does; kube-controller-manager
    # and the CSI sidecars by default do not: a successor waits for it to run out)
    release_on_cancel: bool = False
    names: list[str] = field(default_factory=list)  # the loops as the flags name them

    @property
    def lease(self) -> str:
        return f"{self.namespace}/{self.name}"


# what a component prints once a group's caches have their first lists and its loops
# run (what `up --processes` waits for, as one waits for kube-controller-manager's healthz)
RUNNING = "caches synced, loops running"


def say(component: str, message: str) -> None:
    print(f"{component}: {message}", flush=True)


async def start_loops(client: KubeClient, controllers: Sequence[Controller]
                      ) -> ControllerManager:
    """Fill the informer caches of the loops' kinds, then start the loops (client-go's
    WaitForCacheSync before the workers)."""
    for controller in controllers:
        for kind in controller.kinds:
            controller.cache.list(kind)
    feed = feed_source(client)
    if isinstance(feed, ClientFeed):
        await feed.wait_synced()
    manager = ControllerManager(list(controllers))
    manager.start()
    return manager


class LostLease(RuntimeError):
    """A Lease this process led was lost: the process ends (status 1)."""


async def run_group(command: str, component: str, client: KubeClient, group: LeaseGroup,
                    args: argparse.Namespace, identity: str, recorder: EventRecorder,
                    stop: asyncio.Event) -> None:
    """Run ``group``'s loops until ``stop`` (under its Lease with leader election);
    :class:`LostLease` when the Lease is lost."""
    if not args.leader_elect:
        manager = await start_loops(client, group.controllers)
        say(command, f"{group.lease}: {RUNNING}")
        try:
            await stop.wait()
        finally:
            await manager.stop()
        return

    async def lead() -> None:
        say(command, f"successfully acquired lease {group.lease} as {identity}")
        recorder.record("Lease", group.namespace, group.name, "Normal", "LeaderElection",
                        f"{identity} became leader", component)
        manager = await start_loops(client, group.controllers)
        say(command, f"{group.lease}: {RUNNING}")
        try:
            await asyncio.Event().wait()  # until cancelled: the leadership ended
        finally:
            await manager.stop()

    def new_leader(holder: str) -> None:
        if holder != identity:
            say(command, f"the lease {group.lease} is held by {holder}: waiting as a "
                "candidate")

    elector = LeaderElector(client, LeaderElectionConfig(
        namespace=group.namespace, name=group.name, identity=identity,
        lease_duration=args.lease_duration, renew_deadline=args.renew_deadline,
        retry_period=args.retry_period, release_on_cancel=group.release_on_cancel,
        on_started_leading=lead, on_new_leader=new_leader))
    say(command, f"attempting to acquire leader lease {group.lease}...")
    stopper = asyncio.ensure_future(_stop_when(stop, elector))
    try:
        await elector.run()
    finally:
        stopper.cancel()
    if not stop.is_set():
        raise LostLease(f"leaderelection lost: {group.lease}")


async def _stop_when(stop: asyncio.Event, elector: LeaderElector) -> None:
    await stop.wait()
    elector.stop()


Build = Callable[[HttpKubeClient, EventRecorder], Awaitable[list[LeaseGroup]]]


async def run_component(component: str, args: argparse.Namespace, build: Build) -> int:
    """Connect, build the groups, run them until SIGINT/SIGTERM (0) or a lost Lease (1)."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr,
                        format=f"{component} %(levelname).1s %(name)s: %(message)s")
    try:
        client = await connect(args)
    except ComponentRefused as err:
        print(f"kubelet_sim {args.command}: {err}", file=sys.stderr)
        return 1
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    recorder = EventRecorder(client)
    try:
        try:
            groups = await build(client, recorder)
        except (ComponentRefused, ValueError) as err:
            print(f"kubelet_sim {args.command}: {err}", file=sys.stderr)
            return 1
        if not groups:
            print(f"kubelet_sim {args.command}: nothing to run", file=sys.stderr)
            return 1
        say(args.command, f"API server {client.config.server}; "
            + "; ".join(f"{g.lease}: {', '.join(g.names or [c.name for c in g.controllers])}"
                        for g in groups))
        identity = leader_identity()
        tasks = [asyncio.ensure_future(run_group(args.command, component, client, g, args,
                                                 identity, recorder, stop)) for g in groups]
        stopped = asyncio.ensure_future(stop.wait())
        # a group ends on its own only by losing its Lease
        await asyncio.wait([*tasks, stopped], return_when=asyncio.FIRST_COMPLETED)
        stop.set()
        # releasing a Lease gets a few seconds: the API server may be gone too
        _, late = await asyncio.wait(tasks, timeout=STOP_GRACE_SECONDS)
        for task in late:
            task.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        failed = [r for r in results
                  if isinstance(r, Exception) and not isinstance(r, asyncio.CancelledError)]
        if failed:
            print(f"kubelet_sim {args.command}: {failed[0]}", file=sys.stderr)
            return 1
        say(args.command, "stopped")
        return 0
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(recorder.flush(), STOP_GRACE_SECONDS)
        # the informers' watches end only when the server closes them: cancelled here
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)
        await client.close()
