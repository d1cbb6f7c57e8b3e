"""The kubelet's run loop: when it syncs which pods, and the lease and runtime status
beside it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import TYPE_CHECKING

from kubelet_sim.api.model import Resource
from kubelet_sim.client.indexes import POD_NODE
from kubelet_sim.kubelet.config_news import ConfigNews
from kubelet_sim.kubelet.node_lease import keep_lease
from kubelet_sim.kubelet.pod_workers import PodWorkers
from kubelet_sim.kubelet.runtime_status import keep_runtime_status
from kubelet_sim.kubelet.sync_triggers import CONFIG, EVENT, FOLLOW_UP, VOLUME
from kubelet_sim.kubelet.volume_news import VolumeNews
from kubelet_sim.utils.wakeup import wait_any

if TYPE_CHECKING:
    from kubelet_sim.kubelet.kubelet import Kubelet

log = logging.getLogger(__name__)


async def run_loop(kubelet: Kubelet, stop: asyncio.Event, period: float,
                   resync: float) -> None:
    """The kubelet's loops: a pass when one of its pods changes (a watch on the pods
    bound to this node, as the kubelet's pod config source) or a pod worker
    finishes having changed something or what a waiting pod's volumes wait for moves
    (volume_news.py), over those pods and the ones still waiting (a volume not
    attached yet, a sandbox backing off) or a ConfigMap or Secret a waiting pod's
    containers name appears (config_news.py), at least every ``period`` seconds;
    every ``resync`` seconds a pass over all of them (both on the kubelet's clock).
    Pods are synced by :class:`PodWorkers`, up to ``kubelet.parallel_pods`` at once;
    news for a pod whose worker is busy is handed back when it is done. Each pod's
    sync carries what triggered it (sync_triggers), which the kubelet counts for the
    pods it starts. A pod's news comes from the informer cache the kubelet reads its
    pods from (a change of a pod bound to this node reaching it), never from a watch
    of its own. Beside it: the node's Lease renewed every 10 s (the node lease
    controller), so a long pass never holds back the heartbeat, and the runtime's
    network status asked every ``runtime_status_period`` (runtime_status.py)."""
    await kubelet.start()
    clock = kubelet.clock
    dirty = asyncio.Event()
    news: dict[str, str] = {}  # uid -> why it needs a sync, since the last pass

    def done(uid: str, changed: bool, again: str | None) -> None:
        why = again or (FOLLOW_UP if changed else None)
        if why is not None:
            news.setdefault(uid, why)
            dirty.set()

    heartbeat = asyncio.create_task(
        keep_lease(kubelet.client, kubelet.node_name, clock,
                   kubelet.lease_duration_seconds, stop),
        name=f"lease-{kubelet.node_name}")
    runtime = asyncio.create_task(keep_runtime_status(kubelet, stop, dirty.set),
                                  name=f"runtime-status-{kubelet.node_name}")
    workers = PodWorkers(kubelet.parallel_pods, on_done=done)
    volumes = VolumeNews(kubelet.cache, kubelet.node_name, dirty)
    configs = ConfigNews(kubelet.cache, kubelet.config_waits, dirty)
    changed_pods: deque[str] = deque()  # uids, appended from the committing thread

    def bound_here(pod: Resource) -> None:
        if pod.spec.get("nodeName") == kubelet.node_name:
            changed_pods.append(pod.metadata.uid)

    stop_pod_news = kubelet.cache.notify(["Pod"], dirty, bound_here)  # sets dirty too
    # the pods already bound here are news too, as a pod config source's first ADDs are
    changed_pods.extend(p.metadata.uid for p in kubelet.cache.by_index("Pod", POD_NODE,
                                                                       kubelet.node_name))
    full_at = clock.monotonic()  # the first pass looks at every pod
    try:
        while not stop.is_set():
            dirty.clear()
            while changed_pods:  # news already delivered is this pass's news
                news[changed_pods.popleft()] = EVENT
            if volumes.take():  # what the waiting pods' volumes wait for moved
                for uid in kubelet.waiting:
                    news.setdefault(uid, VOLUME)
            for uid in configs.take():  # a ConfigMap or Secret a waiting pod names moved
                news.setdefault(uid, CONFIG)
            only = None
            if clock.monotonic() < full_at:
                only = {*news, *kubelet.waiting, *kubelet.backing_off}
            else:
                full_at = clock.monotonic() + resync
            triggers, news = news, {}
            try:
                await kubelet.sync_once(workers, only, triggers)
            except Exception:  # the loop must survive any bad pass, as the kubelet does
                log.exception("kubelet %s sync failed", kubelet.node_name)
            await wait_any(stop, dirty, clock.sleep(period))
    finally:
        stop_pod_news()
        await volumes.close()
        await configs.close()
        for task in (heartbeat, runtime):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await workers.wait()  # a sandbox half made would be left to GC otherwise
