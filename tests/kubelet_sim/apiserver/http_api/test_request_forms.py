"""The request forms and subresources kubectl and client-go use beyond plain CRUD, over
HTTPS with raw requests and the official Python client: pods/eviction with
PodDisruptionBudgets, pods/binding, deletecollection, metadata-only and YAML answers,
406/415, the self-subject reviews, /version, and bad resourceVersions."""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
from typing import Any

import pytest
import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from kubelet_sim.controllers.disruption import DisruptionController

from .conftest import Served

PARTIAL = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
PARTIAL_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
PODS = "/api/v1/namespaces/default/pods"


def call(served: Served, method: str, path: str, body: Any = None, *,
         accept: str = "application/json", content_type: str = "application/json",
         raw_body: bytes | None = None) -> tuple[int, str, bytes]:
    """One HTTPS request: (status, Content-Type, body bytes)."""
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    conn = http.client.HTTPSConnection("127.0.0.1", served.handle.port, context=tls,
                                       timeout=10)
    data = raw_body if raw_body is not None else (
        None if body is None else json.dumps(body).encode())
    headers = {"Authorization": f"Bearer {served.handle.credentials.token}",
               "Accept": accept}
    if data is not None:
        headers["Content-Type"] = content_type
    conn.request(method, path, body=data, headers=headers)
    answer = conn.getresponse()
    out = answer.status, answer.getheader("Content-Type", ""), answer.read()
    conn.close()
    return out


def call_json(served: Served, method: str, path: str, body: Any = None,
              **kwargs: Any) -> tuple[int, dict[str, Any]]:
    code, _, raw = call(served, method, path, body, **kwargs)
    return code, json.loads(raw)


def pod(name: str, labels: dict[str, str] | None = None, node: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels or {"app": "web"}}, "spec": spec}


def make_ready(served: Served, name: str) -> None:
    obj = served.api.get("Pod", name, "default")
    obj.status["phase"] = "Running"
    obj.status["conditions"] = [{"type": "Ready", "status": "True"}]
    served.api.update_status(obj)


def budget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def settle_budgets(served: Served) -> None:
    asyncio.run(DisruptionController(served.api).sync_once())


def eviction(name: str, **delete_options: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "policy/v1", "kind": "Eviction",
                            "metadata": {"name": name, "namespace": "default"}}
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


@pytest.fixture
def core(served: Served) -> Any:
    return client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))


# -- pods/eviction and PodDisruptionBudgets ---------------------------------------------

def test_the_disruption_controller_counts_the_ready_pods_a_budget_selects(
        served: Served) -> None:
    for name in ("a", "b", "c"):
        served.api.create(pod(name, node="node-1"))
    make_ready(served, "a")
    make_ready(served, "b")
    served.api.create(budget("web", minAvailable=1))
    settle_budgets(served)
    status = served.api.get("PodDisruptionBudget", "web", "default").status
    assert (status["expectedPods"], status["currentHealthy"], status["desiredHealthy"],
            status["disruptionsAllowed"], status["observedGeneration"]) == (3, 2, 1, 1, 1)
    allowed = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert (allowed["status"], allowed["reason"]) == ("True", "SufficientPods")


def test_an_eviction_the_budget_allows_deletes_the_pod_and_the_next_is_429(
        served: Served) -> None:
    for name in ("a", "b"):
        served.api.create(pod(name, node="node-1"))
        make_ready(served, name)
    served.api.create(budget("web", maxUnavailable=1))
    settle_budgets(served)
    code, answer = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a"))
    assert (code, answer) == (201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                    "status": "Success", "code": 201})
    evicted = served.api.get("Pod", "a", "default")
    assert evicted.is_terminating
    target = next(c for c in evicted.status["conditions"] if c["type"] == "DisruptionTarget")
    assert (target["status"], target["reason"]) == ("True", "EvictionByEvictionAPI")
    status = served.api.get("PodDisruptionBudget", "web", "default").status
    assert status["disruptionsAllowed"] == 0 and list(status["disruptedPods"]) == ["a"]

    code, refused = call_json(served, "POST", f"{PODS}/b/eviction", eviction("b"))
    assert code == 429
    assert (refused["reason"], refused["message"]) == (
        "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.")
    assert refused["details"]["causes"] == [{
        "reason": "DisruptionBudget",
        "message": "The disruption budget web needs 1 healthy pods and has 2 currently"}]
    assert not served.api.get("Pod", "b", "default").is_terminating


def test_a_budget_the_controller_has_not_seen_yet_refuses_evictions(served: Served) -> None:
    served.api.create(pod("a", node="node-1"))
    make_ready(served, "a")
    served.api.create(budget("web", maxUnavailable=1))
    code, refused = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a"))
    assert code == 429
    assert refused["details"]["causes"][0]["message"] == (
        "The disruption budget web is still being processed by the server.")


def test_a_pending_pod_is_evicted_whatever_its_budget_says(served: Served) -> None:
    served.api.create(pod("a"))
    served.api.create(budget("web", minAvailable=5))
    settle_budgets(served)
    code, _ = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a"))
    assert code == 201
    assert [p.name for p in served.api.list("Pod").items] == []


def test_an_eviction_with_a_dry_run_or_a_wrong_name_deletes_nothing(served: Served) -> None:
    served.api.create(pod("a", node="node-1"))
    make_ready(served, "a")
    code, _ = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a", dryRun=["All"]))
    assert code == 201 and not served.api.get("Pod", "a", "default").is_terminating
    code, wrong = call_json(served, "POST", f"{PODS}/a/eviction", eviction("b"))
    assert (code, wrong["message"]) == (400, "name in URL does not match name in Eviction "
                                             "object")
    code, missing = call_json(served, "POST", f"{PODS}/zz/eviction", eviction("zz"))
    assert (code, missing["message"]) == (404, 'pods "zz" not found')


def test_the_python_client_evicts_with_a_v1_eviction(served: Served, core: Any) -> None:
    served.api.create(pod("a", node="node-1"))
    core.create_namespaced_pod_eviction("a", "default", client.V1Eviction(
        metadata=client.V1ObjectMeta(name="a", namespace="default"),
        delete_options=client.V1DeleteOptions(grace_period_seconds=0)))
    assert [p.name for p in served.api.list("Pod").items] == []


def test_pdbs_are_served_in_policy_v1_with_kubectls_columns(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=json.dumps(budget("web", minAvailable="50%")))
    settle_budgets(served)
    lines = served.kubectl("get", "pdb").stdout.splitlines()
    assert lines[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED",
                                "DISRUPTIONS", "AGE"]
    assert lines[1].split()[:4] == ["web", "50%", "N/A", "0"]
    code, invalid = call_json(served, "POST",
                              "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                              budget("both", minAvailable=1, maxUnavailable=1))
    assert code == 422 and invalid["reason"] == "Invalid"


# -- pods/binding ---------------------------------------------------------------------

def test_a_binding_sets_the_node_once_and_then_is_409(served: Served) -> None:
    served.api.create(pod("a"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "a"},
               "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}}
    code, answer = call_json(served, "POST", f"{PODS}/a/binding", binding)
    assert (code, answer["status"], answer["code"]) == (201, "Success", 201)
    bound = served.api.get("Pod", "a", "default")
    assert bound.spec["nodeName"] == "node-1"
    assert {"type": "PodScheduled", "status": "True"}.items() <= next(
        c for c in bound.status["conditions"] if c["type"] == "PodScheduled").items()
    code, again = call_json(served, "POST", "/api/v1/namespaces/default/bindings", binding)
    assert code == 409 and again["reason"] == "Conflict"
    assert again["message"] == ('Operation cannot be fulfilled on pods/binding "a": pod a is '
                                'already assigned to node "node-1"')
    assert again["details"] == {"name": "a", "kind": "pods/binding"}


def test_the_bindings_collection_binds_and_refuses_other_verbs(served: Served,
                                                               core: Any) -> None:
    served.api.create(pod("a"))
    core.create_namespaced_binding("default", client.V1Binding(
        metadata=client.V1ObjectMeta(name="a"),
        target=client.V1ObjectReference(kind="Node", name="node-1")),
        _preload_content=False)
    assert served.api.get("Pod", "a", "default").spec["nodeName"] == "node-1"
    code, refused = call_json(served, "GET", "/api/v1/namespaces/default/bindings")
    assert (code, refused["reason"]) == (405, "MethodNotAllowed")


# -- deletecollection -------------------------------------------------------------------

def test_delete_on_a_collection_deletes_what_its_selector_selects(served: Served) -> None:
    served.api.create(pod("a", {"app": "web"}))
    served.api.create(pod("b", {"app": "web"}))
    served.api.create(pod("c", {"app": "db"}))
    code, answer = call_json(served, "DELETE", f"{PODS}?labelSelector=app%3Dweb")
    assert code == 200 and answer["kind"] == "PodList"
    assert sorted(i["metadata"]["name"] for i in answer["items"]) == ["a", "b"]
    assert [p.name for p in served.api.list("Pod").items] == ["c"]


def test_deletecollection_honours_dry_run_and_is_not_served_across_namespaces(
        served: Served, core: Any) -> None:
    served.api.create(pod("a"))
    code, _ = call_json(served, "DELETE", PODS, {"dryRun": ["All"]})
    assert code == 200 and [p.name for p in served.api.list("Pod").items] == ["a"]
    code, refused = call_json(served, "DELETE", "/api/v1/pods")
    assert (code, refused["reason"]) == (405, "MethodNotAllowed")
    core.delete_collection_namespaced_pod("default", grace_period_seconds=0)
    assert served.api.list("Pod").items == []


def test_discovery_lists_deletecollection_and_the_pod_request_subresources(
        served: Served) -> None:
    _, core_v1 = call_json(served, "GET", "/api/v1")
    by_name = {r["name"]: r for r in core_v1["resources"]}
    assert "deletecollection" in by_name["pods"]["verbs"]
    assert "deletecollection" not in by_name["namespaces"]["verbs"]
    assert by_name["pods/eviction"] == {"name": "pods/eviction", "singularName": "",
                                        "namespaced": True, "group": "policy", "version": "v1",
                                        "kind": "Eviction", "verbs": ["create"]}
    assert by_name["pods/binding"]["kind"] == "Binding"
    assert by_name["bindings"]["verbs"] == ["create"]


# -- metadata-only answers, 406 -------------------------------------------------------

def test_metadata_only_get_list_and_watch(served: Served) -> None:
    served.api.create(pod("a"))
    code, got = call_json(served, "GET", f"{PODS}/a", accept=PARTIAL)
    assert code == 200 and (got["kind"], got["apiVersion"]) == ("PartialObjectMetadata",
                                                                "meta.k8s.io/v1")
    assert got["metadata"]["name"] == "a" and "spec" not in got
    _, beta = call_json(served, "GET", f"{PODS}/a", accept=PARTIAL.replace("v=v1", "v=v1beta1"))
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    code, listed = call_json(served, "GET", PODS, accept=PARTIAL_LIST)
    assert (code, listed["kind"]) == (200, "PartialObjectMetadataList")
    assert [i["kind"] for i in listed["items"]] == ["PartialObjectMetadata"]
    code, watched = call_json(served, "GET", f"{PODS}?watch=1&timeoutSeconds=1", accept=PARTIAL)
    assert code == 200 and watched["object"]["kind"] == "PartialObjectMetadata"


def test_a_transformation_the_answer_cannot_take_is_406(served: Served) -> None:
    served.api.create(pod("a"))
    code, wrong = call_json(served, "GET", PODS, accept=PARTIAL)
    assert (code, wrong["reason"]) == (406, "NotAcceptable")
    assert wrong["message"].startswith("you requested PartialObjectMetadata, but the "
                                       "requested object is a list")
    code, _ = call_json(served, "GET", f"{PODS}/a", accept=PARTIAL_LIST)
    assert code == 406


@pytest.mark.parametrize("accept", ["application/xml", "application/json;as=Foo;g=meta.k8s.io;v=v1",
                                    "text/html"])
def test_an_accept_the_server_cannot_produce_is_406(served: Served, accept: str) -> None:
    code, answer = call_json(served, "GET", PODS, accept=accept)
    assert (code, answer["kind"], answer["reason"]) == (406, "Status", "NotAcceptable")
    assert answer["message"] == ("only the following media types are accepted: "
                                 "application/json, application/yaml, "
                                 "application/vnd.kubernetes.protobuf")


@pytest.mark.parametrize("accept", ["*/*", "application/*", "application/json",
                                    "application/yaml", "application/vnd.kubernetes.protobuf",
                                    "application/xml,application/json;q=0.9"])
def test_the_usual_accepts_are_served(served: Served, accept: str) -> None:
    code, _, _ = call(served, "GET", PODS, accept=accept)
    assert code == 200


# -- YAML, 415 ----------------------------------------------------------------------------

def test_a_yaml_body_creates_and_a_yaml_accept_answers_yaml(served: Served) -> None:
    code, media, raw = call(served, "POST", PODS, raw_body=yaml.safe_dump(pod("a")).encode(),
                            content_type="application/yaml", accept="application/yaml")
    assert (code, media) == (201, "application/yaml")
    created = yaml.safe_load(raw)
    assert created["metadata"]["name"] == "a" and created["metadata"]["uid"]
    replaced = {**created, "metadata": {**created["metadata"], "labels": {"x": "1"}}}
    code, _, raw = call(served, "PUT", f"{PODS}/a", raw_body=yaml.safe_dump(replaced).encode(),
                        content_type="application/yaml")
    assert code == 200 and json.loads(raw)["metadata"]["labels"] == {"x": "1"}


def test_a_json_body_sent_as_text_plain_is_415(served: Served) -> None:
    code, answer = call_json(served, "POST", PODS, pod("a"), content_type="text/plain")
    assert (code, answer["reason"]) == (415, "UnsupportedMediaType")
    assert answer["message"] == ("the body of the request was in an unknown format - accepted "
                                 "media types include: application/json, application/yaml, "
                                 "application/vnd.kubernetes.protobuf")


# -- who am I, what may I do ------------------------------------------------------------------

def test_a_self_subject_review_names_the_cluster_admin(served: Served) -> None:
    code, answer = call_json(served, "POST",
                             "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                             {"apiVersion": "authentication.k8s.io/v1",
                              "kind": "SelfSubjectReview"})
    assert code == 201 and answer["status"]["userInfo"] == {
        "username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}


def test_access_and_rules_reviews_allow_the_admin_everything(served: Served) -> None:
    authz: Any = client.AuthorizationV1Api(
        config.new_client_from_config(str(served.handle.kubeconfig)))
    review = authz.create_self_subject_access_review(client.V1SelfSubjectAccessReview(
        spec=client.V1SelfSubjectAccessReviewSpec(resource_attributes=client.V1ResourceAttributes(
            verb="create", resource="pods", namespace="default"))))
    assert review.status.allowed is True
    rules = authz.create_self_subject_rules_review(client.V1SelfSubjectRulesReview(
        spec=client.V1SelfSubjectRulesReviewSpec(namespace="default")))
    # cluster-admin's rule (bound to system:masters), then system:basic-user's
    listed = [(r.verbs, r.api_groups, r.resources) for r in rules.status.resource_rules]
    assert listed[0] == (["*"], ["*"], ["*"])
    assert (["create"], ["authentication.k8s.io"], ["selfsubjectreviews"]) in listed
    assert rules.status.incomplete is False


def test_discovery_lists_the_review_groups(served: Served) -> None:
    _, groups = call_json(served, "GET", "/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {"authentication.k8s.io", "authorization.k8s.io", "policy"} <= names
    _, authz = call_json(served, "GET", "/apis/authorization.k8s.io/v1")
    assert sorted(r["name"] for r in authz["resources"]) == [
        "localsubjectaccessreviews", "selfsubjectaccessreviews", "selfsubjectrulesreviews",
        "subjectaccessreviews"]


# -- /version, bad resourceVersions ---------------------------------------------------

def test_version_has_every_field_of_kube_apiserver_1_35(served: Served) -> None:
    _, version = call_json(served, "GET", "/version")
    assert set(version) == {"major", "minor", "emulationMajor", "emulationMinor",
                            "minCompatibilityMajor", "minCompatibilityMinor", "gitVersion",
                            "gitCommit", "gitTreeState", "buildDate", "goVersion", "compiler",
                            "platform"}
    assert (version["major"], version["minor"], version["emulationMinor"],
            version["minCompatibilityMinor"]) == ("1", "35", "35", "34")


@pytest.mark.parametrize("query", ["watch=1&resourceVersion=abc", "resourceVersion=abc"])
def test_a_resource_version_that_is_not_a_number_is_400_before_any_stream(
        served: Served, query: str) -> None:
    code, answer = call_json(served, "GET", f"{PODS}?{query}")
    assert (code, answer["kind"], answer["reason"]) == (400, "Status", "BadRequest")
    assert answer["message"] == ('invalid resource version: resourceVersion: Invalid value: '
                                 '"abc": strconv.ParseUint: parsing "abc": invalid syntax')


def test_an_unknown_resource_version_match_is_422(served: Served) -> None:
    code, answer = call_json(served, "GET", f"{PODS}?resourceVersion=1&resourceVersionMatch=Foo")
    assert (code, answer["reason"]) == (422, "Invalid")
    assert answer["message"] == ('ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: '
                                 'Unsupported value: "Foo": supported values: "Exact", '
                                 '"NotOlderThan", ""')
    code, watch = call_json(served, "GET", f"{PODS}?watch=1&resourceVersionMatch=Exact")
    assert code == 422 and watch["details"]["kind"] == "ListOptions"
    code, listed = call_json(served, "GET", f"{PODS}?sendInitialEvents=true")
    assert code == 422 and listed["details"]["causes"] == [{
        "reason": "FieldValueForbidden", "field": "sendInitialEvents",
        "message": "Forbidden: sendInitialEvents is forbidden for list"}]


def test_the_python_client_reads_a_bad_resource_version_as_an_api_exception(
        core: Any) -> None:
    with pytest.raises(ApiException) as caught:
        core.list_namespaced_pod("default", resource_version="abc")
    assert caught.value.status == 400


def test_an_eviction_with_a_stale_resource_version_precondition_is_409(served: Served) -> None:
    created = served.api.create(pod("a", node="node-1"))
    make_ready(served, "a")
    stale = {"preconditions": {"resourceVersion": created.metadata.resource_version}}
    code, answer = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a", **stale))
    assert (code, answer["reason"]) == (409, "Conflict")
    current = served.api.get("Pod", "a", "default").metadata.resource_version
    fresh = {"preconditions": {"resourceVersion": current}, "gracePeriodSeconds": 0}
    code, _ = call_json(served, "POST", f"{PODS}/a/eviction", eviction("a", **fresh))
    assert code == 201 and served.api.list("Pod").items == []


def test_an_object_created_from_json_reads_back_as_yaml(served: Served) -> None:
    code, _ = call_json(served, "POST", PODS, pod("j"))
    assert code == 201
    code, media, raw = call(served, "GET", f"{PODS}/j", accept="application/yaml")
    assert (code, media) == (200, "application/yaml")
    assert yaml.safe_load(raw)["metadata"]["name"] == "j"
