"""A simulated cluster with its loops running, as ``up`` runs it, for the tests that
need real time to pass (heartbeats, pod workers): the fixture's body and a poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from kubelet_sim.cluster import Cluster, ClusterConfig


@asynccontextmanager
async def running_cluster(config: ClusterConfig) -> AsyncIterator[Cluster]:
    cluster = Cluster(config)
    stop = asyncio.Event()
    try:
        await cluster.start()
        loops = asyncio.create_task(cluster.run(stop))
        yield cluster
        stop.set()
        await loops
    finally:
        stop.set()
        await cluster.stop()


async def eventually(check: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    """Poll ``check`` every 0.1 s until it returns something true; that is returned."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")
