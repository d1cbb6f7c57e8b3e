"""The garbage collector with the API server's propagationPolicy: background, foreground
(blockOwnerDeletion), orphan, owners by uid, several owners; settled and as a live loop."""

from __future__ import annotations

import asyncio

import pytest
import yaml

from kubelet_sim.api.errors import Invalid, NotFound
from kubelet_sim.api.model import Resource
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.controllers import ControllerManager, garbage_collector
from kubelet_sim.controllers.garbage_collector import GarbageCollector
from tests.fixtures.up_process import PROJECT_ROOT


def lease(api: APIServer, name: str, *owners: Resource, block: bool = False) -> Resource:
    refs = [{"apiVersion": o.api_version, "kind": o.kind, "name": o.name,
             "uid": o.metadata.uid, **({"blockOwnerDeletion": True} if block else {})}
            for o in owners]
    return api.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": name, "namespace": "default",
                                    "ownerReferences": refs},
                       "spec": {"holderIdentity": name}})


def exists(api: APIServer, name: str) -> bool:
    try:
        api.get("Lease", name, "default")
    except NotFound:
        return False
    return True


@pytest.fixture
def api() -> APIServer:
    return APIServer()


@pytest.fixture
def gc(api: APIServer) -> ControllerManager:
    return ControllerManager([GarbageCollector(api)])


async def test_background_deletes_dependents_after_the_owner(
        api: APIServer, gc: ControllerManager) -> None:
    owner = lease(api, "owner")
    child = lease(api, "child", owner)
    lease(api, "grandchild", child)
    lease(api, "stranger")
    await gc.settle()
    api.delete("Lease", "owner", "default", propagation_policy="Background")
    assert not exists(api, "owner")
    await gc.settle()
    assert not exists(api, "child") and not exists(api, "grandchild")
    assert exists(api, "stranger")


async def test_an_owner_counts_by_uid_not_by_name(api: APIServer, gc: ControllerManager) -> None:
    owner = lease(api, "owner")
    lease(api, "child", owner)
    api.delete("Lease", "owner", "default")
    lease(api, "owner")  # same name, new uid: not the owner the child names
    await gc.settle()
    assert not exists(api, "child")
    assert exists(api, "owner")


async def test_a_dependent_with_a_living_owner_only_loses_the_gone_reference(
        api: APIServer, gc: ControllerManager) -> None:
    first, second = lease(api, "first"), lease(api, "second")
    lease(api, "shared", first, second)
    await gc.settle()
    api.delete("Lease", "first", "default")
    await gc.settle()
    shared = api.get("Lease", "shared", "default")
    assert [r["name"] for r in shared.metadata.owner_references] == ["second"]


async def test_foreground_keeps_the_owner_until_blocking_dependents_are_gone(
        api: APIServer, gc: ControllerManager) -> None:
    owner = lease(api, "owner")
    child = lease(api, "child", owner, block=True)
    held = lease(api, "held", child, block=True)
    api.update(_with_finalizer(held, "example.com/hold"))
    deleting = api.delete("Lease", "owner", "default", propagation_policy="Foreground")
    assert deleting.metadata.finalizers == ["foregroundDeletion"]
    assert deleting.metadata.deletion_timestamp
    await gc.settle()
    # held cannot go (its own finalizer), so child (foreground) and owner wait for it.
    assert exists(api, "owner") and exists(api, "child")
    assert api.get("Lease", "child", "default").is_terminating
    assert api.get("Lease", "held", "default").is_terminating
    released = api.get("Lease", "held", "default")
    released.metadata.finalizers = []
    api.update(released)
    await gc.settle()
    assert not exists(api, "held") and not exists(api, "child") and not exists(api, "owner")


async def test_foreground_does_not_wait_for_non_blocking_dependents(
        api: APIServer, gc: ControllerManager) -> None:
    owner = lease(api, "owner")
    loose = lease(api, "loose", owner)
    api.update(_with_finalizer(loose, "example.com/hold"))
    api.delete("Lease", "owner", "default", propagation_policy="Foreground")
    await gc.settle()
    assert not exists(api, "owner")
    assert api.get("Lease", "loose", "default").is_terminating


async def test_orphan_unlinks_the_dependents(api: APIServer, gc: ControllerManager) -> None:
    owner = lease(api, "owner")
    lease(api, "child", owner)
    deleting = api.delete("Lease", "owner", "default", propagation_policy="Orphan")
    assert deleting.metadata.finalizers == ["orphan"]
    await gc.settle()
    assert not exists(api, "owner")
    assert api.get("Lease", "child", "default").metadata.owner_references == []


async def test_a_later_delete_changes_the_policy(api: APIServer) -> None:
    lease(api, "owner")
    api.delete("Lease", "owner", "default", propagation_policy="Orphan")
    again = api.delete("Lease", "owner", "default", propagation_policy="Foreground")
    assert again.metadata.finalizers == ["foregroundDeletion"]
    api.delete("Lease", "owner", "default", propagation_policy="Background")
    assert not exists(api, "owner")


def test_an_unknown_policy_is_invalid(api: APIServer) -> None:
    lease(api, "owner")
    with pytest.raises(Invalid, match='Unsupported value: "Sideways"'):
        api.delete("Lease", "owner", "default", propagation_policy="Sideways")


async def test_the_live_loop_collects(api: APIServer) -> None:
    manager = ControllerManager([GarbageCollector(api, resync_seconds=60)])
    owner = lease(api, "owner")
    lease(api, "child", owner)
    manager.start()
    try:
        await asyncio.sleep(0.05)
        api.delete("Lease", "owner", "default")

        async def gone() -> None:
            while exists(api, "child"):
                await asyncio.sleep(0.01)
        await asyncio.wait_for(gone(), 10)
    finally:
        await manager.stop()


def _with_finalizer(obj: Resource, finalizer: str) -> Resource:
    out = obj.copy()
    out.metadata.finalizers = [*out.metadata.finalizers, finalizer]
    return out


async def test_custom_resources_are_collected_and_collect_as_owners(
        api: APIServer, gc: ControllerManager) -> None:
    api.create(yaml.safe_load((PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml")
                              .read_text()))
    owner = lease(api, "owner")
    refs = [{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "name": "owner",
             "uid": owner.metadata.uid}]
    api.create({"apiVersion": "stable.example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default", "ownerReferences": refs},
                "spec": {"size": "1Gi"}})
    widget_owner = api.create({"apiVersion": "stable.example.com/v1", "kind": "Widget",
                               "metadata": {"name": "parent", "namespace": "default"},
                               "spec": {"size": "1Gi"}})
    lease(api, "child", widget_owner)
    await gc.settle()
    api.delete("Lease", "owner", "default")
    api.delete("Widget.stable.example.com", "parent", "default")
    await gc.settle()
    assert [w.name for w in api.list("Widget.stable.example.com").items] == []
    assert not exists(api, "child")


async def test_changes_past_the_backlog_bound_are_dropped_and_the_graph_relisted(
        api: APIServer, gc: ControllerManager, monkeypatch: pytest.MonkeyPatch) -> None:
    collector = gc.get("garbage-collector")
    assert isinstance(collector, GarbageCollector)
    await gc.settle()  # the monitors are running
    monkeypatch.setattr(garbage_collector, "MAX_PENDING_CHANGES", 3)
    owner = lease(api, "owner")
    for i in range(5):
        lease(api, f"child-{i}", owner)
    assert collector._overflowed  # more changes than the bound came in before a pass
    api.delete("Lease", "owner", "default")
    await gc.settle()
    assert [name for name in (f"child-{i}" for i in range(5)) if exists(api, name)] == []
