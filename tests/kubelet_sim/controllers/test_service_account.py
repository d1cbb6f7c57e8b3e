"""kube-controller-manager's service account controller: every namespace that is not
terminating has a ``default`` ServiceAccount, including namespaces created later and
after the ServiceAccount was deleted."""

from __future__ import annotations

from kubelet_sim.api.model import new
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers.service_account import ServiceAccountController
from kubelet_sim.testing.fake_clock import FakeClock


def accounts(api: APIServer) -> set[tuple[str, str]]:
    return {(sa.namespace, sa.name) for sa in api.list("ServiceAccount").items}


async def test_every_namespace_gets_a_default_service_account_even_one_created_later() -> None:
    api = APIServer(clock=FakeClock())
    controller = ServiceAccountController(api)
    assert await controller.sync_once()
    assert accounts(api) == {("default", "default"), ("kube-system", "default")}
    api.create(new("Namespace", "team-a"))
    assert await controller.sync_once()
    assert ("team-a", "default") in accounts(api)
    assert not await controller.sync_once()  # nothing left to do


async def test_a_deleted_default_service_account_comes_back() -> None:
    api = APIServer(clock=FakeClock())
    controller = ServiceAccountController(api)
    await controller.sync_once()
    api.delete("ServiceAccount", "default", "default")
    assert await controller.sync_once()
    assert ("default", "default") in accounts(api)


async def test_a_terminating_namespace_gets_none() -> None:
    api = APIServer(clock=FakeClock())
    ns = new("Namespace", "going")
    ns.metadata.finalizers = ["example.com/hold"]
    api.create(ns)
    api.delete("Namespace", "going")
    await ServiceAccountController(api).sync_once()
    assert ("going", "default") not in accounts(api)
