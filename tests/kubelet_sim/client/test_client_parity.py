"""Code written against KubeClient cannot tell the two implementations apart: each
failure is the same exception class (with the same code and field causes) whether the
API server is in the process or behind HTTPS, and the verbs answer the same objects."""

from __future__ import annotations

import contextlib

import pytest
import yaml

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import (
    AlreadyExists,
    ApplyConflict,
    BadRequest,
    Conflict,
    InvalidObject,
    InvalidOptions,
    NotFound,
    ObjectForbidden,
)
from kubelet_sim.api.model import JSON, Resource, new
from kubelet_sim.client.kube_client import APPLY_PATCH, JSON_PATCH, KubeClient
from tests.fixtures.up_process import PROJECT_ROOT
from tests.kubelet_sim.client.conftest import Side


async def namespace(client: KubeClient, name: str) -> str:
    await client.create(new("Namespace", name))
    return name


async def test_a_missing_object_is_not_found_on_both(side: Side) -> None:
    with pytest.raises(NotFound) as caught:
        await side.client.get("ConfigMap", "missing", "default")
    assert caught.value.code == 404
    with pytest.raises(NotFound):
        await side.client.patch("ConfigMap", "missing", {"data": {}}, "default")
    with pytest.raises(NotFound):
        await side.client.delete("ConfigMap", "missing", "default")


async def test_a_taken_name_and_a_stale_write_are_the_same_409s_on_both(side: Side) -> None:
    ns = await namespace(side.client, "parity-conflicts")
    first = await side.client.create(new("ConfigMap", "cm", ns, data={"v": "1"}))
    with pytest.raises(AlreadyExists):
        await side.client.create(new("ConfigMap", "cm", ns))
    moved = first.copy()
    moved.body["data"] = {"v": "2"}
    await side.client.update(moved)
    first.body["data"] = {"v": "3"}
    with pytest.raises(Conflict):
        await side.client.update(first)
    with pytest.raises(Conflict):
        await side.client.delete("ConfigMap", "cm", ns, uid="another-uid")
    with pytest.raises(Conflict):  # a JSON patch carrying a stale resourceVersion
        await side.client.patch("ConfigMap", "cm", [
            {"op": "replace", "path": "/metadata/resourceVersion",
             "value": first.metadata.resource_version}], ns, patch_type=JSON_PATCH)


async def test_an_invalid_object_names_the_same_field_on_both(side: Side) -> None:
    pod = b.pod("Invalid_Pod")
    with pytest.raises(InvalidObject) as caught:
        await side.client.create(pod)
    assert caught.value.code == 422
    assert ("FieldValueInvalid", "metadata.name") in [
        (e.reason, e.field) for e in caught.value.errors]


async def test_a_selector_that_does_not_parse_is_bad_request_on_both(side: Side) -> None:
    with pytest.raises(BadRequest):
        await side.client.list("Pod", label_selector="a in (")


async def test_the_verbs_answer_the_same_objects_on_both(side: Side) -> None:
    ns = await namespace(side.client, "parity-verbs")
    created = await side.client.create(b.pod("p", ns, labels={"app": "x"}))
    assert created.kind == "Pod" and created.namespace == ns and created.metadata.uid
    await side.client.bind("p", ns, "node-1", uid=created.metadata.uid)
    bound = await side.client.get("Pod", "p", ns)
    assert bound.spec["nodeName"] == "node-1"
    bound.status["phase"] = "Running"
    assert (await side.client.update_status(bound)).status["phase"] == "Running"
    patched = await side.client.patch("Pod", "p", {"metadata": {"labels": {"y": "1"}}}, ns)
    assert patched.labels == {"app": "x", "y": "1"}
    listed = await side.client.list("Pod", ns, label_selector="app=x")
    assert [p.to_dict() for p in listed.items] == [patched.to_dict()]
    deleted = await side.client.delete("Pod", "p", ns)
    assert deleted is not None and deleted.is_terminating  # a scheduled pod is graceful


async def test_server_side_apply_creates_and_a_second_manager_meets_apply_conflict_on_both(
        side: Side) -> None:
    config: JSON = {"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "applied", "namespace": "default"},
                    "data": {"k": "a"}}

    async def apply(body: JSON, manager: str, force: bool = False) -> Resource:
        return await side.client.patch("ConfigMap", "applied", body, "default",
                                       patch_type=APPLY_PATCH, field_manager=manager,
                                       force=force)

    applied = await apply(config, "first")
    assert applied.body["data"] == {"k": "a"}
    assert [m["manager"] for m in applied.metadata.managed_fields] == ["first"]
    taken = {**config, "data": {"k": "b"}}
    with pytest.raises(ApplyConflict) as caught:
        await apply(taken, "second")
    assert caught.value.code == 409
    assert [c["field"] for c in caught.value.causes] == [".data.k"]
    assert (await apply(taken, "second", force=True)).body["data"] == {"k": "b"}


async def test_apply_without_a_field_manager_is_invalid_options_on_both(side: Side) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nameless"}}
    with pytest.raises(InvalidOptions) as caught:
        await side.client.patch("ConfigMap", "nameless", config, "default",
                                patch_type=APPLY_PATCH)
    assert caught.value.options_kind == "PatchOptions"
    assert caught.value.causes[0]["field"] == "fieldManager"


async def test_a_foreground_delete_leaves_the_object_terminating_with_its_finalizer_on_both(
        side: Side) -> None:
    ns = await namespace(side.client, "parity-foreground")
    await side.client.create(new("ConfigMap", "owner", ns))
    left = await side.client.delete("ConfigMap", "owner", ns, propagation_policy="Foreground")
    assert left is not None and left.is_terminating
    assert left.metadata.finalizers == ["foregroundDeletion"]
    assert (await side.client.get("ConfigMap", "owner", ns)).is_terminating


async def test_a_quiet_watch_ends_after_its_timeout_seconds_on_both(side: Side) -> None:
    ns = await namespace(side.client, "parity-timeout")
    listed = await side.client.list("ConfigMap", ns)
    watch = await side.client.watch("ConfigMap", ns, resource_version=listed.resource_version,
                                    timeout_seconds=1)
    assert [event async for event in watch] == []  # the server ended it, nothing sent


async def test_finalize_of_a_terminating_namespace_without_finalizers_removes_it_on_both(
        side: Side) -> None:
    ns = await namespace(side.client, "parity-finalize")
    await side.client.create(new("ConfigMap", "kept", ns))
    await side.client.delete("Namespace", ns)
    terminating = await side.client.get("Namespace", ns)
    assert terminating.is_terminating and terminating.spec["finalizers"] == ["kubernetes"]
    stale = terminating.copy()
    terminating.spec["finalizers"] = []
    stale.metadata.resource_version = "1"
    with pytest.raises(Conflict):  # a resourceVersion sent is a precondition
        await side.client.finalize(stale)
    finalized = await side.client.finalize(terminating)
    assert finalized.spec.get("finalizers") in (None, [])
    with pytest.raises(NotFound):  # nothing held it any more
        await side.client.get("Namespace", ns)


async def test_discovery_lists_the_built_in_and_the_custom_kinds_on_both(side: Side) -> None:
    crd = yaml.safe_load((PROJECT_ROOT / "tests" / "fixtures" / "widgets_crd.yaml").read_text())
    with contextlib.suppress(AlreadyExists):
        await side.client.create(Resource.from_dict(crd))
    served = {s.kind: s for s in await side.client.served_kinds()}
    pods, deployments = served["Pod"], served["Deployment"]
    assert (pods.resource, pods.namespaced, pods.custom) == ("pods.", True, False)
    assert deployments.resource == "deployments.apps" and deployments.allows("list", "watch",
                                                                             "delete")
    assert not served["Namespace"].allows("deletecollection")
    assert not served["Node"].namespaced
    widgets = served["Widget.stable.example.com"]
    assert (widgets.resource, widgets.namespaced, widgets.custom) == (
        "widgets.stable.example.com", True, True)
    assert widgets.group_version == "stable.example.com/v1"
    assert widgets.served_in("stable.example.com/v1beta1") and not widgets.served_in(
        "stable.example.com/v2")
    assert served["Deployment"].served_in("apps/v1")
    assert "Binding" not in served and "ComponentStatus" not in served
    listed = await side.client.list("Widget.stable.example.com", "default")
    assert listed.items == []


async def test_an_admission_refusal_of_one_object_is_object_forbidden_on_both(
        side: Side) -> None:
    """A quota's 403 (`pods "p" is forbidden: exceeded quota: ...`) is the same
    ObjectForbidden on both, so a controller words its FailedCreate event the same."""
    ns = await namespace(side.client, "parity-forbidden")
    quota = await side.client.create(Resource.from_dict({
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": ns},
        "spec": {"hard": {"pods": "0"}}}))
    quota.status = {"hard": {"pods": "0"}, "used": {"pods": "0"}}
    await side.client.update_status(quota)
    with pytest.raises(ObjectForbidden) as caught:
        await side.client.create(b.pod("p", ns))
    assert caught.value.code == 403
    assert caught.value.name == "p"
    assert caught.value.worded("pods").startswith('pods "p" is forbidden: exceeded quota: q')
