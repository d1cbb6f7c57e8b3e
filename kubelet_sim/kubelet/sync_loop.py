"""The kubelet's run loop: when it syncs which pods, and the lease beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubelet_sim.apiserver.watch import Watch
from kubelet_sim.kubelet.node_lease import keep_lease
from kubelet_sim.kubelet.pod_workers import PodWorkers
from kubelet_sim.utils.wakeup import wait_any

if TYPE_CHECKING:
    from kubelet_sim.kubelet.kubelet import Kubelet

log = logging.getLogger(__name__)


async def run_loop(kubelet: Kubelet, stop: asyncio.Event, period: float,
                   resync: float) -> None:
    """The kubelet's loops: a pass when one of its pods changes (a watch on the pods
    bound to this node, as the kubelet's pod config source) or a pod worker
    finishes, over those pods and the ones still waiting (a volume not attached
    yet, a sandbox backing off), at least every ``period`` seconds; every
    ``resync`` seconds a pass over all of them. Pods are synced by
    :class:`PodWorkers`, up to ``kubelet.parallel_pods`` at once. Beside it (the
    kubelet's node lease controller), the node's Lease is renewed every 10 s, so a
    long pass never holds back the heartbeat."""
    await kubelet.start()
    heartbeat = asyncio.create_task(
        keep_lease(kubelet.api, kubelet.node_name, kubelet.clock,
                   kubelet.lease_duration_seconds, stop),
        name=f"lease-{kubelet.node_name}")
    dirty = asyncio.Event()
    changed: set[str] = set()  # uids of pods with news since the last pass

    def touched(uid: str) -> None:
        changed.add(uid)
        dirty.set()

    workers = PodWorkers(kubelet.parallel_pods, on_done=touched)
    watch = kubelet.api.watch("Pod", field_selector=f"spec.nodeName={kubelet.node_name}")
    events = asyncio.create_task(_follow(watch, touched))
    loop = asyncio.get_running_loop()
    full_at = loop.time()  # the first pass looks at every pod
    try:
        while not stop.is_set():
            dirty.clear()
            only = None
            if loop.time() < full_at:
                only = {*changed, *kubelet.waiting, *kubelet.backing_off}
            else:
                full_at = loop.time() + resync
            changed.clear()
            try:
                await kubelet.sync_once(workers, only)
            except Exception:  # the loop must survive any bad pass, as the kubelet does
                log.exception("kubelet %s sync failed", kubelet.node_name)
            await wait_any(stop, dirty, asyncio.sleep(period))
    finally:
        watch.stop()
        for task in (heartbeat, events):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await workers.wait()  # a sandbox half made would be left to GC otherwise


async def _follow(watch: Watch, touched: Callable[[str], None]) -> None:
    async for event in watch:
        touched(event.object.metadata.uid)
