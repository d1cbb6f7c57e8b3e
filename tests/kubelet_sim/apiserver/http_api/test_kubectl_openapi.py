"""The OpenAPI documents as the real kubectl reads them: `kubectl explain` prints every
field's type as it does against kube-apiserver, `kubectl apply` validates (its default
`--validate=strict`) and the server refuses what kubectl would have, and the documents
are served with kube-apiserver's caching headers."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from email.message import Message
from typing import Any

import pytest

from tests.fixtures.up_process import PROJECT_ROOT

from .conftest import POD, Served, needs_kubectl

pytestmark = needs_kubectl


@pytest.mark.parametrize(("field", "shown"), [
    ("pod.spec.tolerations", "FIELD: tolerations <[]Toleration>"),
    ("pvc.spec.resources.requests", "FIELD: requests <map[string]Quantity>"),
    ("pod.spec.containers.ports.containerPort", "FIELD: containerPort <integer>"),
    ("pod.spec.containers.livenessProbe.httpGet.port", "FIELD: port <IntOrString>"),
    ("pod.metadata.creationTimestamp", "FIELD: creationTimestamp <string>"),
    ("pod.spec.nodeSelector", "FIELD: nodeSelector <map[string]string>"),
    ("sc.allowVolumeExpansion", "FIELD: allowVolumeExpansion <boolean>"),
    ("lease.spec.renewTime", "FIELD: renewTime <string>"),
])
def test_explain_shows_each_field_s_real_type(served: Served, field: str, shown: str) -> None:
    assert shown in served.kubectl("explain", field).stdout


def test_explain_lists_a_struct_s_fields_with_the_required_ones_marked(served: Served) -> None:
    out = served.kubectl("explain", "pod.spec").stdout
    assert "containers\t<[]Container> -required-" in out
    assert "volumes\t<[]Volume>" in out
    assert "GROUP:      storage.k8s.io" in served.kubectl("explain", "csidrivers").stdout


def test_apply_of_every_example_validates_strictly(served: Served) -> None:
    for manifest in sorted((PROJECT_ROOT / "examples").glob("*.yaml")):
        done = served.kubectl("apply", "-f", str(manifest))
        assert "Warning" not in done.stderr
    pod = POD.replace("name: web", "name: front")
    served.kubectl("apply", "-f", "-", stdin=pod)
    changed = pod.replace("  labels: {app: web}\n", "  labels: {app: web, tier: front}\n")
    done = served.kubectl("apply", "-f", "-", stdin=changed)  # a strategic merge patch
    assert done.stdout.strip() == "pod/front configured"
    assert "warning" not in done.stderr.lower()
    assert served.kubectl_json("get", "pod", "front")["metadata"]["labels"]["tier"] == "front"


def test_a_wrong_typed_field_is_refused_with_the_field_named(served: Served) -> None:
    wrong = POD.replace("containerPort: 80", 'containerPort: "eighty"')
    done = served.kubectl("apply", "-f", "-", stdin=wrong, check=False)
    assert done.returncode != 0
    assert ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string '
            'into Go struct field ContainerPort.spec.containers.ports.containerPort of type '
            'int32') in done.stderr
    assert served.kubectl("get", "pods", "-o", "name").stdout == ""


def test_an_unknown_field_gets_kubectl_s_strict_error(served: Served) -> None:
    unknown = POD.replace("    - containerPort: 80\n", "    - containerPort: 80\n      prot: TCP\n")
    done = served.kubectl("apply", "-f", "-", stdin=unknown, check=False)
    assert done.returncode != 0
    assert 'strict decoding error: unknown field "spec.containers[0].ports[0].prot"' \
        in done.stderr


def get(served: Served, path: str, headers: dict[str, str] | None = None) \
        -> tuple[int, Message, bytes]:
    context = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    sent = {"Authorization": f"Bearer {served.handle.credentials.token}", **(headers or {})}

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(urllib.request.HTTPSHandler(context=context),
                                         NoRedirect)
    try:
        with opener.open(urllib.request.Request(served.handle.url + path,
                                                headers=sent)) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def test_openapi_v2_answers_a_swagger_document_with_the_definitions(served: Served) -> None:
    doc = json.loads(served.kubectl("get", "--raw", "/openapi/v2").stdout)
    assert doc["swagger"] == "2.0"
    pod = doc["definitions"]["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "Pod", "version": "v1"}]
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in doc["paths"]


def test_openapi_v2_in_protobuf_is_what_kubectl_s_v2_explain_reads(served: Served) -> None:
    # client-go asks for gnostic's protobuf Document only, with no fallback to JSON
    out = served.kubectl("explain", "pod.spec.tolerations",
                         "--output=plaintext-openapiv2").stdout
    assert "RESOURCE: tolerations <[]Object>" in out and "tolerationSeconds\t<integer>" in out
    out = served.kubectl("explain", "pvc.spec.resources.requests",
                         "--output=plaintext-openapiv2").stdout
    assert "FIELD:    requests <map[string]string>" in out  # v2's Quantity is a string
    status, headers, body = get(served, "/openapi/v2", {
        "Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert status == 200 and body.startswith(b"\n\x032.0")  # swagger = "2.0"
    assert headers["Content-Type"] == \
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    status, _, _ = get(served, "/openapi/v2", {"Accept": "text/html"})
    assert status == 406


def test_a_v3_document_asked_for_by_its_hash_is_immutable(served: Served) -> None:
    index = json.loads(served.kubectl("get", "--raw", "/openapi/v3").stdout)
    url = index["paths"]["apis/storage.k8s.io/v1"]["serverRelativeURL"]
    digest = url.partition("?hash=")[2]
    status, headers, body = get(served, url)
    assert status == 200
    assert headers["Cache-Control"] == "public, immutable" and headers["Expires"]
    assert headers["ETag"] == f'"{digest}"'
    assert "io.k8s.api.storage.v1.StorageClass" in json.loads(body)["components"]["schemas"]
    status, headers, _ = get(served, "/openapi/v3/apis/storage.k8s.io/v1?hash=STALE")
    assert (status, headers["Location"]) == (301, url)
    status, headers, _ = get(served, "/openapi/v3/apis/storage.k8s.io/v1",
                             {"If-None-Match": f'"{digest}"'})
    assert status == 304 and headers["Cache-Control"] is None
    status, _, _ = get(served, "/openapi/v3/apis/nothing.k8s.io/v1")
    assert status == 404
    status, headers, _ = get(served, "/openapi/v3")
    assert status == 200 and headers["ETag"]
    assert get(served, "/openapi/v3", {"If-None-Match": headers["ETag"]})[0] == 304
