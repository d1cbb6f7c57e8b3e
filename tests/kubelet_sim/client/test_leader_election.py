"""Leader election over a coordination.k8s.io/v1 Lease, as client-go's: one holder at a
time, takeover only after the lease ran out (on the candidate's own clock) or was
released, leadership lost when renewals fail past the renew deadline. Time is a fake
clock the tests move; the API server is in-process, and once over HTTPS."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.kube_client import KubeClient
from kubelet_sim.client.leader_election import LeaderElectionConfig, LeaderElector
from kubelet_sim.testing.fake_clock import FakeClock
from tests.fixtures.apiserver_process import ApiServerProcess

NS, NAME = "kube-system", "kubelet-sim-controller-manager"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def api(clock: FakeClock) -> APIServer:
    return APIServer(clock=clock)


def elector(client: KubeClient, identity: str, clock: FakeClock,
            **options: object) -> LeaderElector:
    config = LeaderElectionConfig(NS, NAME, identity, jitter_factor=0.0,
                                  rng=random.Random(1), **options)  # type: ignore[arg-type]
    return LeaderElector(client, config, clock)


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def tick(clock: FakeClock, seconds: float, step: float = 0.5) -> None:
    """Move the fake clock ``seconds`` forward in steps, letting the loops run."""
    moved = 0.0
    while moved < seconds:
        clock.advance(step)
        moved += step
        await settle()


async def test_the_first_candidate_creates_the_lease_and_the_second_waits(
        api: APIServer, clock: FakeClock) -> None:
    client = InProcessClient(api)
    a, b = elector(client, "a", clock), elector(client, "b", clock)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    spec = api.get("Lease", NAME, NS).spec
    assert spec["holderIdentity"] == "a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0 and spec["acquireTime"] == spec["renewTime"]
    assert spec["renewTime"].endswith("Z") and "." in spec["renewTime"]  # MicroTime
    assert b.leader == "a" and a.is_leader and not b.is_leader


async def test_renewing_moves_only_the_renew_time(api: APIServer, clock: FakeClock) -> None:
    a = elector(InProcessClient(api), "a", clock)
    await a.try_acquire_or_renew()
    first = api.get("Lease", NAME, NS).spec
    clock.advance(2)
    assert await a.try_acquire_or_renew()
    renewed = api.get("Lease", NAME, NS).spec
    assert renewed["acquireTime"] == first["acquireTime"]
    assert renewed["renewTime"] > first["renewTime"] and renewed["leaseTransitions"] == 0


async def test_a_lease_that_ran_out_is_taken_over_with_one_more_transition(
        api: APIServer, clock: FakeClock) -> None:
    client = InProcessClient(api)
    a, b = elector(client, "a", clock), elector(client, "b", clock)
    await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()  # b starts counting from what it saw now
    clock.advance(14.5)
    assert not await b.try_acquire_or_renew()  # a's 15 s are not over on b's clock
    clock.advance(1)
    assert await b.try_acquire_or_renew()
    spec = api.get("Lease", NAME, NS).spec
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert not await a.try_acquire_or_renew()  # a now sees b's fresh lease


async def test_two_candidates_writing_at_once_elect_one(api: APIServer, clock: FakeClock) -> None:
    client = InProcessClient(api)
    results = await asyncio.gather(*(elector(client, f"c{i}", clock).try_acquire_or_renew()
                                     for i in range(5)))
    assert sum(results) == 1


async def test_a_leader_that_stops_releases_and_the_next_one_takes_over_at_once(
        api: APIServer, clock: FakeClock) -> None:
    client = InProcessClient(api)
    events: list[str] = []

    async def lead(who: str) -> None:
        events.append(f"{who} leads")
        await asyncio.Event().wait()  # until cancelled when leadership ends

    a = elector(client, "a", clock, on_started_leading=lambda: lead("a"),
                on_stopped_leading=lambda: events.append("a stopped"))
    b = elector(client, "b", clock, on_started_leading=lambda: lead("b"),
                on_new_leader=lambda who: events.append(f"b saw {who}"))
    run_a = asyncio.create_task(a.run())
    await settle()
    run_b = asyncio.create_task(b.run())
    await tick(clock, 6)  # a renews every 2 s; b keeps trying
    assert events == ["a leads", "b saw a"]
    a.stop()
    await run_a
    released = api.get("Lease", NAME, NS).spec
    assert "holderIdentity" not in released and released["leaseDurationSeconds"] == 1
    await tick(clock, 2)  # b's next try: no holder, so no waiting for the old lease
    assert events[2:] == ["a stopped", "b saw b", "b leads"]
    spec = api.get("Lease", NAME, NS).spec
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    b.stop()
    await run_b


async def test_a_leader_whose_renewals_fail_past_the_renew_deadline_stops_leading(
        api: APIServer, clock: FakeClock) -> None:
    stopped: list[str] = []
    a = elector(InProcessClient(api), "a", clock, release_on_cancel=False,
                on_stopped_leading=lambda: stopped.append("a"))
    run = asyncio.create_task(a.run())
    await tick(clock, 4)
    assert a.is_leader and not stopped
    api.inject_conflicts("Lease", 1000, ("update",))  # every renewal now fails
    await tick(clock, 9)
    assert not run.done()  # within the 10 s renew deadline it keeps trying
    await tick(clock, 4)
    assert run.done() and stopped == ["a"]
    api.inject_conflicts("Lease", 0)


def test_timings_must_leave_room_for_renewals() -> None:
    with pytest.raises(ValueError):
        LeaderElectionConfig(NS, NAME, "a", lease_duration=10, renew_deadline=10)


@pytest.fixture
async def http_client(server: ApiServerProcess) -> AsyncIterator[HttpKubeClient]:
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    yield client
    await client.close()


async def test_election_over_https_hands_the_lease_from_a_released_leader_to_the_next(
        http_client: HttpKubeClient, clock: FakeClock) -> None:
    a, b = elector(http_client, "a", clock), elector(http_client, "b", clock)
    assert await a.try_acquire_or_renew() and not await b.try_acquire_or_renew()
    assert await a.release()
    assert await b.try_acquire_or_renew()
    lease = await http_client.get("Lease", NAME, NS)
    assert lease.spec["holderIdentity"] == "b" and lease.spec["leaseTransitions"] == 1
