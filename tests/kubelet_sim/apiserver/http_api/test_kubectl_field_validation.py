"""fieldValidation with the real kubectl: `--validate=strict` (kubectl's default) fails on
an unknown or duplicated field, `--validate=warn` prints the warning and writes the object
without the field, `--validate=false` writes it silently."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request

import pytest

from tests.fixtures.up_process import PROJECT_ROOT

from .conftest import POD, Served, needs_kubectl

pytestmark = needs_kubectl

UNKNOWN = POD.replace("    image: busybox\n", "    image: busybox\n    imag: typo\n").replace(
    "spec:\n", "spec:\n  foo: bar\n")


def test_strict_is_kubectls_default_and_refuses(served: Served) -> None:
    done = served.kubectl("apply", "-f", "-", stdin=UNKNOWN, check=False)
    assert done.returncode != 0
    assert ('strict decoding error: unknown field "spec.containers[0].imag", '
            'unknown field "spec.foo"') in done.stderr
    assert served.kubectl("get", "pods", "-o", "name").stdout == ""


def test_warn_writes_without_the_field_and_kubectl_prints_it(served: Served) -> None:
    done = served.kubectl("apply", "--validate=warn", "-f", "-", stdin=UNKNOWN)
    assert 'Warning: unknown field "spec.foo"' in done.stderr
    assert 'Warning: unknown field "spec.containers[0].imag"' in done.stderr
    pod = served.kubectl_json("get", "pod", "web")
    assert "foo" not in pod["spec"] and "imag" not in pod["spec"]["containers"][0]


def test_ignore_writes_silently(served: Served) -> None:
    done = served.kubectl("create", "--validate=false", "-f", "-", stdin=UNKNOWN)
    assert "Warning" not in done.stderr
    assert "foo" not in served.kubectl_json("get", "pod", "web")["spec"]


def test_a_patch_with_an_unknown_field_is_checked_too(served: Served) -> None:
    served.kubectl("apply", "-f", "-", stdin=POD)
    changed = POD.replace("  labels: {app: web}\n", "  labels: {app: web}\n  colour: red\n")
    done = served.kubectl("apply", "-f", "-", stdin=changed, check=False)
    assert done.returncode != 0
    assert 'strict decoding error: unknown field "metadata.colour"' in done.stderr
    done = served.kubectl("patch", "pod", "web", "--type=merge", "-p",
                          '{"spec": {"bogus": 1}}', check=False)
    assert 'unknown field "spec.bogus"' in done.stderr  # kubectl patch sends Strict


def test_known_fields_of_every_example_pass_strict(served: Served) -> None:
    for manifest in sorted((PROJECT_ROOT / "examples").glob("*.yaml")):
        served.kubectl("apply", "--dry-run=server", "-f", str(manifest))


def post(served: Served, path: str, body: bytes, query: str) -> tuple[int, dict, list[str]]:
    context = ssl.create_default_context(cafile=str(served.handle.credentials.ca_cert))
    request = urllib.request.Request(f"{served.handle.url}{path}?{query}", data=body,
                                     method="POST", headers={
                                         "Content-Type": "application/json",
                                         "Authorization":
                                             f"Bearer {served.handle.credentials.token}"})
    try:
        with urllib.request.urlopen(request, context=context) as answer:
            return answer.status, json.loads(answer.read()), answer.headers.get_all(
                "Warning") or []
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), []


DUPLICATE = (b'{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", '
             b'"metadata": {"name": "a", "name": "b"}, "spec": {"holderIdentity": "x"}}')


@pytest.mark.parametrize(("query", "code", "warnings"), [
    ("fieldValidation=Strict", 400, []),
    ("", 201, ['299 - "duplicate field \\"metadata.name\\""']),  # Warn is the default
    ("fieldValidation=Ignore", 201, []),
])
def test_duplicate_fields(served: Served, query: str, code: int, warnings: list[str]) -> None:
    status, body, sent = post(served, "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                              DUPLICATE, query)
    assert (status, sent) == (code, warnings)
    if code == 400:
        assert body["reason"] == "BadRequest"
        assert body["message"] == 'strict decoding error: duplicate field "metadata.name"'
    else:
        assert body["metadata"]["name"] == "b"  # the last one wins


def test_an_unknown_directive_is_a_bad_request(served: Served) -> None:
    status, body, _ = post(served, "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                           DUPLICATE, "fieldValidation=Loose")
    assert (status, body["reason"]) == (400, "BadRequest")


def test_explain_shows_the_fields_validation_knows(served: Served) -> None:
    out = served.kubectl("explain", "pod.spec.containers").stdout
    assert "FIELDS:" in out
    assert "volumeMounts\t<[]VolumeMount>" in out and "image\t<string>" in out
