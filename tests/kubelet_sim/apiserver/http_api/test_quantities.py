"""Quantities over the API as kube-apiserver keeps them: digits and a scale, never the
expanded value, so a huge exponent costs what its text costs."""

from __future__ import annotations

import pytest

from tests.kubelet_sim.apiserver.http_api.conftest import Served, needs_kubectl

CLAIM = """apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: {name}}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: "{size}"}}}}
"""


@needs_kubectl
@pytest.mark.parametrize(("size", "stored"), [
    ("1e10000000", "10e9999999"),
    ("1e5000", "100e4998"),
    ("1" * 5000, "1" * 5000),
])
def test_a_claim_with_a_huge_storage_request_is_stored_in_canonical_form(
        served: Served, size: str, stored: str) -> None:
    served.kubectl("apply", "-f", "-", stdin=CLAIM.format(name="big", size=size))
    claim = served.kubectl_json("get", "pvc", "big")
    assert claim["spec"]["resources"]["requests"]["storage"] == stored
    served.kubectl("get", "--raw", "/healthz")


@needs_kubectl
def test_a_malformed_storage_request_is_refused_as_it_does_not_decode(served: Served) -> None:
    done = served.kubectl("apply", "-f", "-", check=False,
                          stdin=CLAIM.format(name="bad", size="lots"))
    assert done.returncode != 0
    # kube-apiserver's words: a Quantity that does not parse fails the decoding (400)
    assert "Error from server (BadRequest)" in done.stderr
    assert ("PersistentVolumeClaim in version \"v1\" cannot be handled as a "
            "PersistentVolumeClaim: quantities must match the regular expression") in done.stderr
