"""The HTTPS client's client-go rules for trying again and for pacing itself: Retry-After
honoured on 429/5xx, connection errors retried for reads only, a 5 QPS / 10 burst token
bucket; all on a clock the test moves (no real waiting)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from aiohttp import web

from kubelet_sim.api.errors import TooManyRequests
from kubelet_sim.api.model import Resource
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.http.client import _object, builtin_resource
from kubelet_sim.client.kube_client import ApiUnreachable
from kubelet_sim.client.kubeconfig import ClientConfig
from kubelet_sim.client.rate_limit import TokenBucket
from kubelet_sim.client.status_errors import StatusError
from kubelet_sim.testing.fake_clock import FakeClock
from kubelet_sim.utils.clock import Backoff

CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "cm", "namespace": "default", "resourceVersion": "7"}}


class InstantClock(FakeClock):
    """A fake clock whose sleeps move it at once: the waits are recorded, not waited."""

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(max(0.0, seconds))
        await asyncio.sleep(0)


def status(code: int, reason: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "message": reason, "reason": reason, "code": code}, status=code)


Script = list[Callable[[], web.Response]]


@pytest.fixture
async def scripted() -> AsyncIterator[tuple[str, Script, list[str]]]:
    """A plain-HTTP server answering each request with the next scripted answer (the
    last one repeats); the requests it got, as METHOD PATH."""
    script: Script = []
    got: list[str] = []

    async def answer(request: web.Request) -> web.Response:
        got.append(f"{request.method} {request.path}")
        return (script.pop(0) if len(script) > 1 else script[0])()

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield f"http://127.0.0.1:{port}", script, got
    await runner.cleanup()


def config_map() -> Resource:
    return Resource.from_dict({**CONFIG_MAP, "metadata": {"name": "cm", "namespace": "default"}})


def client_of(server: str, clock: FakeClock, **options: Any) -> HttpKubeClient:
    return HttpKubeClient(ClientConfig(server=server), clock=clock, **options)


def ok() -> web.Response:
    return web.json_response(CONFIG_MAP)


def retry_after(code: int, seconds: str) -> Callable[[], web.Response]:
    def answer() -> web.Response:
        response = status(code, "TooManyRequests" if code == 429 else "ServiceUnavailable")
        response.headers["Retry-After"] = seconds
        return response
    return answer


async def test_a_429_with_retry_after_is_sent_again_after_that_many_seconds(
        scripted: tuple[str, Script, list[str]]) -> None:
    server, script, got = scripted
    script.extend([retry_after(429, "3"), retry_after(429, "3"), ok])
    clock = InstantClock()
    client = client_of(server, clock, qps=0)
    obj = await client.get("ConfigMap", "cm")
    await client.close()
    assert obj.name == "cm" and len(got) == 3 and clock.sleeps == [3, 3]


async def test_a_write_the_server_refused_with_503_and_retry_after_is_sent_again(
        scripted: tuple[str, Script, list[str]]) -> None:
    server, script, got = scripted
    script.extend([retry_after(503, "1"), lambda: web.json_response(CONFIG_MAP, status=201)])
    clock = InstantClock()
    client = client_of(server, clock, qps=0)
    created = await client.create(config_map())
    await client.close()
    assert created.name == "cm" and got == ["POST /api/v1/namespaces/default/configmaps"] * 2
    assert clock.sleeps == [1]


async def test_a_500_without_retry_after_is_not_sent_again(
        scripted: tuple[str, Script, list[str]]) -> None:
    server, script, got = scripted
    script.append(lambda: status(500, "InternalError"))
    client = client_of(server, InstantClock(), qps=0)
    with pytest.raises(StatusError) as caught:
        await client.get("ConfigMap", "cm")
    await client.close()
    assert caught.value.code == 500 and caught.value.reason == "InternalError" and len(got) == 1


async def test_retries_end_after_max_retries_with_the_last_answer(
        scripted: tuple[str, Script, list[str]]) -> None:
    server, script, got = scripted
    script.append(retry_after(429, "1"))
    client = client_of(server, InstantClock(), qps=0, max_retries=2)
    with pytest.raises(TooManyRequests):
        await client.get("ConfigMap", "cm")
    await client.close()
    assert len(got) == 3


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_a_read_that_cannot_connect_backs_off_and_then_says_unreachable() -> None:
    clock = InstantClock()
    backoff = Backoff(duration=0.5, factor=2.0, steps=4, cap=1.5)
    client = client_of(f"http://127.0.0.1:{closed_port()}", clock, qps=0, max_retries=3,
                       connection_backoff=backoff)
    with pytest.raises(ApiUnreachable):
        await client.get("ConfigMap", "cm")
    await client.close()
    assert client.requests == 4 and clock.sleeps == [0.5, 1.0, 1.5]


async def test_a_write_that_cannot_connect_is_not_sent_again() -> None:
    clock = InstantClock()
    client = client_of(f"http://127.0.0.1:{closed_port()}", clock, qps=0)
    with pytest.raises(ApiUnreachable):
        await client.create(config_map())
    await client.close()
    assert client.requests == 1 and clock.sleeps == []


async def test_requests_past_the_burst_wait_their_turn_at_the_qps(
        scripted: tuple[str, Script, list[str]]) -> None:
    server, script, got = scripted
    script.append(ok)
    clock = InstantClock()
    client = client_of(server, clock, qps=5, burst=2)
    for _ in range(4):
        await client.get("ConfigMap", "cm")
    await client.close()
    assert len(got) == 4 and clock.sleeps == pytest.approx([0.2, 0.2])


def test_the_bucket_starts_full_with_the_burst_and_refills_at_the_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=5, burst=10, clock=clock)  # client-go's rest.Config defaults
    assert [bucket.try_accept() for _ in range(11)] == [True] * 10 + [False]
    clock.advance(0.2)
    assert bucket.try_accept() and not bucket.try_accept()
    clock.advance(60)
    assert sum(bucket.try_accept() for _ in range(20)) == 10  # never more than the burst


def test_waiters_reserve_tokens_in_arrival_order() -> None:
    bucket = TokenBucket(qps=2, burst=1, clock=FakeClock())
    assert [bucket.reserve() for _ in range(4)] == [0.0, 0.5, 1.0, 1.5]


def test_a_bucket_without_qps_never_waits() -> None:
    bucket = TokenBucket(qps=0, burst=0, clock=FakeClock())
    assert all(bucket.reserve() == 0.0 for _ in range(100))


def test_a_list_item_without_kind_and_api_version_decodes_as_the_lists_kind() -> None:
    # kube-apiserver leaves kind and apiVersion out of a list's items
    r = builtin_resource("ConfigMap")
    assert r is not None
    item = json.loads(json.dumps({"metadata": {"name": "x", "namespace": "default"}}))
    assert _object(item, r, "v1").kind == "ConfigMap"
