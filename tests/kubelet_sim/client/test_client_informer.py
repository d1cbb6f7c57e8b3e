"""The informer over either KubeClient: the same code follows an in-process API server
and a `kubelet-sim apiserver` process over HTTPS, relists after 410, and outlives an API
server that is killed and started again on its state dir."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kubelet_sim.api.model import Resource, new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.informer import Handlers, Informer
from kubelet_sim.client.kube_client import KubeClient
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.kubelet_sim.client.conftest import Side


class Recorder:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def handlers(self) -> Handlers:
        return Handlers(
            on_add=lambda o: self.seen.append(("add", o.name)),
            on_update=lambda old, new: self.seen.append(("update", new.name)),
            on_delete=lambda o: self.seen.append(("delete", o.name)),
        )


async def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def names(informer: Informer) -> list[str]:
    return [o.name for o in informer.items()]


async def names_on_server(client: KubeClient, namespace: str) -> list[str]:
    return [o.name for o in (await client.list("ConfigMap", namespace)).items]


async def make_namespace(client: KubeClient, name: str) -> str:
    await client.create(new("Namespace", name))
    return name


def config_map(name: str, namespace: str, value: str = "1") -> Resource:
    return new("ConfigMap", name, namespace, data={"v": value})


async def test_the_informer_lists_then_follows_changes_in_order_over_either_client(
        side: Side) -> None:
    ns = await make_namespace(side.client, "follow")
    await side.client.create(config_map("a", ns))
    informer, rec = Informer(side.client, "ConfigMap", ns), Recorder()
    informer.add_handlers(rec.handlers())
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    b = await side.client.create(config_map("b", ns))
    b.body["data"] = {"v": "2"}
    await side.client.update(b)
    await side.client.delete("ConfigMap", "a", ns)
    await eventually(lambda: len(rec.seen) == 4, "four events")
    informer.stop()
    await task
    assert rec.seen == [("add", "a"), ("add", "b"), ("update", "b"), ("delete", "a")]
    cached = informer.get("b", ns)
    assert cached is not None and cached.body["data"] == {"v": "2"}
    assert informer.relists == 0 and informer.failures == 0


async def test_the_informer_relists_after_410_and_reports_what_it_missed(side: Side) -> None:
    ns = await make_namespace(side.client, "relist")
    await side.client.create(config_map("old", ns))
    await side.client.create(config_map("kept", ns))
    informer, rec = Informer(side.client, "ConfigMap", ns), Recorder()
    informer.add_handlers(rec.handlers())
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    # a write it does not watch moves the server past the informer's version; then the
    # history goes: its watch ends, and the version it has is too old to watch from
    await side.client.create(config_map("elsewhere", "default"))
    await side.expire()
    await side.client.delete("ConfigMap", "old", ns)
    await side.client.create(config_map("new", ns))
    await eventually(lambda: names(informer) == ["kept", "new"], "the relisted cache")
    informer.stop()
    await task
    assert informer.relists >= 1
    assert ("delete", "old") in rec.seen and ("add", "new") in rec.seen
    assert names(informer) == await names_on_server(side.client, ns)


async def test_an_informer_outlives_a_killed_and_restarted_apiserver(
        server: ApiServerProcess) -> None:
    """Nothing lost, nothing phantom: the cache equals the server's list after a kill -9,
    writes on the restarted server (on the same state dir), and another restart."""
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    try:
        ns = await make_namespace(client, "restart")
        for name in ("one", "two", "three"):
            await client.create(config_map(name, ns))
        informer, rec = Informer(client, "ConfigMap", ns), Recorder()
        informer.add_handlers(rec.handlers())
        task = asyncio.create_task(informer.run())
        await informer.wait_synced()
        server.kill9()
        await eventually(lambda: informer.failures >= 1, "the informer to see the server gone")
        await asyncio.to_thread(server.start)
        await client.delete("ConfigMap", "two", ns)
        await client.create(config_map("four", ns))
        one = await client.get("ConfigMap", "one", ns)
        one.body["data"] = {"v": "after restart"}
        await client.update(one)
        await eventually(lambda: names(informer) == ["four", "one", "three"]
                         and (informer.get("one", ns) or one).body["data"]["v"] == "after restart",
                         "the cache after the restart")
        server.kill9()
        await asyncio.to_thread(server.start)
        await client.delete("ConfigMap", "three", ns)
        await eventually(lambda: names(informer) == ["four", "one"], "the second restart")
        informer.stop()
        await task
        assert names(informer) == await names_on_server(client, ns)
        assert rec.seen.count(("add", "one")) == 1  # not reported again as new
        assert ("delete", "two") in rec.seen and ("delete", "three") in rec.seen
    finally:
        await client.close()


async def test_bookmarks_move_the_informers_version_past_writes_it_does_not_watch() -> None:
    """With a BOOKMARK after quiet, a filtered informer's resourceVersion keeps up with the
    server, so dropped history after it costs no relist (the reason reflectors ask for
    them)."""
    api = APIServer()
    client = InProcessClient(api, bookmark_every=0.05)
    ns = await make_namespace(client, "quiet")
    informer = Informer(client, "ConfigMap", ns)
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    listed_at = informer.resource_version
    await client.create(config_map("elsewhere", "default"))
    await eventually(lambda: informer.resource_version == api.resource_version,
                     "a bookmark at the server's version")
    assert int(informer.resource_version) > int(listed_at)
    api.close_watches(expire=True)
    await client.create(config_map("here", ns))
    await eventually(lambda: names(informer) == ["here"], "the new object")
    informer.stop()
    await task
    assert informer.relists == 0
