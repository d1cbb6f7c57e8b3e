"""The kubelet's run loop starts a pod on the pod's own watch event, never needing a
periodic pass: each test runs the loop on a fake clock that stays where it is (so no
resync or retry pass can run) unless the test moves it, with a stub runtime whose
calls the test can hold.

The wake-ups these pin down: a pass (or a pod's sync) waited for the runtime's status
check (CNI STATUS) whenever it was due — queued behind the node's sandbox execs, that
held every pod of the node up; several syncs that found it due each started an exec of
their own; news for a pod whose worker was busy must come back when the worker is done;
a pod that waits is retried on the period, not by a sync loop spinning on itself, and
at once when what its volumes wait for (an attachment to the node) moves."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest
import pytest_asyncio

from kubelet_sim.api import builders
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.kubelet.kubelet import Kubelet
from kubelet_sim.kubelet.node_lease import ensure_lease_namespace
from kubelet_sim.kubelet.sync_triggers import CONFIG, EVENT, RETRY, VOLUME
from kubelet_sim.runtime.containerd import ContainerRuntime, NetworkCondition
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.utils.trace import Trace

NODE = "node-1"
GUARD_S = 10.0  # a hung loop fails the test instead of hanging it; nothing is timed


@dataclass
class StubSandbox:
    id: str
    ips: list[str]


@dataclass
class StubRuntime:
    """What the kubelet asks its runtime; each call can be held by clearing its gate."""

    status_gate: threading.Event = field(default_factory=threading.Event)
    sandbox_gate: threading.Event = field(default_factory=threading.Event)
    status_calls: int = 0
    sandboxes: int = 0
    removed: list[str] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        self.status_gate.set()
        self.sandbox_gate.set()

    def list_pod_sandboxes(self) -> list[Any]:
        return []

    def garbage_collect(self) -> None:
        pass

    def network_status(self) -> NetworkCondition:
        self.status_calls += 1
        self.status_gate.wait(GUARD_S)
        return NetworkCondition(ready=True)

    def run_pod_sandbox(self, config: Any) -> StubSandbox:
        self.sandbox_gate.wait(GUARD_S)
        n = next(self._ids)
        self.sandboxes += 1
        return StubSandbox(f"sandbox-{n}", [f"10.244.1.{n + 1}"])

    def remove_pod_sandbox(self, sandbox_id: str) -> None:
        self.removed.append(sandbox_id)


@dataclass
class Node:
    api: APIServer
    clock: FakeClock
    runtime: StubRuntime
    kubelet: Kubelet


@pytest.fixture
def node(tmp_path: Path) -> Node:
    clock = FakeClock()
    api = APIServer(clock=clock)
    ensure_lease_namespace(api)
    api.create(builders.node(NODE, "10.244.1.0/24", "172.18.0.2"))
    runtime = StubRuntime()
    kubelet = Kubelet(api=api, node_name=NODE, root_dir=tmp_path / "kubelet",
                      runtime=cast(ContainerRuntime, runtime), trace=Trace(), clock=clock)
    return Node(api, clock, runtime, kubelet)


@pytest_asyncio.fixture
async def running(node: Node) -> AsyncIterator[Node]:
    """The kubelet's loops running, its first pass (over every pod) done."""
    stop = asyncio.Event()
    task = asyncio.create_task(node.kubelet.run(stop))
    try:
        await until(lambda: node.kubelet.runtime_status_in_background)
        await settle_loop()
        yield node
    finally:
        node.runtime.status_gate.set()
        node.runtime.sandbox_gate.set()
        stop.set()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, GUARD_S)


async def until(check: Callable[[], bool]) -> None:
    """Yield to the loop (real time, the fake clock stays) until ``check`` holds."""
    async with asyncio.timeout(GUARD_S):
        while not check():
            await asyncio.sleep(0.001)


async def settle_loop() -> None:
    """Let every task that can run without time moving run."""
    for _ in range(50):
        await asyncio.sleep(0)


def phase(api: APIServer, name: str) -> str:
    return str(api.get("Pod", name).status.get("phase", ""))


async def test_a_bound_pod_is_started_by_its_own_watch_event_without_a_periodic_pass(
        running: Node) -> None:
    running.api.create(builders.pod("web", node_name=NODE))
    await until(lambda: phase(running.api, "web") == "Running")
    assert running.kubelet.pod_starts == {EVENT: 1}
    assert running.clock.monotonic() == 0.0  # no resync or retry pass could have run


async def test_a_pod_starts_while_the_runtime_status_check_is_still_running(
        running: Node) -> None:
    # The status is due and its exec hangs: neither the loop's pass nor the pod's sync
    # waits for it (they read the last answer); before, the pass awaited the exec.
    running.runtime.status_gate.clear()
    calls = running.runtime.status_calls
    running.clock.advance(running.kubelet.runtime_status_period)
    await until(lambda: running.runtime.status_calls == calls + 1)
    running.api.create(builders.pod("web", node_name=NODE))
    await until(lambda: phase(running.api, "web") == "Running")
    assert running.kubelet.pod_starts == {EVENT: 1}
    assert running.runtime.status_calls == calls + 1  # still the one exec, still held


async def test_syncs_that_find_the_runtime_status_due_share_one_exec(node: Node) -> None:
    kubelet, runtime = node.kubelet, node.runtime
    await kubelet.check_runtime_status()
    node.clock.advance(kubelet.runtime_status_period)
    runtime.status_gate.clear()
    calls = runtime.status_calls
    syncs = [asyncio.create_task(kubelet.sync_node_status()) for _ in range(5)]
    await until(lambda: runtime.status_calls > calls)
    await settle_loop()
    runtime.status_gate.set()
    await asyncio.gather(*syncs)
    assert runtime.status_calls == calls + 1


async def test_news_for_a_pod_whose_worker_is_busy_is_synced_once_the_worker_is_done(
        running: Node) -> None:
    running.runtime.sandbox_gate.clear()  # the pod's first sync holds in RunPodSandbox
    running.api.create(builders.pod("web", node_name=NODE))
    await until(lambda: running.runtime.sandboxes == 0 and running.kubelet.pods != {})
    running.api.delete("Pod", "web", grace_period_seconds=30)  # news while it is busy
    await settle_loop()
    running.runtime.sandbox_gate.set()
    # the start finishes, then the deletion kills the pod and removes it: no pass of
    # the (unmoved) clock did it
    await until(lambda: not running.api.list("Pod").items)
    assert running.kubelet.pod_starts == {EVENT: 1}
    assert running.runtime.removed == ["sandbox-1"]
    assert running.clock.monotonic() == 0.0


async def test_a_waiting_pod_is_retried_on_the_period_not_by_a_loop_spinning_on_itself(
        running: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    kubelet = running.kubelet
    syncs: list[str] = []
    start = kubelet._start_pod

    async def counted(pod: Any, why: str = "") -> bool:
        syncs.append(why)
        return await start(pod, why)

    monkeypatch.setattr(kubelet, "_start_pod", counted)
    claim = builders.pvc_volume("data", "missing")  # no such claim: FailedMount
    running.api.create(builders.pod("web", node_name=NODE, volumes=[claim]))
    await until(lambda: bool(kubelet.waiting))
    await settle_loop()
    # its event, then once more for its own status write (why it waits); then nothing
    # until time moves
    assert syncs == [EVENT, EVENT]
    running.clock.advance(0.2)  # the loop's period
    await until(lambda: len(syncs) == 3)
    await settle_loop()
    assert syncs[2] == RETRY and len(syncs) == 3


async def test_a_waiting_pod_is_synced_again_at_once_when_an_attachment_to_its_node_moves(
        running: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    kubelet = running.kubelet
    syncs: list[str] = []
    start = kubelet._start_pod

    async def counted(pod: Any, why: str = "") -> bool:
        syncs.append(why)
        return await start(pod, why)

    monkeypatch.setattr(kubelet, "_start_pod", counted)
    claim = builders.pvc_volume("data", "missing")
    running.api.create(builders.pod("web", node_name=NODE, volumes=[claim]))
    await until(lambda: len(syncs) == 2)
    running.api.create(builders.volume_attachment("va-elsewhere", "csi.example", "node-2",
                                                  "pv-2"))
    await settle_loop()
    assert len(syncs) == 2  # another node's attachment is not this pod's news
    running.api.create(builders.volume_attachment("va-here", "csi.example", NODE, "pv-1"))
    await until(lambda: len(syncs) == 3)
    assert syncs[2] == VOLUME and running.clock.monotonic() == 0.0


async def test_a_pod_waiting_for_its_config_map_starts_at_once_when_it_is_created(
        running: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    kubelet = running.kubelet
    syncs: list[str] = []
    start = kubelet._start_pod

    async def counted(pod: Any, why: str = "") -> bool:
        syncs.append(why)
        return await start(pod, why)

    monkeypatch.setattr(kubelet, "_start_pod", counted)
    pod = builders.pod("web", node_name=NODE)
    pod.spec["containers"][0]["envFrom"] = [{"configMapRef": {"name": "settings"}}]
    running.api.create(pod)
    await until(lambda: len(syncs) == 2)  # its event, then the follow-up of the wait
    await settle_loop()
    assert phase(running.api, "web") == "Pending" and len(syncs) == 2
    other = Resource(kind="ConfigMap")
    other.metadata.name, other.metadata.namespace = "unrelated", "default"
    running.api.create(other)
    await settle_loop()
    assert len(syncs) == 2  # a ConfigMap the pod does not name is not its news
    settings = Resource(kind="ConfigMap")
    settings.metadata.name, settings.metadata.namespace = "settings", "default"
    running.api.create(settings)
    await until(lambda: phase(running.api, "web") == "Running")
    assert syncs[2] == CONFIG and running.clock.monotonic() == 0.0
