"""A stand-in kubelet for the workload controllers' unit tests: pods are bound, marked
Running and Ready (or not) at the fake clock's time, and a graceful delete is finished."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

from kubelet_sim.api import builders
from kubelet_sim.api.errors import NotFound
from kubelet_sim.api.model import Resource, format_time
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.base import Controller
from kubelet_sim.testing.fake_clock import FakeClock


def cluster(nodes: int = 1) -> tuple[APIServer, FakeClock]:
    clock = FakeClock()
    api = APIServer(clock=clock)
    for i in range(1, nodes + 1):
        api.create(builders.node(f"node-{i}", f"10.244.{i}.0/24", f"192.168.0.{i}",
                                 ready=True))
    return api, clock


def pods(api: APIServer, namespace: str = "default") -> list[Resource]:
    return sorted(api.list("Pod", namespace).items, key=lambda p: p.name)


def live_pods(api: APIServer) -> list[Resource]:
    return [p for p in pods(api) if not p.metadata.deletion_timestamp
            and p.status.get("phase") not in ("Succeeded", "Failed")]


def run(api: APIServer, clock: FakeClock, *, ready: bool = True,
        only: Iterable[str] | None = None, phase: str = "Running") -> None:
    """Bind the pending pods (to their pinned node, else node-1), give them ``phase`` and
    the Ready condition, and finish every graceful delete."""
    chosen = set(only) if only is not None else None
    for pod in pods(api):
        if pod.metadata.deletion_timestamp:
            with contextlib.suppress(NotFound):
                api.delete("Pod", pod.name, pod.namespace, grace_period_seconds=0)
            continue
        if chosen is not None and pod.name not in chosen:
            continue
        if pod.status.get("phase") in ("Succeeded", "Failed"):
            continue
        if not pod.spec.get("nodeName"):
            terms = ((pod.spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms")
            node = terms[0]["matchFields"][0]["values"][0] if terms else "node-1"
            pod.spec["nodeName"] = node
            pod = api.update(pod)
        pod.status = {"phase": phase, "conditions": [{
            "type": "Ready", "status": str(ready and phase == "Running"),
            "lastTransitionTime": format_time(clock.now())}]}
        api.update_status(pod)


def finish_deletes(api: APIServer) -> None:
    run(api, FakeClock(), only=())


async def settle(*controllers: Controller, rounds: int = 20) -> None:
    """Run the controllers until none changes anything."""
    for _ in range(rounds):
        changed = False
        for controller in controllers:
            changed = await controller.sync_once() or changed
        if not changed:
            return
