"""Who the bearer token is and what it may do: ``authentication.k8s.io/v1``
SelfSubjectReview (``kubectl auth whoami``) and ``authorization.k8s.io/v1``
SelfSubjectAccessReview / SelfSubjectRulesReview (``kubectl auth can-i [--list]``).

The server has one bearer token and it is a cluster admin (as kubeadm's admin.conf user
in ``system:masters``): every access review is allowed and the rules are ``*``.
"""

from __future__ import annotations

from typing import Any

from kubelet_sim.api.errors import BadRequest, Invalid
from kubelet_sim.apiserver.http.resources import (
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    ApiResource,
)

USERNAME = "kubernetes-admin"
GROUPS = ("system:masters", "system:authenticated")
REASON = "the bearer token of this API server is a cluster admin (system:masters)"


def _echo(r: ApiResource, body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    kind, api_version = body.get("kind", r.kind), body.get("apiVersion", r.group_version)
    if kind != r.kind or api_version != r.group_version:
        raise BadRequest(f"the API version in the data ({api_version}) and kind ({kind}) do "
                         f"not match {r.group_version} {r.kind}")
    meta = dict(body.get("metadata") or {})
    meta.setdefault("creationTimestamp", None)
    out: dict[str, Any] = {"kind": r.kind, "apiVersion": r.group_version, "metadata": meta}
    if "spec" in body:
        out["spec"] = body["spec"]
    return out


def review(r: ApiResource, body: Any) -> dict[str, Any]:
    """The answered review (what POST returns, 201)."""
    out = _echo(r, body)
    if r == SELF_SUBJECT_REVIEWS:
        out["status"] = {"userInfo": {"username": USERNAME, "groups": list(GROUPS)}}
    elif r == SELF_SUBJECT_ACCESS_REVIEWS:
        spec = out.get("spec") or {}
        if not spec.get("resourceAttributes") and not spec.get("nonResourceAttributes"):
            raise Invalid("spec.resourceAttributes",
                          "Invalid value: null: exactly one of nonResourceAttributes or "
                          "resourceAttributes must be specified")
        out["status"] = {"allowed": True, "reason": REASON}
    elif r == SELF_SUBJECT_RULES_REVIEWS:
        out["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False}
    return out
