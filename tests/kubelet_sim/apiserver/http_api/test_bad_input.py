"""Bad input the way kube-apiserver refuses it: a 400 or 422 Status naming what is wrong,
and nothing changed — DeleteOptions of the wrong types, query integers Go cannot read,
fields of the wrong JSON type anywhere in a built-in kind."""

from __future__ import annotations

import http.client
import json
import ssl
import time
from typing import Any

import pytest
import yaml

from k8s_protos import meta_v1_pb2, runtime_pb2
from tests.kubelet_sim.apiserver.http_api.conftest import Served
from tests.kubelet_sim.apiserver.http_api.test_request_forms import PODS, call, call_json, pod


@pytest.mark.parametrize(("options", "said"), [
    ({"dryRun": "All"}, "DeleteOptions.dryRun of type []string"),
    ("x", "into Go value of type v1.DeleteOptions"),
    ({"gracePeriodSeconds": 1.5}, "number 1.5 into Go struct field "
                                  "DeleteOptions.gracePeriodSeconds of type int64"),
    ({"gracePeriodSeconds": "abc"}, "DeleteOptions.gracePeriodSeconds of type int64"),
    ({"preconditions": "x"}, "DeleteOptions.preconditions of type v1.Preconditions"),
])
def test_delete_options_of_the_wrong_type_are_400_and_delete_nothing(
        served: Served, options: Any, said: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, "DELETE", f"{PODS}/keep", options)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert said in status["message"]
    assert call_json(served, "GET", f"{PODS}/keep")[0] == 200


@pytest.mark.parametrize("query", [
    "gracePeriodSeconds=99999999999999999999999",
    "gracePeriodSeconds=abc",
])
def test_a_query_integer_go_cannot_read_is_400(served: Served, query: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, "DELETE", f"{PODS}/keep?{query}")
    assert (code, status["reason"]) == (400, "BadRequest")
    assert call_json(served, "GET", f"{PODS}/keep")[0] == 200


def test_a_watch_timeout_of_400_digits_is_400(served: Served) -> None:
    code, status = call_json(served, "GET", f"{PODS}?watch=1&timeoutSeconds={'9' * 400}")
    assert (code, status["kind"]) == (400, "Status")


@pytest.mark.parametrize(("path", "patch"), [
    ("/api/v1/nodes/node-1", {"spec": {"taints": "x"}}),
    (f"{PODS}/p", {"spec": {"affinity": "x"}}),
    (f"{PODS}/p", {"spec": {"nodeSelector": ["a"]}}),
    (f"{PODS}/p", {"spec": {"tolerations": "x"}}),
    (f"{PODS}/p", {"spec": {"terminationGracePeriodSeconds": "abc"}}),
    (f"{PODS}/p", {"metadata": "x"}),
])
def test_a_field_of_the_wrong_type_is_refused_naming_it(
        served: Served, path: str, patch: dict[str, Any]) -> None:
    assert call_json(served, "POST", PODS, pod("p"))[0] == 201
    before = call_json(served, "GET", path)[1]
    code, status = call_json(served, "PATCH", path, patch,
                             content_type="application/merge-patch+json")
    assert code in (400, 422) and status["kind"] == "Status", status
    assert "cannot unmarshal" in status["message"]
    after = call_json(served, "GET", path)[1]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


@pytest.mark.parametrize(("change", "field", "said"), [
    ({"restartPolicy": "Sometimes"}, "spec.restartPolicy",
     'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    ({"tolerations": [{"key": "a", "operator": "Maybe"}]}, "spec.tolerations[0].operator",
     'Unsupported value: "Maybe": supported values: "Equal", "Exists"'),
    ({"tolerations": [{"key": "a", "effect": "Later"}]}, "spec.tolerations[0].effect",
     'Unsupported value: "Later"'),
])
def test_values_outside_an_enum_are_422_naming_the_field(
        served: Served, change: dict[str, Any], field: str, said: str) -> None:
    body = pod("p")
    body["spec"].update(change)
    code, status = call_json(served, "POST", PODS, body)
    assert (code, status["reason"]) == (422, "Invalid"), status
    assert field in status["message"] and said in status["message"]
    assert call_json(served, "GET", f"{PODS}/p")[0] == 404


def test_a_node_taint_with_a_bad_effect_is_422(served: Served) -> None:
    code, status = call_json(served, "PATCH", "/api/v1/nodes/node-1",
                             {"spec": {"taints": [{"key": "a", "effect": "Bogus"}]}},
                             content_type="application/merge-patch+json")
    assert (code, status["reason"]) == (422, "Invalid")
    assert "spec.taints[0].effect" in status["message"]


def test_a_memory_limit_that_is_no_quantity_is_400(served: Served) -> None:
    body = pod("p")
    body["spec"]["containers"][0]["resources"] = {"limits": {"memory": "lots"}}
    code, status = call_json(served, "POST", PODS, body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == ('Pod in version "v1" cannot be handled as a Pod: quantities '
                                 "must match the regular expression "
                                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


@pytest.mark.parametrize("metadata", ["x", 5, ["a"]])
def test_a_create_whose_metadata_is_no_object_is_400_naming_it(served: Served,
                                                                metadata: Any) -> None:
    code, status = call_json(served, "POST", "/api/v1/namespaces/default/resourcequotas",
                             {"apiVersion": "v1", "kind": "ResourceQuota",
                              "metadata": metadata, "spec": {}})
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith(
        'ResourceQuota in version "v1" cannot be handled as a ResourceQuota: json: cannot '
        "unmarshal ")
    assert status["message"].endswith(
        " into Go struct field ResourceQuota.metadata of type v1.ObjectMeta")


def test_an_update_with_a_resource_version_that_is_no_number_is_400(served: Served) -> None:
    code, created = call_json(served, "POST", PODS, pod("p"))
    assert code == 201
    created["metadata"]["resourceVersion"] = "abc"
    code, status = call_json(served, "PUT", f"{PODS}/p", created)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"] == ('resourceVersion: Invalid value: "abc": strconv.ParseUint: '
                                 'parsing "abc": invalid syntax')


def test_a_stale_update_is_a_conflict_worded_as_kube_apiserver_words_it(served: Served) -> None:
    code, created = call_json(served, "POST", PODS, pod("p"))
    assert code == 201
    assert call_json(served, "PUT", f"{PODS}/p", created)[0] == 200  # a no-op: same version
    created["metadata"]["labels"] = {"x": "1"}
    assert call_json(served, "PUT", f"{PODS}/p", created)[0] == 200
    created["metadata"]["labels"] = {"x": "2"}
    code, status = call_json(served, "PUT", f"{PODS}/p", created)
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == ('Operation cannot be fulfilled on pods "p": the object has '
                                 "been modified; please apply your changes to the latest "
                                 "version and try again")
    assert status["details"] == {"name": "p", "kind": "pods"}


def test_annotations_over_256_kib_are_422(served: Served) -> None:
    body = pod("p")
    body["metadata"]["annotations"] = {"big": "x" * (300 * 1024)}
    code, status = call_json(served, "POST", PODS, body)
    assert (code, status["reason"]) == (422, "Invalid")
    assert "metadata.annotations: Too long: may not be more than 262144 bytes" in \
        status["message"]


@pytest.mark.parametrize("content_type", ["application/json", "application/yaml"])
@pytest.mark.parametrize("depth", [600, 100_000])
def test_a_body_nested_too_deep_is_a_400_not_a_crash(
        served: Served, content_type: str, depth: int) -> None:
    body = ('{"a":' * depth + "1" + "}" * depth).encode()
    code, media, raw = call(served, "POST", PODS, raw_body=body, content_type=content_type)
    assert (code, media) == (400, "application/json")
    assert b"exceeded max depth" in raw
    code, _, raw = call(served, "PATCH", f"{PODS}/none?fieldManager=m", raw_body=body,
                        content_type="application/apply-patch+yaml")
    assert code == 400 and b"exceeded max depth" in raw


def _deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [600, 3000])
@pytest.mark.parametrize(("method", "path", "content_type", "body"), [
    ("POST", PODS, "application/json",
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":%s}'),
    ("POST", PODS, "application/yaml",
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":%s}'),
    ("PATCH", f"{PODS}/keep", "application/merge-patch+json", '{"spec":%s}'),
    ("PATCH", f"{PODS}/keep", "application/strategic-merge-patch+json", '{"spec":%s}'),
    ("PATCH", f"{PODS}/keep", "application/json-patch+json",
     '[{"op":"add","path":"/metadata/annotations","value":%s}]'),
    ("PATCH", f"{PODS}/keep?fieldManager=m", "application/apply-patch+yaml",
     '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"keep"},"spec":%s}'),
])
def test_a_body_nested_hundreds_deep_is_400_exceeded_max_depth(
        served: Served, depth: int, method: str, path: str, content_type: str,
        body: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, method, path, raw_body=(body % _deep(depth)).encode(),
                             content_type=content_type)
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert "exceeded max depth" in status["message"]


def test_a_member_nested_ninety_deep_is_still_read(served: Served) -> None:
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":'
            '[{"name":"c","image":"busybox"}],"unknown":' + _deep(90) + "}}")
    code, created = call_json(served, "POST", PODS, raw_body=body.encode())
    assert code == 201, created
    assert "unknown" not in created["spec"]


@pytest.mark.parametrize(("path", "review"), [
    ("/apis/authentication.k8s.io/v1/selfsubjectreviews",
     {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
      "metadata": {"labels": {"a": "b"}}}),
    ("/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
     {"kind": "SelfSubjectRulesReview", "apiVersion": "authorization.k8s.io/v1",
      "metadata": {"labels": {"a": "b"}}, "spec": {"namespace": "default"}}),
])
def test_a_review_answered_in_yaml_keeps_the_metadata_it_was_sent(
        served: Served, path: str, review: dict[str, Any]) -> None:
    code, kind, raw = call(served, "POST", path, review, accept="application/yaml")
    assert (code, kind) == (201, "application/yaml"), raw
    assert yaml.safe_load(raw)["metadata"]["labels"] == {"a": "b"}


@pytest.mark.parametrize(("member", "named"), [
    ("a\x00b", r'unknown field \"spec.a\\x00b\"'),
    ("x\ny", r'unknown field \"spec.x\\ny\"'),
    ("\ud96d", 'unknown field \\"spec.\ufffd\\"'),
])
def test_an_unknown_field_with_control_characters_is_named_as_go_quotes_it(
        served: Served, member: str, named: str) -> None:
    body = pod("p")
    body["spec"][member] = 1
    answer, _ = _send(served, "POST", PODS, json.dumps(body).encode(),
                      {"Authorization": f"Bearer {served.handle.credentials.token}",
                       "Content-Type": "application/json"})
    assert answer.status == 201
    # http.client reads header bytes as Latin-1; the server wrote UTF-8
    warning = (answer.getheader("Warning") or "").encode("latin-1").decode()
    assert warning == f'299 - "{named}"'


def _send(served: Served, method: str, path: str, body: bytes | None,
          headers: dict[str, str]) -> tuple[http.client.HTTPResponse, bytes]:
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    conn = http.client.HTTPSConnection("127.0.0.1", served.handle.port, context=tls, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers)
        answer = conn.getresponse()
        return answer, answer.read()
    finally:
        conn.close()


@pytest.mark.parametrize("token", [None, "forged"])
def test_a_refused_token_is_a_401_status_in_the_form_the_client_asked_for(
        served: Served, token: str | None) -> None:
    headers = {"Accept": "application/vnd.kubernetes.protobuf, */*"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    answer, raw = _send(served, "GET", PODS, None, headers)
    assert (answer.status, answer.getheader("Content-Type")) == (
        401, "application/vnd.kubernetes.protobuf")
    assert raw[:4] == b"k8s\x00"
    unknown = runtime_pb2.Unknown.FromString(raw[4:])
    status = meta_v1_pb2.Status.FromString(unknown.raw)
    assert (unknown.typeMeta.kind, status.code, status.reason) == ("Status", 401, "Unauthorized")
    answer, raw = _send(served, "GET", PODS, None, {**headers, "Accept": "application/yaml"})
    assert yaml.safe_load(raw)["reason"] == "Unauthorized"
    answer, raw = _send(served, "GET", PODS, None, {**headers, "Accept": "text/html"})
    assert (answer.status, json.loads(raw)["code"]) == (401, 401)


@pytest.mark.parametrize("content_type", ["application/yaml", "application/apply-patch+yaml"])
def test_a_yaml_body_of_100k_brackets_is_refused_at_once(served: Served,
                                                         content_type: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    method, path = ("POST", PODS) if content_type == "application/yaml" else \
        ("PATCH", f"{PODS}/keep?fieldManager=m")
    began = time.perf_counter()
    code, status = call_json(served, method, path, raw_body=b"[" * 100_000,
                             content_type=content_type)
    took = time.perf_counter() - began
    assert (code, status["reason"]) == (400, "BadRequest")
    assert took < 0.5, f"{took:.2f} s of the event loop"  # pure-Python YAML: 1.4 s


@pytest.mark.parametrize(("path", "body", "said"), [
    ("/api/v1/namespaces/default/bindings",
     {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "keep"}, "target": "x"},
     "cannot unmarshal string into Go struct field Binding.target of type v1.ObjectReference"),
    (f"{PODS}/keep/binding",
     {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "keep"}, "target": ["x"]},
     "cannot unmarshal array into Go struct field Binding.target of type v1.ObjectReference"),
    (f"{PODS}/keep/eviction",
     {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "keep"},
      "deleteOptions": {"gracePeriodSeconds": "x"}},
     "DeleteOptions.deleteOptions.gracePeriodSeconds of type int64"),
    ("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
     {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
      "spec": {"resourceAttributes": "x"}},
     "SelfSubjectAccessReviewSpec.spec.resourceAttributes of type v1.ResourceAttributes"),
])
def test_a_request_kind_with_a_field_of_the_wrong_type_is_400_naming_it(
        served: Served, path: str, body: dict[str, Any], said: str) -> None:
    assert call_json(served, "POST", PODS, pod("keep"))[0] == 201
    code, status = call_json(served, "POST", path, body)
    assert (code, status["reason"]) == (400, "BadRequest"), status
    assert said in status["message"]
    assert call_json(served, "GET", f"{PODS}/keep")[1]["spec"].get("nodeName") is None


def test_a_rejected_write_names_its_object_as_kube_apiserver_does(served: Served) -> None:
    body = pod("p")
    body["spec"]["restartPolicy"] = "Sometimes"
    code, status = call_json(served, "POST", PODS, body)
    said = 'Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'
    assert (code, status["message"]) == (
        422, f'Pod "p" is invalid: spec.restartPolicy: {said}')
    assert status["details"] == {"name": "p", "kind": "Pod", "causes": [
        {"reason": "FieldValueNotSupported", "message": said, "field": "spec.restartPolicy"}]}
    # kubectl words it from the details: the kind and the name, then the causes
    done = served.kubectl("create", "secret", "generic", "Bad_Name", "--from-literal=a=b",
                          check=False)
    assert done.returncode == 1
    assert 'Secret "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a ' \
           "lowercase RFC 1123 subdomain" in done.stderr, done.stderr


@pytest.mark.parametrize(("volume", "field", "said"), [
    ({"name": "v", "configMap": {"name": "c", "items": [{"key": "k", "path": "../x"}]}},
     "spec.volumes[0].configMap.items[0].path", 'Invalid value: "../x": must not contain \'..\''),
    ({"name": "v", "secret": {"secretName": "s", "items": [{"key": "k", "path": "/etc/x"}]}},
     "spec.volumes[0].secret.items[0].path", 'Invalid value: "/etc/x": must be a relative path'),
    ({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "..token"}}]}},
     "spec.volumes[0].projected.sources[0].serviceAccountToken.path",
     'Invalid value: "..token": must not start with \'..\''),
])
def test_a_volume_file_path_leaving_its_volume_is_422(
        served: Served, volume: dict[str, Any], field: str, said: str) -> None:
    body = pod("p")
    body["spec"]["volumes"] = [volume]
    code, status = call_json(served, "POST", PODS, body)
    assert (code, status["reason"]) == (422, "Invalid"), status
    assert status["message"] == f'Pod "p" is invalid: {field}: {said}'
    assert call_json(served, "GET", f"{PODS}/p")[0] == 404
