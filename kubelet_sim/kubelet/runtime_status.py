"""The kubelet's runtime status loop: the runtime's network status (CNI STATUS) is asked
every ``runtime_status_period`` seconds by a task of its own, as the kubelet's
``updateRuntimeUp`` runs beside its sync loop. The sync loop's passes and the pod
workers read the last answer: a pod's start never waits for a STATUS exec (which, queued
behind the node's sandbox execs, held a whole pass up for as long as a second)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubelet_sim.utils.wakeup import wait_any

if TYPE_CHECKING:
    from kubelet_sim.kubelet.kubelet import Kubelet

log = logging.getLogger(__name__)

# How often a period of 0 (ask on every pass, set by tests that use settle) is looked at.
_IDLE_SECONDS = 1.0


async def keep_runtime_status(kubelet: Kubelet, stop: asyncio.Event,
                              changed: Callable[[], None]) -> None:
    """Ask every period until ``stop``; ``changed()`` when the network's readiness moved
    (pods waiting for the network go on at once)."""
    never = asyncio.Event()
    kubelet.runtime_status_in_background = True
    try:
        while not stop.is_set():
            period = kubelet.runtime_status_period
            await wait_any(stop, never, kubelet.clock.sleep(period if period > 0
                                                             else _IDLE_SECONDS))
            if stop.is_set() or kubelet.runtime_status_period <= 0:
                continue  # a period of 0: every pass asks itself
            before = kubelet.network_ready
            try:
                condition = await kubelet.check_runtime_status(force=True)
            except Exception:  # the loop must outlive a broken runtime, as the kubelet's
                log.exception("runtime status of %s failed", kubelet.node_name)
                continue
            if condition.ready != before:
                changed()
    finally:
        kubelet.runtime_status_in_background = False
