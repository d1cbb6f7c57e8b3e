"""The ResourceQuota admission plugin on the in-process API server: what it refuses, in
kube-apiserver's words, and what it charges to ``status.used`` before the object is
stored."""

from __future__ import annotations

import pytest

from kubelet_sim.api import builders as b
from kubelet_sim.api.errors import ObjectForbidden
from kubelet_sim.apiserver.server import APIServer
from kubelet_sim.testing.fake_clock import FakeClock

from .support import claim, computed, pod, quota, used


@pytest.fixture
def api() -> APIServer:
    return APIServer(clock=FakeClock())


def refusal(api: APIServer, body: dict) -> str:
    with pytest.raises(ObjectForbidden) as caught:
        api.create(body)
    return caught.value.why


def test_a_create_past_the_hard_limit_is_refused_with_requested_used_and_limited(
        api: APIServer) -> None:
    computed(api, quota("q", {"pods": "2"}))
    api.create(pod("a"))
    api.create(pod("b"))
    assert refusal(api, pod("c")) == ("exceeded quota: q, requested: pods=1, used: pods=2, "
                                      "limited: pods=2")


def test_each_admitted_create_is_charged_at_once_so_two_cannot_share_the_last_unit(
        api: APIServer) -> None:
    computed(api, quota("q", {"pods": "1", "requests.cpu": "1"}))
    api.create(pod("a", {"cpu": "600m"}))
    assert used(api, "q") == {"pods": "1", "requests.cpu": "600m"}
    assert refusal(api, pod("b", {"cpu": "100m"})).startswith("exceeded quota: q, requested: "
                                                             "pods=1, used: pods=1")


def test_only_the_exceeded_resources_are_named(api: APIServer) -> None:
    computed(api, quota("q", {"pods": "5", "requests.cpu": "1"}))
    api.create(pod("a", {"cpu": "800m"}))
    assert refusal(api, pod("b", {"cpu": "300m"})) == (
        "exceeded quota: q, requested: requests.cpu=300m, used: requests.cpu=800m, "
        "limited: requests.cpu=1")


def test_a_tracked_cpu_or_memory_must_be_set_on_every_container(api: APIServer) -> None:
    computed(api, quota("q", {"limits.memory": "1Gi", "requests.cpu": "2"}))
    body = pod("a", {"cpu": "100m"})
    body["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    assert refusal(api, body) == ("failed quota: q: must specify limits.memory for: "
                                  "init,main; requests.cpu for: init")


def test_a_quota_the_controller_has_not_computed_tracks_nothing_yet(api: APIServer) -> None:
    api.create(quota("q", {"pods": "0"}))
    api.create(pod("a"))  # no status.hard yet: the quota matches nothing
    assert used(api, "q") == {}


def test_a_used_entry_missing_for_a_tracked_resource_is_status_unknown(api: APIServer) -> None:
    created = api.create(quota("q", {"pods": "2", "requests.cpu": "1"}))
    created.status = {"hard": {"pods": "2", "requests.cpu": "1"}, "used": {"pods": "0"}}
    api.update_status(created)
    assert refusal(api, pod("a", {"cpu": "1"})) == (
        "status unknown for quota: q, resources: pods,requests.cpu")


def test_claims_are_charged_their_storage_also_per_storage_class(api: APIServer) -> None:
    computed(api, quota("q", {"persistentvolumeclaims": "3", "requests.storage": "2Gi",
                              "gold.storageclass.storage.k8s.io/requests.storage": "1Gi",
                              "count/persistentvolumeclaims": "10"}))
    api.create(claim("a", "500Mi", "gold"))
    assert used(api, "q") == {"persistentvolumeclaims": "1", "requests.storage": "500Mi",
                              "gold.storageclass.storage.k8s.io/requests.storage": "500Mi",
                              "count/persistentvolumeclaims": "1"}
    assert refusal(api, claim("b", "600Mi", "gold")) == (
        "exceeded quota: q, requested: gold.storageclass.storage.k8s.io/requests.storage="
        "600Mi, used: gold.storageclass.storage.k8s.io/requests.storage=500Mi, limited: "
        "gold.storageclass.storage.k8s.io/requests.storage=1Gi")
    api.create(claim("c", "1Gi"))  # another class: only the namespace's total counts
    assert used(api, "q")["requests.storage"] == "1524Mi"


def test_growing_a_claim_is_charged_only_what_it_adds(api: APIServer) -> None:
    computed(api, quota("q", {"requests.storage": "3Gi"}))
    api.create(b.storage_class("fast", "csi.example.com", allow_volume_expansion=True))
    api.create(claim("a", "1Gi", "fast"))
    bound = api.get("PersistentVolumeClaim", "a")
    bound.status = {"phase": "Bound", "capacity": {"storage": "1Gi"}}
    api.update_status(bound)
    grown = api.get("PersistentVolumeClaim", "a")
    grown.spec["resources"]["requests"]["storage"] = "2Gi"
    api.update(grown)
    assert used(api, "q") == {"requests.storage": "2Gi"}
    grown = api.get("PersistentVolumeClaim", "a")
    grown.spec["resources"]["requests"]["storage"] = "4Gi"
    with pytest.raises(ObjectForbidden) as caught:
        api.update(grown)
    assert caught.value.why == ("exceeded quota: q, requested: requests.storage=2Gi, used: "
                                "requests.storage=2Gi, limited: requests.storage=3Gi")


def test_object_counts_cover_every_namespaced_kind_and_the_legacy_names(
        api: APIServer) -> None:
    computed(api, quota("q", {"configmaps": "1", "count/deployments.apps": "1",
                              "count/secrets": "5"}))
    api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})
    assert refusal(api, {"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "b"}}) == (
        "exceeded quota: q, requested: configmaps=1, used: configmaps=1, limited: "
        "configmaps=1")
    template = {"metadata": {"labels": {"app": "w"}},
                "spec": {"containers": [{"name": "w", "image": "nginx"}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
                  "spec": {"selector": {"matchLabels": {"app": "w"}}, "template": template}}
    api.create(deployment)
    assert refusal(api, {**deployment, "metadata": {"name": "w2"}}).startswith(
        "exceeded quota: q, requested: count/deployments.apps=1")


def test_node_ports_of_services_are_counted(api: APIServer) -> None:
    computed(api, quota("q", {"services.nodeports": "1", "services": "5"}))
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "np"},
               "spec": {"type": "NodePort", "selector": {"app": "a"},
                        "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}}
    assert refusal(api, service) == ("exceeded quota: q, requested: services.nodeports=2, "
                                     "used: services.nodeports=0, limited: "
                                     "services.nodeports=1")


@pytest.mark.parametrize(("scopes", "counted"), [
    (["BestEffort"], {"besteffort"}),
    (["NotBestEffort"], {"burstable", "deadline"}),
    (["Terminating"], {"deadline"}),
    (["NotTerminating"], {"besteffort", "burstable"}),
])
def test_scopes_choose_the_pods_a_quota_counts(api: APIServer, scopes: list[str],
                                               counted: set[str]) -> None:
    computed(api, quota("q", {"pods": "10"}, scopes=scopes))
    api.create(pod("besteffort"))
    api.create(pod("burstable", {"cpu": "100m"}))
    api.create(pod("deadline", {"memory": "1Mi"}, activeDeadlineSeconds=60))
    assert used(api, "q") == {"pods": str(len(counted))}


def test_a_priority_class_scope_selector_counts_the_pods_of_that_class(api: APIServer) -> None:
    computed(api, quota("q", {"pods": "1"}, scopeSelector={"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}))
    api.create(pod("low", priorityClassName="low"))
    api.create(pod("high", priorityClassName="high"))
    assert refusal(api, pod("high-2", priorityClassName="high")).startswith(
        "exceeded quota: q, requested: pods=1")


def test_a_claims_allocated_storage_growing_is_charged_but_never_refused(
        api: APIServer) -> None:
    computed(api, quota("q", {"requests.storage": "2Gi"}))
    api.create(claim("a", "1Gi"))
    resized = api.get("PersistentVolumeClaim", "a")
    resized.status = {"phase": "Bound", "allocatedResources": {"storage": "3Gi"}}
    api.update_status(resized)  # the resizer's write: the storage is there already
    assert used(api, "q") == {"requests.storage": "3Gi"}


def test_custom_resources_are_counted_under_their_definitions_name(api: APIServer) -> None:
    api.create({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                "metadata": {"name": "widgets.example.com"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"plural": "widgets", "kind": "Widget"},
                         "versions": [{"name": "v1", "served": True, "storage": True,
                                       "schema": {"openAPIV3Schema": {
                                           "type": "object",
                                           "x-kubernetes-preserve-unknown-fields": True}}}]}})
    computed(api, quota("q", {"count/widgets.example.com": "1"}))
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "a"}}
    api.create(widget)
    assert used(api, "q") == {"count/widgets.example.com": "1"}
    assert refusal(api, {**widget, "metadata": {"name": "b"}}) == (
        "exceeded quota: q, requested: count/widgets.example.com=1, used: "
        "count/widgets.example.com=1, limited: count/widgets.example.com=1")
