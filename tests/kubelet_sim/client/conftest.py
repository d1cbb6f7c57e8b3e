"""The client tests' servers: a `kubelet-sim apiserver` process per test module (the
HTTPS side), and :func:`side`, one test run over each KubeClient — a fresh in-process
API server, and the module's apiserver process over HTTPS."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import pytest

from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.in_process import InProcessClient
from kubelet_sim.client.kube_client import KubeClient
from tests.fixtures.apiserver_process import ApiServerProcess


@dataclass
class Side:
    """A client, and how to make its server forget the watch history (410 next)."""

    name: str
    client: KubeClient
    expire: Callable[[], Awaitable[None]]


async def drop_watches(client: HttpKubeClient) -> None:
    """End every watch and forget the history (the debug fault endpoint)."""
    await client._send("POST", "/debug/kubelet-sim/faults", body={"dropWatches": True})


@pytest.fixture(params=["in-process", "https"])
async def side(request: pytest.FixtureRequest) -> AsyncIterator[Side]:
    if request.param == "in-process":
        api = APIServer()

        async def expire_in_process() -> None:
            api.close_watches(expire=True)

        yield Side("in-process", InProcessClient(api), expire_in_process)
        return
    server: ApiServerProcess = request.getfixturevalue("server")
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)

    async def expire_over_http() -> None:
        await drop_watches(client)

    yield Side("https", client, expire_over_http)
    await client.close()
