"""Secret and ServiceAccount (core/v1) and the TokenRequest subresource over HTTPS, with
the real kubectl and the official Python client: storage, kube-apiserver's validation
and Secret rules (stringData folded into data, type Opaque, immutable), kubectl's
columns, and signed ServiceAccount tokens verified against the published JWK set."""

from __future__ import annotations

import base64
import json
import ssl
import stat
import urllib.request
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from k8s_protos import core_v1_pb2, runtime_pb2
from kubelet_sim.api import builders
from kubelet_sim.apiserver.http import start_api_server
from kubelet_sim.apiserver.server import APIServer

from .conftest import Served, needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    api = APIServer(history_limit=50)
    api.create(builders.node("node-1", "10.244.1.0/24", "192.168.0.1", ready=True))
    handle = start_api_server(api, tmp_path_factory.mktemp("secrets") / "state")
    try:
        yield Served(api, handle)
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def core(served: Served) -> Any:
    return client.CoreV1Api(config.new_client_from_config(str(served.handle.kubeconfig)))


def apply_fails(served: Served, doc: dict[str, Any]) -> str:
    done = served.kubectl("create", "-f", "-", stdin=json.dumps(doc), check=False)
    assert done.returncode != 0, done.stdout
    return done.stderr


def message(refused: ApiException) -> str:
    said: str = json.loads(refused.body or "{}")["message"]
    return said


def secret(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_kubectl_creates_a_generic_secret_and_prints_it_as_yaml(served: Served) -> None:
    served.kubectl("create", "secret", "generic", "x", "--from-literal=a=b")
    shown = served.kubectl("get", "secret", "x", "-o", "yaml").stdout
    assert "data:\n  a: Yg==\n" in shown and "type: Opaque" in shown
    rows = served.kubectl("get", "secrets").stdout.splitlines()
    assert rows[0].split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert rows[1].split()[:3] == ["x", "Opaque", "1"]


def test_string_data_is_merged_into_data_and_not_stored(served: Served) -> None:
    served.kubectl("create", "-f", "-", stdin=json.dumps(secret(
        "merged", data={"a": b64("old"), "b": b64("kept")}, stringData={"a": "new"})))
    stored = served.kubectl_json("get", "secret", "merged")
    assert stored["data"] == {"a": b64("new"), "b": b64("kept")}
    assert "stringData" not in stored and stored["type"] == "Opaque"


def test_a_data_key_must_be_a_valid_config_key(served: Served) -> None:
    said = apply_fails(served, secret("badkey", stringData={"a b": "v"}))
    assert "data[a b]: Invalid value: \"a b\": a valid config key must consist of " \
           "alphanumeric characters" in said
    assert "must not start with '..'" in apply_fails(served, secret("dots",
                                                                    stringData={"..x": "v"}))


def test_data_that_is_not_base64_cannot_be_decoded(served: Served) -> None:
    said = apply_fails(served, secret("notb64", data={"k": "v!"}))
    assert 'Secret in version "v1" cannot be handled as a Secret: illegal base64 data at ' \
           "input byte 1" in said


def test_secrets_over_one_mebibyte_are_refused(served: Served) -> None:
    said = apply_fails(served, secret("big", stringData={"k": "x" * (1024 * 1024 + 1)}))
    assert "data: Too long: may not be more than 1048576 bytes" in said


def test_typed_secrets_need_their_keys(served: Served) -> None:
    assert "data[tls.key]: Required value" in apply_fails(
        served, secret("tls", type="kubernetes.io/tls", stringData={"tls.crt": "c"}))
    assert "data[.dockerconfigjson]: Required value" in apply_fails(
        served, secret("docker", type="kubernetes.io/dockerconfigjson"))
    assert "data[username]: Required value" in apply_fails(
        served, secret("basic", type="kubernetes.io/basic-auth"))
    assert "metadata.annotations[kubernetes.io/service-account.name]: Required value" in \
        apply_fails(served, secret("sat", type="kubernetes.io/service-account-token"))
    served.kubectl("create", "secret", "docker-registry", "reg", "--docker-server=r.example",
                   "--docker-username=u", "--docker-password=p")
    assert served.kubectl_json("get", "secret", "reg")["type"] == \
        "kubernetes.io/dockerconfigjson"


def test_an_immutable_secret_keeps_its_data_and_its_type_never_changes(core: Any) -> None:
    core.create_namespaced_secret("default", secret("frozen", stringData={"k": "v"},
                                                    immutable=True))
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_secret("frozen", "default", {"stringData": {"k": "w"}})
    assert raised.value.status == 422
    assert "data: Forbidden: field is immutable when `immutable` is set" in \
        message(raised.value)
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_secret("frozen", "default", {"immutable": False})
    assert "immutable: Forbidden: field is immutable when `immutable` is set" in \
        message(raised.value)
    core.patch_namespaced_secret("frozen", "default", {"metadata": {"labels": {"a": "b"}}})
    core.create_namespaced_secret("default", secret("typed", stringData={"k": "v"}))
    with pytest.raises(ApiException) as raised:
        core.patch_namespaced_secret("typed", "default", {"type": "custom/type"})
    assert 'type: Invalid value: "custom/type": field is immutable' in \
        message(raised.value)


def test_kubectl_creates_a_service_account_listed_with_its_secrets_column(
        served: Served) -> None:
    served.kubectl("create", "sa", "robot")
    rows = served.kubectl("get", "sa", "robot").stdout.splitlines()
    assert rows[0].split() == ["NAME", "SECRETS", "AGE"]
    assert rows[1].split()[:2] == ["robot", "0"]
    resources = served.kubectl("api-resources", "--api-group=").stdout
    assert any(line.split()[:2] == ["serviceaccounts", "sa"] for line in resources.splitlines())


def verified(served: Served, token: str, audience: str) -> dict[str, Any]:
    """The token's claims, its signature checked with the key /openid/v1/jwks publishes."""
    keys = json.loads(served.kubectl("get", "--raw", "/openid/v1/jwks").stdout)["keys"]
    kid = jwt.get_unverified_header(token)["kid"]
    key = jwt.PyJWK(next(k for k in keys if k["kid"] == kid))
    found: dict[str, Any] = jwt.decode(token, key, algorithms=["RS256"], audience=audience)
    return found


def test_kubectl_create_token_signs_the_claims_kube_apiserver_puts(served: Served) -> None:
    served.kubectl("create", "sa", "minted")
    uid = served.kubectl_json("get", "sa", "minted")["metadata"]["uid"]
    token = served.kubectl("create", "token", "minted", "--audience", "vault",
                           "--duration", "10m").stdout.strip()
    claims = verified(served, token, "vault")
    assert claims["sub"] == "system:serviceaccount:default:minted"
    assert claims["iss"] == "https://kubernetes.default.svc.cluster.local"
    assert claims["aud"] == ["vault"]
    assert claims["exp"] - claims["iat"] == 600 and claims["nbf"] == claims["iat"]
    assert claims["jti"]
    assert claims["kubernetes.io"] == {"namespace": "default",
                                       "serviceaccount": {"name": "minted", "uid": uid}}
    config_doc = json.loads(served.kubectl("get", "--raw",
                                           "/.well-known/openid-configuration").stdout)
    assert config_doc["issuer"] == claims["iss"]
    assert config_doc["jwks_uri"].endswith("/openid/v1/jwks")


def test_the_signing_key_is_kept_in_the_state_dir_readable_by_its_owner_only(
        served: Served) -> None:
    key = served.handle.credentials.ca_cert.parent / "sa.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600


def test_the_python_client_requests_a_token_bound_to_a_pod(served: Served, core: Any) -> None:
    core.create_namespaced_service_account("default", {"metadata": {"name": "app"}})
    pod = core.create_namespaced_pod("default", {
        "metadata": {"name": "bound"},
        "spec": {"serviceAccountName": "app", "nodeName": "node-1",
                 "containers": [{"name": "c", "image": "busybox"}]}})
    answered = core.create_namespaced_service_account_token("app", "default", {
        "spec": {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "bound",
                                    "uid": pod.metadata.uid}}})
    assert answered.spec.expiration_seconds == 3600
    claims = verified(served, answered.status.token,
                      "https://kubernetes.default.svc.cluster.local")
    assert claims["exp"] - claims["iat"] == 3600
    private = claims["kubernetes.io"]
    assert private["pod"] == {"name": "bound", "uid": pod.metadata.uid}
    node_uid = served.api.get("Node", "node-1").metadata.uid
    assert private["node"] == {"name": "node-1", "uid": node_uid}
    assert answered.status.expiration_timestamp.timestamp() == claims["exp"]


@pytest.mark.parametrize(("ref", "code", "said"), [
    ({"kind": "Pod", "apiVersion": "v1", "name": "missing"}, 404, 'pods "missing" not found'),
    ({"kind": "Pod", "apiVersion": "v1", "name": "bound2", "uid": "not-its-uid"}, 409,
     "the UID in the bound object reference (not-its-uid) does not match the UID in record"),
    ({"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}, 400,
     'cannot bind token for serviceaccount "app2" to object of kind "/v1, Kind=ConfigMap"'),
])
def test_a_token_bound_to_a_missing_or_other_object_is_refused(
        core: Any, ref: dict[str, str], code: int, said: str) -> None:
    try:
        core.create_namespaced_service_account("default", {"metadata": {"name": "app2"}})
        core.create_namespaced_pod("default", {
            "metadata": {"name": "bound2"},
            "spec": {"serviceAccountName": "app2",
                     "containers": [{"name": "c", "image": "busybox"}]}})
    except ApiException as exists:
        assert exists.status == 409
    with pytest.raises(ApiException) as raised:
        core.create_namespaced_service_account_token("app2", "default",
                                                     {"spec": {"boundObjectRef": ref}})
    assert raised.value.status == code
    assert said in message(raised.value)


def test_a_token_shorter_than_ten_minutes_is_invalid(served: Served) -> None:
    served.kubectl("create", "sa", "brief")
    done = served.kubectl("create", "token", "brief", "--duration", "5m", check=False)
    assert 'TokenRequest.authentication.k8s.io "brief" is invalid: spec.expirationSeconds: ' \
           "Invalid value: 300: may not specify a duration less than 10 minutes" in done.stderr


def test_discovery_lists_the_token_subresource(served: Served) -> None:
    listed = json.loads(served.kubectl("get", "--raw", "/api/v1").stdout)["resources"]
    token = next(r for r in listed if r["name"] == "serviceaccounts/token")
    assert (token["kind"], token["group"], token["version"], token["verbs"]) == (
        "TokenRequest", "authentication.k8s.io", "v1", ["create"])


def test_a_secret_is_served_in_protobuf_with_its_data_as_bytes(served: Served) -> None:
    served.kubectl("create", "secret", "generic", "proto", "--from-literal=k=v")
    tls = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(served.handle.url + "/api/v1/namespaces/default/secrets/proto")
    request.add_header("Authorization", f"Bearer {served.handle.credentials.token}")
    request.add_header("Accept", "application/vnd.kubernetes.protobuf")
    with urllib.request.urlopen(request, context=tls, timeout=10) as answer:
        body = answer.read()
    assert body[:4] == b"k8s\x00"
    found = core_v1_pb2.Secret.FromString(runtime_pb2.Unknown.FromString(body[4:]).raw)
    assert dict(found.data) == {"k": b"v"} and found.type == "Opaque"


@pytest.mark.parametrize(("requests", "said"), [
    ([{"audience": "a"}, {"audience": "a"}],
     'spec.tokenRequests[1].audience: Duplicate value: "a"'),
    ([{"audience": "a", "expirationSeconds": 300}],
     "spec.tokenRequests[0].expirationSeconds: Invalid value: 300: may not specify a "
     "duration less than 10 minutes"),
])
def test_a_csidriver_s_token_requests_are_validated(
        served: Served, requests: list[dict[str, Any]], said: str) -> None:
    doc = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
           "metadata": {"name": "tokens.example.com"}, "spec": {"tokenRequests": requests}}
    assert said in apply_fails(served, doc)


def test_openapi_documents_the_token_subresource_as_kube_apiserver_names_it(
        served: Served) -> None:
    doc = json.loads(served.kubectl("get", "--raw", "/openapi/v3/api/v1").stdout)
    post = doc["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"]["post"]
    assert post["operationId"] == "createCoreV1NamespacedServiceAccountToken"
    assert post["x-kubernetes-group-version-kind"] == {
        "group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}
    assert "io.k8s.api.authentication.v1.TokenRequestSpec" in doc["components"]["schemas"]
    explained = served.kubectl("explain", "secret.stringData").stdout
    assert "stringData" in explained
