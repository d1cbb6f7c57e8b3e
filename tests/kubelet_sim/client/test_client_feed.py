"""The shared informer cache the controllers read, filled over HTTPS: a ClientFeed keeps
it from a `kubelet-sim apiserver` process with the same indexes and wake-ups as the
in-process feed."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kubelet_sim.api import builders
from kubelet_sim.client.client_feed import ClientFeed
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.indexes import POD_CLAIMS, POD_NODE, add_indexes, claim_key
from kubelet_sim.client.shared_cache import SharedCache
from tests.fixtures.apiserver_process import ApiServerProcess


def names(objects: list) -> list[str]:
    return [o.name for o in objects]


async def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


async def test_the_shared_cache_fed_over_https_lists_indexes_and_wakes(
        server: ApiServerProcess) -> None:
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    feed = ClientFeed(client)
    try:
        await client.create(builders.pod("before", volumes=[
            builders.pvc_volume("data", "claim-1")]))
        cache = add_indexes(SharedCache(feed))
        wake = asyncio.Event()
        stop_notify = cache.notify(["Pod"], wake)
        assert cache.list("Pod") == []  # the first list is on its way
        await feed.wait_synced()
        assert names(cache.list("Pod")) == ["before"]
        assert names(cache.by_index("Pod", POD_CLAIMS, claim_key("default", "claim-1"))) == [
            "before"]
        wake.clear()
        await client.create(builders.pod("after"))
        await asyncio.wait_for(wake.wait(), 20)
        await client.bind("after", "default", "node-1")
        await eventually(lambda: names(cache.by_index("Pod", POD_NODE, "node-1")) == ["after"],
                         "the bound pod under its node")
        await client.delete("Pod", "before", "default", grace_period_seconds=0)
        await eventually(lambda: names(cache.list("Pod")) == ["after"], "the deletion")
        assert cache.index_values("Pod", POD_CLAIMS) == []
        stop_notify()
    finally:
        await feed.stop()
        await client.close()
