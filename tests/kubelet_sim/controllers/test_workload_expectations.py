"""The pod creations and deletions a workload controller waits to see in its cache before
it manages a workload's pods again (ControllerExpectations), and the first lists it waits
for before its first pass (WaitForCacheSync): what over a client keeps a ReplicaSet from
making its pods twice while the watch has not brought them yet."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, cast

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer, ResourceList
from kubelet_sim.apiserver.watch import ADDED, DELETED, MODIFIED
from kubelet_sim.client.client_feed import ClientFeed, feed_source
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.shared_cache import SharedCache
from kubelet_sim.controllers.replicaset import ReplicaSetController
from kubelet_sim.controllers.workload_expectations import EXPECTATIONS_TIMEOUT, Expectations
from kubelet_sim.testing.fake_clock import FakeClock

OnChange = Callable[[str, Resource], None]


class HandFeed:
    """A cache feed the test delivers by hand."""

    def __init__(self) -> None:
        self.on_change: dict[str, OnChange] = {}

    def feed(self, kind: str, on_change: OnChange) -> None:
        self.on_change[kind] = on_change


def pod(name: str, uid: str) -> Resource:
    made = builders.pod(name)
    made.metadata.uid = uid
    return made


def test_a_creation_is_expected_until_the_cache_holds_the_pod() -> None:
    feed = HandFeed()
    cache = SharedCache(feed)
    cache.list("Pod")
    expectations = Expectations(cache, FakeClock())
    expectations.created("rs/default/web", pod("web-a", "u1"))
    assert not expectations.satisfied("rs/default/web")
    feed.on_change["Pod"](ADDED, pod("web-a", "u1"))
    assert expectations.satisfied("rs/default/web")
    assert expectations.satisfied("rs/default/other")  # nothing expected of it


def test_a_deletion_is_expected_until_the_pod_is_gone_or_terminating() -> None:
    feed = HandFeed()
    cache = SharedCache(feed)
    cache.list("Pod")
    for gone in ("removed", "terminating"):
        feed.on_change["Pod"](ADDED, pod("web-a", "u1"))
        expectations = Expectations(cache, FakeClock())
        expectations.deleted("rs/default/web", pod("web-a", "u1"))
        assert not expectations.satisfied("rs/default/web")
        if gone == "removed":
            feed.on_change["Pod"](DELETED, pod("web-a", "u1"))
        else:
            going = pod("web-a", "u1")
            going.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
            feed.on_change["Pod"](MODIFIED, going)
        assert expectations.satisfied("rs/default/web"), gone


def test_an_expectation_never_seen_lapses_after_the_timeout() -> None:
    cache = SharedCache(HandFeed())
    cache.list("Pod")
    clock = FakeClock()
    expectations = Expectations(cache, clock)
    expectations.created("rs/default/web", pod("web-a", "u1"))
    clock.advance(EXPECTATIONS_TIMEOUT - 1)
    assert not expectations.satisfied("rs/default/web")
    clock.advance(1)
    assert expectations.satisfied("rs/default/web")


class LaggingClient:
    """The in-process server as a client the components cannot recognise as in-process:
    their cache is then kept by informers over it, which only see a write once the
    event loop runs them — as over HTTPS. A list of a ``slow`` kind takes a while to
    answer (a big list over the wire)."""

    def __init__(self, api: APIServer, slow: tuple[str, ...] = ()) -> None:
        self._inner = InProcessClient(api)
        self._slow = slow

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def list(self, kind: str, *args: Any, **kwargs: Any) -> ResourceList:
        if kind in self._slow:
            await asyncio.sleep(0.2)
        return await self._inner.list(kind, *args, **kwargs)


def replica_set(replicas: int = 3) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


async def test_a_replica_set_makes_no_second_set_of_pods_while_its_cache_lags() -> None:
    api = APIServer()
    client = cast(KubeClient, LaggingClient(api))
    controller = ReplicaSetController(client)
    feed = feed_source(client)
    assert isinstance(feed, ClientFeed)
    try:
        await controller.wait_for_cache_sync()
        api.create(replica_set())
        while controller.cache.get("ReplicaSet", "web", "default") is None:
            await asyncio.sleep(0.01)
        await controller.sync_once()
        # the informers have not run since: the cache shows none of the 3 pods yet
        assert controller.cache.list("Pod", "default") == []
        await controller.sync_once()
        assert len(api.list("Pod", "default").items) == 3
        while len(controller.cache.list("Pod", "default")) < 3:
            await asyncio.sleep(0.01)
        assert controller.expectations.satisfied("rs/default/web")
        await controller.sync_once()
        assert len(api.list("Pod", "default").items) == 3
        await controller.recorder.flush()
    finally:
        await feed.stop()


async def test_a_replica_set_controller_starts_only_once_its_cache_holds_the_pods() -> None:
    """The pods' list answers after the ReplicaSets': the first pass still sees them."""
    api = APIServer()
    api.create(replica_set())
    for name in ("web-a", "web-b", "web-c"):  # orphans it adopts
        made = builders.pod(name)
        made.metadata.labels = {"app": "web"}
        api.create(made)
    client = cast(KubeClient, LaggingClient(api, slow=("Pod",)))
    controller = ReplicaSetController(client)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        while api.get("ReplicaSet", "web", "default").status.get("replicas") != 3:
            await asyncio.sleep(0.01)
        assert sorted(p.name for p in api.list("Pod", "default").items) == [
            "web-a", "web-b", "web-c"]
    finally:
        stop.set()
        await task
        await controller.recorder.flush()
        await cast(ClientFeed, feed_source(client)).stop()
