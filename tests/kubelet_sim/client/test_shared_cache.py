"""The shared informer cache: it follows every commit of the kinds read from it, its
indexes move with the objects, reads hand out the cached objects without a copy, and
what the API server hands out (copies) never reaches into it."""

from __future__ import annotations

import asyncio
import threading

from kubelet_sim.api import builders
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.indexes import POD_CLAIMS, POD_NODE, add_indexes, claim_key
from kubelet_sim.client.shared_cache import SharedCache, shared_cache


def names(objects: list) -> list[str]:
    return [o.name for o in objects]


def test_one_cache_per_api_server() -> None:
    api = APIServer()
    assert shared_cache(api) is shared_cache(api)
    assert shared_cache(APIServer()) is not shared_cache(api)


def test_the_cache_lists_what_existed_before_its_first_read_and_follows_every_write() -> None:
    api = APIServer()
    api.create(builders.pod("b"))
    cache = SharedCache(api)
    assert names(cache.list("Pod")) == ["b"]
    api.create(builders.pod("a"))
    assert names(cache.list("Pod")) == ["a", "b"]  # by namespace, then name
    pod = api.get("Pod", "a", "default")
    pod.metadata.labels["tier"] = "front"
    api.update(pod)
    cached = cache.get("Pod", "a", "default")
    assert cached is not None and cached.labels == {"tier": "front"}
    assert cached.metadata.resource_version == api.get("Pod", "a", "default") \
        .metadata.resource_version
    api.delete("Pod", "b", "default", grace_period_seconds=0)
    assert names(cache.list("Pod")) == ["a"]
    assert cache.get("Pod", "b", "default") is None


def test_reads_share_the_cached_object_and_the_api_servers_copies_never_reach_it() -> None:
    api = APIServer()
    api.create(builders.pod("a"))
    cache = SharedCache(api)
    first = cache.get("Pod", "a", "default")
    assert first is cache.get("Pod", "a", "default")  # no copy per read
    handed_out = api.get("Pod", "a", "default")
    handed_out.metadata.labels["changed"] = "locally"  # never written back
    assert first is not None and "changed" not in first.labels


def test_pods_are_indexed_by_node_and_by_claim_and_move_when_they_change() -> None:
    api = APIServer()
    cache = add_indexes(SharedCache(api))
    api.create(builders.pod("web", volumes=[builders.pvc_volume("data", "claim-1")]))
    api.create(builders.pod("db", volumes=[builders.pvc_volume("data", "claim-1"),
                                           builders.pvc_volume("logs", "claim-2")]))
    assert names(cache.by_index("Pod", POD_NODE, "")) == ["db", "web"]
    assert names(cache.by_index("Pod", POD_CLAIMS, claim_key("default", "claim-1"))) == [
        "db", "web"]
    assert names(cache.by_index("Pod", POD_CLAIMS, claim_key("default", "claim-2"))) == ["db"]
    assert cache.index_values("Pod", POD_CLAIMS) == ["default/claim-1", "default/claim-2"]

    pod = api.get("Pod", "web", "default")
    pod.spec["nodeName"] = "node-1"
    api.update(pod)
    assert names(cache.by_index("Pod", POD_NODE, "")) == ["db"]
    assert names(cache.by_index("Pod", POD_NODE, "node-1")) == ["web"]

    api.delete("Pod", "db", "default", grace_period_seconds=0)
    assert cache.by_index("Pod", POD_CLAIMS, claim_key("default", "claim-2")) == []
    assert cache.index_values("Pod", POD_CLAIMS) == ["default/claim-1"]


def test_an_index_added_later_covers_the_objects_already_cached() -> None:
    api = APIServer()
    cache = SharedCache(api)
    api.create(builders.pod("a"))
    assert names(cache.list("Pod")) == ["a"]
    cache.add_index("Pod", "first-letter", lambda pod: [pod.name[0]])
    assert names(cache.by_index("Pod", "first-letter", "a")) == ["a"]


def test_writes_from_other_threads_arrive_whole() -> None:
    api = APIServer()
    cache = add_indexes(SharedCache(api))
    assert cache.list("Pod") == []

    def writer(prefix: str) -> None:
        for i in range(50):
            api.create(builders.pod(f"{prefix}-{i}"))

    threads = [threading.Thread(target=writer, args=(p,)) for p in ("x", "y", "z")]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        listed = cache.by_index("Pod", POD_NODE, "")
        assert all(p.kind == "Pod" for p in listed)
    for t in threads:
        t.join()
    assert len(cache.list("Pod")) == 150 == len(cache.by_index("Pod", POD_NODE, ""))


async def test_notify_wakes_on_changes_of_its_kinds_from_any_thread_until_stopped() -> None:
    api = APIServer()
    cache = SharedCache(api)
    wake = asyncio.Event()
    stop = cache.notify(["Pod"], wake)
    api.create(builders.namespace("other"))  # not a Pod: no wake-up
    assert not wake.is_set()
    api.create(builders.pod("a"))
    assert wake.is_set()
    wake.clear()
    await asyncio.to_thread(api.create, builders.pod("b"))  # a write from a worker thread
    await asyncio.wait_for(wake.wait(), 5)
    stop()
    wake.clear()
    api.create(builders.pod("c"))
    assert not wake.is_set()


async def test_notice_of_a_kind_nobody_reads_keeps_no_copy_of_it() -> None:
    api = APIServer()
    cache = SharedCache(api)
    wake = asyncio.Event()
    cache.notify(["Event"], wake)
    api.create(builders.namespace("ns1"))
    assert not wake.is_set()
    api.create({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1",
                "namespace": "default"}, "involvedObject": {"kind": "Pod", "name": "p"},
                "reason": "Tested", "message": "m", "type": "Normal"})
    assert wake.is_set()
    assert "Event" not in cache.kinds  # told, not kept
    wake.clear()
    assert [e.name for e in cache.list("Event")] == ["e1"]  # read: now kept, still told
    api.delete("Event", "e1", "default")
    assert wake.is_set() and cache.list("Event") == []
