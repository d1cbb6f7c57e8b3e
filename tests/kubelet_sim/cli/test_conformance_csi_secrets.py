"""The token and Secret cases of the CSI conformance suite fail against a cluster or a
driver broken the way each case checks (in-process, one focused run per breakage): a CO
that hands the driver no Secret data (and goes on when a Secret is missing), a kubelet
that leaves the tokens out of volume_context, a driver whose NodePublishVolume fails when
called again; and a token the API server did not sign is refused."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from kubelet_sim.api import builders
from kubelet_sim.apiserver.http.token_signer import TokenSigner
from kubelet_sim.client.secrets import ApiSecrets
from kubelet_sim.conformance.csi import run_csi_suite
from kubelet_sim.conformance.csi_cases_secrets import check_tokens
from kubelet_sim.conformance.csi_run import CsiTarget
from kubelet_sim.conformance.report import FAILED, Report
from kubelet_sim.kubelet import kubelet as kubelet_module
from kubelet_sim.kubelet.service_account_tokens import TOKENS_KEY

TOKENS = {"requiresRepublish": True, "tokenRequests": [{"audience": "vault.example.com"}]}


def failures(report: Report) -> dict[str, str]:
    return {r.case: r.detail for r in report.results if r.outcome == FAILED}


async def test_the_secret_cases_fail_when_the_co_hands_over_no_secret_data(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_data(self: ApiSecrets, ref: Mapping[str, Any] | None) -> dict[str, str]:
        return {}  # a missing Secret too: the call goes on without it

    monkeypatch.setattr(ApiSecrets, "get", no_data)
    report = Report(focus="secrets/")

    await run_csi_suite(CsiTarget(csidriver={}), report)

    found = failures(report)
    assert set(found) == {"secrets/every-operation", "secrets/missing-secret"}, report.results
    assert found["secrets/every-operation"].startswith(
        "Controller/CreateVolume received secrets [] instead of the data of Secret ")
    assert found["secrets/missing-secret"] == \
        "CreateVolume was called while its Secret was missing"


async def test_the_token_case_fails_when_the_kubelet_leaves_the_tokens_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def no_tokens(*args: object) -> dict[str, str]:
        return {}

    monkeypatch.setattr(kubelet_module, "token_attributes", no_tokens)
    report = Report(focus="token-requests")

    await run_csi_suite(CsiTarget(csidriver=TOKENS), report)

    found = failures(report)
    assert list(found) == ["csidriver/token-requests"], report.results
    assert found["csidriver/token-requests"].startswith(
        f"no {TOKENS_KEY} in NodePublishVolume's volume_context [")


async def test_the_republish_case_fails_when_the_driver_cannot_publish_again(
    tmp_path: Path,
) -> None:
    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps([{"method": "NodePublishVolume", "after": 1,
                                   "code": "INTERNAL", "message": "published once only"}]))
    report = Report(focus="requires-republish")

    await run_csi_suite(CsiTarget(csidriver=TOKENS, driver_args=("--faults", str(faults))),
                        report)

    assert failures(report) == {"csidriver/requires-republish":
                                "the republish answered INTERNAL: published once only"}


def test_a_token_not_signed_by_the_api_server_is_refused() -> None:
    pod = builders.pod("holder", "ns")
    pod.metadata.uid = "uid-1"
    claims = {"aud": ["vault.example.com"], "iss": "https://kubernetes.default.svc.cluster.local",
              "sub": "system:serviceaccount:ns:default", "iat": 0, "exp": 4102444800,
              "kubernetes.io": {"namespace": "ns", "pod": {"name": "holder", "uid": "uid-1"},
                                "serviceaccount": {"name": "default"}}}
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    context = {TOKENS_KEY: json.dumps({"vault.example.com": {
        "token": jwt.encode(claims, forger, algorithm="RS256"),
        "expirationTimestamp": "2100-01-01T00:00:00Z"}})}

    with pytest.raises(AssertionError, match="is not one the API server issued for it: "
                       "Signature verification failed"):
        check_tokens(context, [{"audience": "vault.example.com"}], pod, TokenSigner().jwks())
