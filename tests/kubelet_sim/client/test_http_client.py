"""The HTTPS client against a real `kubelet-sim apiserver` process: the verbs round-trip
Resource objects, and every failure arrives as the exception the in-process API server
raises for it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import yaml

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import (
    AlreadyExists,
    Conflict,
    Gone,
    InvalidObject,
    NotFound,
    TooManyRequests,
)
from kubelet_sim.api.model import Resource, forget_custom_kind, new
from kubelet_sim.client.http import HttpKubeClient
from kubelet_sim.client.kube_client import (
    ADDED,
    BOOKMARK,
    DELETED,
    INITIAL_EVENTS_END,
    JSON_PATCH,
    MODIFIED,
    STRATEGIC_MERGE_PATCH,
    KubeClient,
)
from tests.fixtures.apiserver_process import ApiServerProcess
from tests.fixtures.up_process import KUBECTL, PROJECT_ROOT
from tests.kubelet_sim.client.conftest import drop_watches

FIXTURES = PROJECT_ROOT / "tests" / "fixtures"


@pytest.fixture
async def client(server: ApiServerProcess) -> AsyncIterator[HttpKubeClient]:
    client = HttpKubeClient.from_kubeconfig(server.kubeconfig, qps=0)
    yield client
    await client.close()


def test_the_apiserver_alone_serves_kubectl_with_the_system_namespaces_and_no_nodes(
        server: ApiServerProcess) -> None:
    def kubectl(*args: str) -> str:
        return subprocess.run([str(KUBECTL), "--kubeconfig", str(server.kubeconfig), *args],
                              capture_output=True, text=True, check=True, timeout=30).stdout

    assert kubectl("get", "namespaces", "-o", "name").split() == [
        "namespace/default", "namespace/kube-node-lease", "namespace/kube-public",
        "namespace/kube-system"]
    assert kubectl("get", "nodes", "-o", "name").strip() == ""
    assert "service/kubernetes" in kubectl("get", "services", "-o", "name")


async def test_the_http_client_is_a_kube_client(client: HttpKubeClient) -> None:
    assert isinstance(client, KubeClient)


async def test_create_get_update_status_and_delete_round_trip_resources(
        client: HttpKubeClient) -> None:
    created = await client.create(b.pod("round-trip", labels={"app": "rt"}))
    assert created.kind == "Pod" and created.metadata.uid and created.status["phase"] == "Pending"
    got = await client.get("Pod", "round-trip", "default")
    assert got.to_dict() == created.to_dict()
    got.labels["tier"] = "web"
    updated = await client.update(got)
    assert updated.labels == {"app": "rt", "tier": "web"}
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    updated.status["phase"] = "Running"
    assert (await client.update_status(updated)).status["phase"] == "Running"
    deleted = await client.delete("Pod", "round-trip", "default", grace_period_seconds=0)
    assert deleted is not None and deleted.name == "round-trip"
    with pytest.raises(NotFound):
        await client.get("Pod", "round-trip", "default")


async def test_a_missing_object_is_not_found_with_kube_apiservers_message(
        client: HttpKubeClient) -> None:
    with pytest.raises(NotFound) as caught:
        await client.get("StorageClass", "nowhere")
    assert caught.value.code == 404
    assert caught.value.message == 'storageclasses.storage.k8s.io "nowhere" not found'
    assert caught.value.name == "nowhere"


async def test_a_taken_name_is_already_exists_and_a_stale_write_is_conflict(
        client: HttpKubeClient) -> None:
    cm = await client.create(new("ConfigMap", "taken", "default", data={"a": "1"}))
    with pytest.raises(AlreadyExists) as exists:
        await client.create(new("ConfigMap", "taken", "default"))
    assert exists.value.code == 409 and exists.value.message == 'configmaps "taken" already exists'
    await client.update(cm)  # unchanged: no write
    cm.body["data"] = {"a": "2"}
    await client.update(cm)
    cm.body["data"] = {"a": "3"}  # still carrying the version before the last write
    with pytest.raises(Conflict) as stale:
        await client.update(cm)
    assert stale.value.name == "taken" and "the object has been modified" in stale.value.message
    with pytest.raises(Conflict):
        await client.delete("ConfigMap", "taken", "default", uid="not-its-uid")


async def test_an_invalid_object_is_invalid_with_its_field_causes(
        client: HttpKubeClient) -> None:
    with pytest.raises(InvalidObject) as caught:
        await client.create(new("ConfigMap", "Not_A_Name", "default"))
    err = caught.value
    assert err.code == 422 and err.qualified_kind == "ConfigMap"
    assert [(e.reason, e.field) for e in err.errors] == [("FieldValueInvalid", "metadata.name")]
    assert err.message.startswith('ConfigMap "Not_A_Name" is invalid: metadata.name: ')


async def test_lists_page_with_limit_and_continue_and_select_by_labels(
        client: HttpKubeClient) -> None:
    for i in range(5):
        await client.create(new("ConfigMap", f"page-{i}", "default", labels={"page": "yes"}))
    first = await client.list("ConfigMap", "default", label_selector="page=yes", limit=2)
    assert [o.name for o in first.items] == ["page-0", "page-1"] and first.continue_token
    rest = await client.list("ConfigMap", "default", label_selector="page=yes",
                             continue_from=first.continue_token)
    assert [o.name for o in rest.items] == ["page-2", "page-3", "page-4"]
    assert all(o.kind == "ConfigMap" for o in rest.items) and rest.resource_version


async def test_merge_json_and_strategic_merge_patches_apply(client: HttpKubeClient) -> None:
    await client.create(b.pod("patched", labels={"app": "p"}))
    merged = await client.patch("Pod", "patched", {"metadata": {"labels": {"x": "1"}}},
                                "default")
    assert merged.labels == {"app": "p", "x": "1"}
    json_patched = await client.patch("Pod", "patched", [
        {"op": "remove", "path": "/metadata/labels/x"}], "default", patch_type=JSON_PATCH)
    assert json_patched.labels == {"app": "p"}
    image = json_patched.spec["containers"][0]["name"]
    strategic = await client.patch("Pod", "patched", {"spec": {"containers": [
        {"name": image, "image": "busybox:2"}]}}, "default", patch_type=STRATEGIC_MERGE_PATCH)
    assert [c["image"] for c in strategic.spec["containers"]] == ["busybox:2"]
    status = await client.patch("Pod", "patched", {"status": {"phase": "Running"}}, "default",
                                subresource="status")
    assert status.status["phase"] == "Running"


async def test_bind_assigns_the_node_and_a_second_bind_is_conflict(
        client: HttpKubeClient) -> None:
    pod = await client.create(b.pod("to-bind"))
    await client.bind("to-bind", "default", "node-a", uid=pod.metadata.uid)
    assert (await client.get("Pod", "to-bind", "default")).spec["nodeName"] == "node-a"
    with pytest.raises(Conflict, match="already assigned"):
        await client.bind("to-bind", "default", "node-b")


async def test_eviction_a_budget_forbids_is_too_many_requests(client: HttpKubeClient) -> None:
    guarded = await client.create(b.pod("guarded", labels={"guard": "me"}))
    guarded.status.update(phase="Running", conditions=[{"type": "Ready", "status": "True"}])
    await client.update_status(guarded)  # a running pod is what a budget guards
    await client.create(new("PodDisruptionBudget", "guard", "default", spec={
        "maxUnavailable": 0, "selector": {"matchLabels": {"guard": "me"}}}))
    with pytest.raises(TooManyRequests):
        await client.evict("guarded", "default")
    await client.create(b.pod("free"))
    await client.evict("free", "default")  # unscheduled, it goes at once
    with pytest.raises(NotFound):
        await client.get("Pod", "free", "default")


async def test_a_service_account_token_is_issued(client: HttpKubeClient) -> None:
    await client.create(new("ServiceAccount", "robot", "default"))
    answered = await client.request_token("default", "robot", {
        "spec": {"audiences": ["api"], "expirationSeconds": 3600}})
    assert answered["kind"] == "TokenRequest" and answered["status"]["token"].count(".") == 2


async def test_a_watch_streams_typed_events_after_a_streaming_lists_bookmark(
        client: HttpKubeClient) -> None:
    await client.create(new("ConfigMap", "watched", "kube-public", data={"v": "1"}))
    watch = await client.watch("ConfigMap", "kube-public", send_initial_events=True,
                               timeout_seconds=30)
    events = []
    async for event in watch:
        events.append(event)
        if event.type == BOOKMARK:
            break
    assert [(e.type, e.object.name) for e in events[:-1]] == [(ADDED, "watched")]
    end = events[-1].object
    assert end.metadata.annotations == {INITIAL_EVENTS_END: "true"}
    assert int(end.metadata.resource_version) >= int(events[0].object.metadata.resource_version)
    cm = await client.get("ConfigMap", "watched", "kube-public")
    cm.body["data"] = {"v": "2"}
    await client.update(cm)
    await client.delete("ConfigMap", "watched", "kube-public")
    seen = []
    async for event in watch:
        seen.append((event.type, event.object.name, event.object.body.get("data")))
        if event.type == DELETED:
            break
    watch.stop()
    assert seen == [(MODIFIED, "watched", {"v": "2"}), (DELETED, "watched", {"v": "2"})]


async def test_a_watch_from_an_expired_version_raises_gone(client: HttpKubeClient) -> None:
    listed = await client.list("ConfigMap", "default")
    await client.create(new("ConfigMap", "after-list", "default"))
    await drop_watches(client)  # the history before now is gone
    watch = await client.watch("ConfigMap", "default", resource_version=listed.resource_version)
    with pytest.raises(Gone):
        async for _ in watch:
            pass


def test_a_second_apiserver_on_the_same_state_dir_is_refused(server: ApiServerProcess) -> None:
    done = subprocess.run([sys.executable, "-m", "kubelet_sim", "apiserver", "--state-dir",
                           str(server.state)], cwd=PROJECT_ROOT, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2 and "in use by PID" in done.stderr


async def test_a_custom_kind_is_found_by_discovery_and_round_trips(
        client: HttpKubeClient) -> None:
    kind = "Widget.stable.example.com"
    definition = yaml.safe_load((FIXTURES / "widgets_crd.yaml").read_text())
    await client.create(Resource.from_dict(definition))
    try:
        served = await client.resource(kind)
        assert (served.group_version, served.plural, served.namespaced) == (
            "stable.example.com/v1", "widgets", True)
        created = await client.create(Resource.from_dict({
            "apiVersion": "stable.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"}, "spec": {"size": "1Gi"}}))
        assert created.kind == kind and created.body["spec"]["color"] == "blue"  # defaulted
        listed = await client.list(kind, "default")
        assert [w.name for w in listed.items] == ["w1"]
    finally:
        forget_custom_kind(kind)  # this process's model knew it from discovery only

